"""Model Registry probe for the tests: MLflow's own Python client registers versions, moves aliases and
reads them back, on any tracking URI MLflow accepts (an mlruns folder with MLFLOW_ALLOW_FILE_STORE=true,
a database URI, or an http:// tracking server; the registry URI is the tracking URI, MLflow's default).

Reads one JSON command on stdin, prints one JSON answer on stdout ({"error": ...} on failure):
  {"tracking_uri", "action": "register", "name", "run_id"}       -> {"version": n}  (source runs:/<run_id>/model)
  {"tracking_uri", "action": "set_alias", "name", "alias", "version"} -> {}
  {"tracking_uri", "action": "get_by_alias", "name", "alias"}    -> {"version", "run_id", "source", "status", "aliases"}
  {"tracking_uri", "action": "versions", "name"}                 -> {"versions": [{"version", "run_id", "source"}], "aliases": {alias: version}}
"""

import json
import sys
import traceback


def main():
    command = json.load(sys.stdin)
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=command["tracking_uri"], registry_uri=command["tracking_uri"])
    action = command["action"]
    name = command["name"]
    if action == "register":
        try:
            client.create_registered_model(name)
        except Exception as error:  # noqa: BLE001 - an existing model is fine, anything else is re-raised
            if "RESOURCE_ALREADY_EXISTS" not in str(error) and "already exists" not in str(error):
                raise
        version = client.create_model_version(
            name, f"runs:/{command['run_id']}/model", run_id=command["run_id"]
        )
        return {"version": int(version.version)}
    if action == "set_alias":
        client.set_registered_model_alias(name, command["alias"], str(command["version"]))
        return {}
    if action == "get_by_alias":
        version = client.get_model_version_by_alias(name, command["alias"])
        return {
            "version": int(version.version),
            "run_id": version.run_id,
            "source": version.source,
            "status": version.status,
            "aliases": list(version.aliases),
        }
    if action == "versions":
        versions = client.search_model_versions(f"name='{name}'")
        model = client.get_registered_model(name)
        return {
            "versions": sorted(
                (
                    {"version": int(v.version), "run_id": v.run_id, "source": v.source}
                    for v in versions
                ),
                key=lambda v: v["version"],
            ),
            "aliases": {alias: int(version) for alias, version in model.aliases.items()},
        }
    raise ValueError(f"unknown action {action!r}")


if __name__ == "__main__":
    try:
        answer = main()
    except Exception as error:  # noqa: BLE001 - reported to the test as JSON
        answer = {"error": f"{type(error).__name__}: {error}\n{traceback.format_exc()}"}
    print(json.dumps(answer))

"""Interop probe for the tracking-store tests: MLflow's own Python client reads (and writes) runs.

Reads one JSON command on stdin, prints one JSON answer on stdout. Works with any tracking URI MLflow
accepts (a `file://` mlruns folder, with MLFLOW_ALLOW_FILE_STORE=true on MLflow >= 3.13, or an
`http://` tracking server). Non-finite floats are printed as the strings "NaN", "Infinity",
"-Infinity" (MLflow's REST spelling), since JSON has no literal for them; the same strings are
accepted for metric values in `write`.

Command fields:
  command          "read" | "write" | "outputs" | "write_outputs"
  tracking_uri     where MLflow should look
  experiment_name  the experiment to read (created by `write` if missing)
  order_by         passed to mlflow.search_runs, e.g. ["metrics.f1 DESC"]
  history_keys     metric keys whose full history is returned per run
  artifact_dirs    run-relative directories listed per run ("" = root)
  download         optional: run-relative artifact files whose bytes are returned (base64) per run
  runs             for "write": [{name, params, metrics: [{key, value, step}], tags, artifacts: {path: text}}]

Answer: {experiment_id, order: [run ids in search_runs order], runs: {run_id: run}, created?: [run ids]}
For "outputs" (fields tracking_uri, experiment_id, run_id): what MLflow 3 shows of the run's dataset
inputs and logged models, {dataset_inputs: [...], source_uris: [...], outputs: [model ids],
models: [search_logged_models(... source_run_id ...)], logged_model: get_logged_model(first),
model_files: [...], flavors: {...}} (see describe_outputs). For "write_outputs" (tracking_uri,
experiment_name, data_uri): a run with a dataset input and a logged model, see write_outputs.

where run = {run_name, status, start_time, end_time, experiment_id, metrics, params, tags,
history: {key: [{key, value, timestamp, step}]}, artifacts: {dir: [{path, is_dir, file_size}]},
downloads: {path: base64}}; on failure {"error": "..."}.
"""

import base64
import contextlib
import json
import math
import os
import sys
import tempfile
import traceback


def to_json_float(value):
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def from_json_float(value):
    if isinstance(value, str):
        return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(value, value))
    return float(value)


def describe_run(client, run_id, command):
    run = client.get_run(run_id)
    history = {}
    for key in command.get("history_keys", []):
        history[key] = [
            {"key": m.key, "value": to_json_float(m.value), "timestamp": m.timestamp, "step": m.step}
            for m in client.get_metric_history(run_id, key)
        ]
    artifacts = {}
    for directory in command.get("artifact_dirs", []):
        artifacts[directory] = [
            {"path": f.path, "is_dir": f.is_dir, "file_size": None if f.is_dir else f.file_size}
            for f in client.list_artifacts(run_id, directory or None)
        ]
    downloads = {}
    if command.get("download"):
        with tempfile.TemporaryDirectory() as target:
            for path in command["download"]:
                local = client.download_artifacts(run_id, path, target)
                with open(local, "rb") as handle:
                    downloads[path] = base64.b64encode(handle.read()).decode("ascii")
    return {
        "run_name": run.info.run_name,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "end_time": run.info.end_time,
        "experiment_id": run.info.experiment_id,
        "metrics": {k: to_json_float(v) for k, v in run.data.metrics.items()},
        "params": dict(run.data.params),
        "tags": dict(run.data.tags),
        "history": history,
        "artifacts": artifacts,
        "downloads": downloads,
    }


def write_runs(mlflow, specs):
    created = []
    for spec in specs:
        with mlflow.start_run(run_name=spec["name"]) as run:
            if spec.get("params"):
                mlflow.log_params(spec["params"])
            for point in spec.get("metrics", []):
                mlflow.log_metric(point["key"], from_json_float(point["value"]), step=point.get("step", 0))
            for key, value in spec.get("tags", {}).items():
                mlflow.set_tag(key, value)
            with tempfile.TemporaryDirectory() as source:
                for path, text in spec.get("artifacts", {}).items():
                    local = os.path.join(source, *path.split("/"))
                    os.makedirs(os.path.dirname(local), exist_ok=True)
                    with open(local, "w", encoding="utf-8") as handle:
                        handle.write(text)
                    directory = os.path.dirname(path)
                    mlflow.log_artifact(local, artifact_path=directory or None)
            created.append(run.info.run_id)
    return created


def describe_model(model):
    return {
        "model_id": model.model_id,
        "name": model.name,
        "status": str(model.status),
        "experiment_id": model.experiment_id,
        "source_run_id": model.source_run_id,
        "artifact_location": model.artifact_location,
        "params": dict(model.params),
        "metrics": {m.key: to_json_float(m.value) for m in (model.metrics or [])},
    }


def describe_outputs(mlflow, command):
    """A run's dataset inputs and logged models as MLflow 3's client sees them, with the model's files
    downloaded through MLflow (models:/ URI) and its MLmodel loaded by mlflow.models.Model."""
    from mlflow.models import Model

    run_id = command["run_id"]
    run = mlflow.get_run(run_id)
    dataset_inputs = [
        {
            "name": d.dataset.name,
            "digest": d.dataset.digest,
            "source_type": d.dataset.source_type,
            "source": d.dataset.source,
            "schema": d.dataset.schema,
            "profile": d.dataset.profile,
            "tags": {t.key: t.value for t in d.tags},
        }
        for d in run.inputs.dataset_inputs
    ]
    # MLflow parses the source back into a DatasetSource object (LocalArtifactDatasetSource for "local").
    source_uris = [mlflow.data.get_source(d.dataset).uri for d in run.inputs.dataset_inputs]
    models = mlflow.search_logged_models(
        experiment_ids=[command["experiment_id"]],
        filter_string=f"source_run_id = '{run_id}'",
        output_format="list",
    )
    answer = {
        "dataset_inputs": dataset_inputs,
        "source_uris": source_uris,
        "outputs": [o.model_id for o in (run.outputs.model_outputs if run.outputs else [])],
        "models": [describe_model(m) for m in models],
    }
    if models:
        model_id = models[0].model_id
        answer["logged_model"] = describe_model(mlflow.get_logged_model(model_id))
        with tempfile.TemporaryDirectory() as target:
            local = mlflow.artifacts.download_artifacts(artifact_uri=f"models:/{model_id}", dst_path=target)
            # download_artifacts adds `registered_model_meta` to the local copy of a models:/ URI.
            answer["model_files"] = sorted(f for f in os.listdir(local) if f != "registered_model_meta")
            loaded = Model.load(local)
            answer["flavors"] = loaded.flavors
            answer["mlmodel_model_id"] = loaded.model_id
            answer["mlmodel_run_id"] = loaded.run_id
    return answer


def write_outputs(mlflow, command):
    """Python logs what Tagger must read: a run with a dataset input (MLflow's own
    LocalArtifactDatasetSource), a READY logged model with params, a file and a linked metric, and the
    run output. Answer: {experiment_id, run_id, model_id}."""
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import LoggedModelOutput, LoggedModelStatus
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    experiment = mlflow.set_experiment(command["experiment_name"])
    source = mlflow.data.get_source(
        mlflow.entities.Dataset(name="x", digest="x", source_type="local", source=json.dumps({"uri": command["data_uri"]}))
    )
    dataset = MetaDataset(source=source, name="python.csv", digest="cafe0123")
    with mlflow.start_run() as run:
        mlflow.log_input(dataset, context="training")
        model = client.create_logged_model(
            experiment_id=experiment.experiment_id,
            name="model",
            source_run_id=run.info.run_id,
            params={"lr": "0.1"},
        )
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "MLmodel")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write("flavors: {}\n")
            client.log_model_artifact(model.model_id, path)
        mlflow.log_metric("f1", 0.75, model_id=model.model_id)
        client.log_outputs(run.info.run_id, [LoggedModelOutput(model.model_id, 0)])
        client.finalize_logged_model(model.model_id, LoggedModelStatus.READY)
    return {"experiment_id": experiment.experiment_id, "run_id": run.info.run_id, "model_id": model.model_id}


def main():
    command = json.load(sys.stdin)
    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(command["tracking_uri"])
    if command["command"] in ("outputs", "write_outputs"):
        handler = describe_outputs if command["command"] == "outputs" else write_outputs
        print(json.dumps(handler(mlflow, command)), file=sys.__stdout__)
        return
    name = command["experiment_name"]
    answer = {}
    if command["command"] == "write":
        mlflow.set_experiment(name)
        answer["created"] = write_runs(mlflow, command.get("runs", []))
    elif command["command"] != "read":
        raise ValueError(f"unknown command {command['command']!r}")

    client = MlflowClient()
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        raise ValueError(f"experiment {name!r} not found")
    frame = mlflow.search_runs(experiment_names=[name], order_by=command.get("order_by") or None)
    order = list(frame["run_id"]) if len(frame) else []
    answer["experiment_id"] = experiment.experiment_id
    answer["order"] = order
    answer["runs"] = {run_id: describe_run(client, run_id, command) for run_id in order}
    print(json.dumps(answer), file=sys.__stdout__)


def answer_as_json(main):
    """Runs `main` with stdout kept for its one JSON answer (MLflow prints e.g. "View run ... at: <url>"
    for tracking servers; that goes to stderr); a failure becomes `{"error": <traceback>}`."""
    real_stdout = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            main()
    except Exception:
        print(json.dumps({"error": traceback.format_exc()}), file=real_stdout)


if __name__ == "__main__":
    answer_as_json(main)

"""Logs runs with Python MLflow whose artifacts are folders written by `tagger train` (end-to-end tests).

Each run is logged the way a Python user would: `mlflow.start_run` in the experiment, `log_params`,
`log_metrics` (the metric values are chosen by the caller, e.g. an f1 that decides which run is best)
and `log_artifacts` of a folder on disk, typically a Tagger run's `artifacts/` directory in a local
mlruns store (`args.json`, `performance.json`, `model/...`). Works against any tracking URI MLflow
accepts; the tests use an `http://` tracking server with proxied artifacts.

Reads one JSON command on stdin:
  tracking_uri     where MLflow should log
  experiment_name  created when missing
  runs             [{name, params: {key: str}, metrics: {key: number | "NaN" | "Infinity" | "-Infinity"},
                     artifacts_dir: local folder whose content becomes the run's artifact root}]

Prints one JSON answer on stdout: {"created": [run ids, in the order of `runs`]}, or {"error": "..."}.
"""

import json
import os
import sys

from mlflow_interop import answer_as_json, from_json_float


def main():
    command = json.load(sys.stdin)
    import mlflow

    mlflow.set_tracking_uri(command["tracking_uri"])
    mlflow.set_experiment(command["experiment_name"])
    created = []
    for spec in command["runs"]:
        artifacts_dir = spec["artifacts_dir"]
        if not os.path.isdir(artifacts_dir):
            raise ValueError(f"artifacts_dir {artifacts_dir!r} is not a directory")
        with mlflow.start_run(run_name=spec["name"]) as run:
            if spec.get("params"):
                mlflow.log_params(spec["params"])
            if spec.get("metrics"):
                mlflow.log_metrics({key: from_json_float(value) for key, value in spec["metrics"].items()})
            mlflow.log_artifacts(artifacts_dir)
            created.append(run.info.run_id)
    print(json.dumps({"created": created}), file=sys.__stdout__)


if __name__ == "__main__":
    answer_as_json(main)

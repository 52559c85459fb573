#!/usr/bin/env bash
# Creates .venv/ with the Python tools the tests and benchmarks use (a real MLflow server and client,
# scikit-learn for parity, schemathesis, the protocol clients tritonclient and huggingface_hub). The
# service itself never needs Python.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r python/requirements.txt
.venv/bin/python -c "import mlflow, sklearn, tritonclient.http, huggingface_hub; print('python tools: mlflow', mlflow.__version__, '/ scikit-learn', sklearn.__version__, '/ huggingface_hub', huggingface_hub.__version__)"

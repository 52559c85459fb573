"""Logs the scikit-learn equivalent of Tagger's model for the MLflow scoring-server benchmark (bench/mlflow-scoring.ts).

Usage: python mlflow_scoring_model.py IN.json OUT.json
IN:  {"tracking_uri": str, "train": [{"text", "tag"}], "args": TrainingArgs, "stopwords": [str], "seed": int}
OUT: {"model_uri": str, "run_id": str}
The pipeline is Tagger's: the same clean-up as src/model/preprocess.ts (see sklearn_train.py), then
TfidfVectorizer(analyzer, ngram_range=(2, ngram_max_range), lowercase=False) and SGDClassifier(log_loss),
logged with mlflow.sklearn.log_model into a file store; pyfunc predicts probabilities (predict_proba), as
Tagger's /predict answers probabilities for every tag. The clean-up is a module-level function of this
script, so cloudpickle stores it by value and the scoring server needs nothing from this repository.
"""

import json
import re
import sys

import mlflow
import mlflow.sklearn
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import SGDClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

URL_RE = re.compile(r"\b(?:https?://|www\.)\S*", re.IGNORECASE)
NON_ALNUM_RE = re.compile(r"[^A-Za-z0-9]+")
STOP_RE = None
LOWER = True


def clean_column(frame):
    """Takes the pyfunc input (a DataFrame with a `text` column, or a list of texts) to cleaned texts."""
    texts = frame["text"] if hasattr(frame, "columns") else frame
    out = []
    for text in texts:
        if LOWER:
            text = text.lower()
        text = URL_RE.sub(" ", text)
        text = STOP_RE.sub("", text)
        out.append(NON_ALNUM_RE.sub(" ", text).strip())
    return out


def main() -> None:
    global STOP_RE, LOWER
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    args = spec["args"]
    if args["stem"]:
        raise SystemExit("mlflow_scoring_model.py: stem=true needs a Porter stemmer, which the venv lacks")
    LOWER = bool(args["lower"])
    STOP_RE = re.compile(r"\b(" + "|".join(spec["stopwords"]) + r")\b\s*")
    frame = pd.DataFrame({"text": [r["text"] for r in spec["train"]]})
    tags = [r["tag"] for r in spec["train"]]
    pipeline = Pipeline(
        [
            ("clean", FunctionTransformer(clean_column)),
            (
                "tfidf",
                TfidfVectorizer(analyzer=args["analyzer"], ngram_range=(2, args["ngram_max_range"]), lowercase=False),
            ),
            (
                "sgd",
                SGDClassifier(
                    loss="log_loss",
                    penalty="l2",
                    alpha=args["alpha"],
                    learning_rate=args.get("lr_schedule", "invscaling"),
                    eta0=args["learning_rate"],
                    power_t=args["power_t"],
                    max_iter=args["num_epochs"],
                    tol=None,
                    random_state=spec["seed"],
                ),
            ),
        ]
    )
    pipeline.fit(frame, tags)
    mlflow.set_tracking_uri(spec["tracking_uri"])
    mlflow.set_experiment("bench-scoring")
    with mlflow.start_run() as run:
        info = mlflow.sklearn.log_model(
            pipeline,
            name="model",
            pyfunc_predict_fn="predict_proba",
            input_example=frame.head(2),
            # skops (the default) refuses the clean-up function; cloudpickle stores it by value.
            serialization_format="cloudpickle",
        )
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"model_uri": info.model_uri, "run_id": run.info.run_id}, f)


if __name__ == "__main__":
    main()

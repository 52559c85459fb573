"""Logs the scikit-learn equivalent of Tagger's model for the MLflow scoring-server benchmark (bench/mlflow-scoring.ts).

Usage: python mlflow_scoring_model.py IN.json OUT.json
IN:  {"tracking_uri": str, "train": [{"text", "tag"}], "args": TrainingArgs, "stopwords": [str], "seed": int}
OUT: {"model_uri": str, "run_id": str}
The pipeline is Tagger's: the same clean-up as src/model/preprocess.ts (see sklearn_train.py), then
TfidfVectorizer(analyzer, ngram_range=(2, ngram_max_range), lowercase=False) and the classifier of the args:
SGDClassifier(log_loss) for `classifier: ovr`, or (the default soft vote, and any member classifier)
sklearn_linear.py's SoftVote, scikit-learn's same members averaged as Tagger's vote,
logged with mlflow.sklearn.log_model into a file store; pyfunc predicts probabilities (predict_proba), as
Tagger's /predict answers probabilities for every tag. The pipeline is built by sklearn_train.py's
make_cleaner/make_vectorizer/make_classifier (one definition for both comparisons); those modules are
registered to be pickled by value, so the scoring server needs nothing from this repository.
"""

import json
import sys

import cloudpickle
import mlflow
import mlflow.sklearn
import pandas as pd
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
import sklearn_linear
import sklearn_train
from sklearn_linear import SoftVote
from sklearn_train import make_classifier, make_cleaner, make_vectorizer

cloudpickle.register_pickle_by_value(sklearn_train)
cloudpickle.register_pickle_by_value(sklearn_linear)

CLEAN = None


def clean_column(frame):
    """Takes the pyfunc input (a DataFrame with a `text` column, or a list of texts) to cleaned texts."""
    texts = frame["text"] if hasattr(frame, "columns") else frame
    return [CLEAN(text) for text in texts]


def main() -> None:
    global CLEAN
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    args = spec["args"]
    # The same preprocessing, vectorizer and classifier as the scikit-learn comparison of the model bench.
    CLEAN = make_cleaner(spec["stopwords"], args["lower"], args["stem"])
    frame = pd.DataFrame({"text": [r["text"] for r in spec["train"]]})
    tags = [r["tag"] for r in spec["train"]]
    pipeline = Pipeline(
        [
            ("clean", FunctionTransformer(clean_column)),
            ("tfidf", make_vectorizer(args)),
            (
                "classifier",
                make_classifier(args, spec["seed"])
                if args.get("classifier", "ovr") in ("ovr", "softmax")
                else SoftVote(args, spec["seed"]),
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

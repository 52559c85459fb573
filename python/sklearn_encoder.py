"""scikit-learn with the same sentence embeddings as Tagger's encoder model kind, for bench/encoder.ts.

Usage: python sklearn_encoder.py IN.json OUT.json
IN:  {"args": TrainingArgs, "stopwords": [str], "embeddings": {text: [float]},
      "tasks": [{"train": [{"text", "tag"}], "validation": [...], "test": [...], "seed": int}]}
OUT: {"f1": [float per task], "train_seconds": [float per task]}

Each task: sklearn_train.py's preprocessing, vectorizer (the TF-IDF union) and SGDClassifier, with the
embedding block stacked after the TF-IDF columns as Tagger stacks it (src/model/embeddings.ts): each embedding
L2-normalised when `encoder_normalize`, times `encoder_weight`. Oversampling, `refit` and plain argmax as in
sklearn_train.py. The embeddings are Tagger's own (computed once by src/encoder and passed in), so the two
sides differ only in the classifier's implementation and shuffle order.
"""

import json
import sys
import time

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import precision_recall_fscore_support
from sklearn_train import make_classifier, make_cleaner, make_vectorizer


def block(rows, embeddings, args):
    e = np.array([embeddings[r["text"]] for r in rows], dtype=np.float64)
    if args.get("encoder_normalize", True):
        norms = np.linalg.norm(e, axis=1, keepdims=True)
        e = np.divide(e, norms, out=np.zeros_like(e), where=norms > 0)
    return sp.csr_matrix(e * float(args.get("encoder_weight", 1)))


def fit(args, stopwords, embeddings, rows, seed):
    clean = make_cleaner(stopwords, args["lower"], args["stem"])
    tags = [r["tag"] for r in rows]
    counts = {t: tags.count(t) for t in set(tags)}
    accepted = args.get("accepted_tags")
    classes = {t for t, c in counts.items() if c >= args["min_freq"] and (accepted is None or t in accepted)}
    classes.add("other")
    y = np.array([t if t in classes else "other" for t in tags])
    vectorizer = make_vectorizer(args)
    x = sp.hstack([vectorizer.fit_transform([clean(r["text"]) for r in rows]), block(rows, embeddings, args)]).tocsr()
    rng = np.random.default_rng(seed)
    if args.get("oversample", True):
        largest = max(int((y == c).sum()) for c in classes)
        index = [np.arange(len(y))]
        for c in sorted(classes):
            members = np.flatnonzero(y == c)
            if 0 < len(members) < largest:
                index.append(rng.choice(members, largest - len(members)))
        index = np.concatenate(index)
        x, y = x[index], y[index]
    model = make_classifier(args, seed)
    model.fit(x, y)
    return clean, vectorizer, classes, model


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    args, stopwords, embeddings = spec["args"], spec["stopwords"], spec["embeddings"]
    f1s, seconds = [], []
    for task in spec["tasks"]:
        start = time.perf_counter()
        fitted = fit(args, stopwords, embeddings, task["train"], task["seed"])
        if args.get("refit", False) and task["validation"]:
            fitted = fit(args, stopwords, embeddings, task["train"] + task["validation"], task["seed"])
        clean, vectorizer, classes, model = fitted
        seconds.append(time.perf_counter() - start)
        test = task["test"]
        x = sp.hstack([vectorizer.transform([clean(r["text"]) for r in test]), block(test, embeddings, args)]).tocsr()
        y = [r["tag"] if r["tag"] in classes else "other" for r in test]
        _, _, f1, _ = precision_recall_fscore_support(y, model.predict(x), average="weighted", zero_division=0)
        f1s.append(float(f1))
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"f1": f1s, "train_seconds": seconds}, f)


if __name__ == "__main__":
    main()

"""The Python peers of the `real` benchmark (bench/real.ts, issue 39): what a user would run instead of
`tagger train`, one training per process.

    python real_reference.py linearsvc|logreg|fasttext <train.csv> <test.csv> <out.json>
        --text-column C --tag-column C | --tags-column C  [--min-freq N] [--seed N]

`linearsvc` / `logreg`: scikit-learn's TfidfVectorizer as the issue ran it (a FeatureUnion of word 1-2 and
char_wb 2-4 n-grams, sublinear tf, min_df 2, lower-cased) and LinearSVC (C 1) or LogisticRegression (C 10,
saga, at most 30 epochs: bounded, as its full convergence took 6.8 GB and hours at 50,000 rows x 500 tags).
Several tags per text: OneVsRestClassifier of the same, a tag predicted where its score is positive (the
probability above 0.5), a row with none answered `other`. `fasttext`: fastText's supervised model (the
`fasttext` package: word bigrams, 25 epochs, learning rate 0.5, dim 50; softmax up to 100 tags, the
hierarchical softmax above, one-vs-all for several tags; 2,000,000 hash buckets from 20,000 rows, else
2^20; one thread), on lower-cased text with punctuation split off.

A tag with fewer than --min-freq rows in the training file (default 20, Tagger's min_freq) is folded into
`other` for every system alike, as Tagger folds it. Writes `out.json`: the predicted tag (or tags) of every
test row in order, the model's size in bytes as saved, and the CPU µs of one-text predictions; the caller
measures the process's CPU and peak memory (python/rusage.py) and scores the predictions itself, with one
function for every system.
"""
import csv
import json
import os
import pickle
import re
import resource
import sys
import tempfile
import time
from collections import Counter

OTHER = "other"


def option(name, default=None, kind=str):
    if name in sys.argv:
        return kind(sys.argv[sys.argv.index(name) + 1])
    return default


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def split_tags(cell):
    return sorted({t.strip() for t in re.split(r"[|,;]", cell) if t.strip()})


def read(path, text_column, tag_column, tags_column):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    def text_of(r):
        if text_column == "title+description":
            return f"{r['title']} {r['description']}"
        return r[text_column]
    texts = [text_of(r) for r in rows]
    if tags_column:
        return texts, [split_tags(r[tags_column]) for r in rows]
    return texts, [r[tag_column] for r in rows]


def fold(labels, multi, min_freq):
    """The tags kept (min_freq rows in the training file) and each row's labels with the rest as `other`."""
    counts = Counter(t for tags in labels for t in (tags if multi else [tags]))
    kept = {t for t, n in counts.items() if n >= min_freq}
    if multi:
        return kept, [sorted({t for t in tags if t in kept}) or [OTHER] for tags in labels]
    return kept, [t if t in kept else OTHER for t in labels]


def predict_us(predict_one, texts):
    sample = texts[: min(len(texts), 1000)]
    for t in sample[:50]:
        predict_one(t)
    started = cpu()
    for t in sample:
        predict_one(t)
    return (cpu() - started) / max(1, len(sample)) * 1e6


def features():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion

    return FeatureUnion(
        [
            ("word", TfidfVectorizer(analyzer="word", ngram_range=(1, 2), sublinear_tf=True, min_df=2)),
            ("char", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True, min_df=2)),
        ]
    )


def sklearn_system(kind, train_x, train_y, test_x, multi, seed):
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.preprocessing import MultiLabelBinarizer
    from sklearn.svm import LinearSVC

    vectorizer = features()
    x = vectorizer.fit_transform(train_x)
    make = (
        (lambda: LinearSVC(C=1.0, random_state=seed))
        if kind == "linearsvc"
        else (lambda: LogisticRegression(C=10.0, solver="saga", max_iter=30, tol=1e-3, random_state=seed))
    )
    if multi:
        binarizer = MultiLabelBinarizer()
        y = binarizer.fit_transform(train_y)
        model = OneVsRestClassifier(make()).fit(x, y)
        classes = list(binarizer.classes_)

        def predict(texts):
            scores = model.decision_function(vectorizer.transform(texts))
            scores = np.atleast_2d(scores)
            return [[classes[k] for k in np.nonzero(row > 0)[0]] or [OTHER] for row in scores]

    else:
        model = make().fit(x, train_y)

        def predict(texts):
            return list(model.predict(vectorizer.transform(texts)))

    predicted = predict(test_x)
    size = len(pickle.dumps((vectorizer, model)))
    return predicted, size, predict_us(lambda t: predict([t]), test_x)


def fasttext_text(text):
    return re.sub(r"\s+", " ", re.sub(r"([.!?,'/()\[\]\"])", r" \1 ", text.lower().replace("\n", " "))).strip()


def fasttext_system(train_x, train_y, test_x, multi, seed, rows):
    import fasttext

    tags = {t for y in train_y for t in (y if multi else [y])}
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        for text, y in zip(train_x, train_y):
            labels = " ".join(f"__label__{t}" for t in (y if multi else [y]))
            f.write(f"{labels} {fasttext_text(text)}\n")
        path = f.name
    try:
        loss = "ova" if multi else ("hs" if len(tags) > 100 else "softmax")
        model = fasttext.train_supervised(
            input=path,
            epoch=25,
            lr=0.5,
            wordNgrams=2,
            dim=50,
            loss=loss,
            bucket=2_000_000 if rows >= 20_000 else 1 << 20,
            minn=0,
            maxn=0,
            thread=1,
            seed=seed,
            verbose=0,
        )
    finally:
        os.unlink(path)

    cleaned = [fasttext_text(t) for t in test_x]
    # A list of texts goes through FastText.predict's list path; one string trips over NumPy 2
    # (np.array(copy=False)) in 0.9.3, so single texts (the µs below) call the binding directly.
    if multi:
        labels, _ = model.predict(cleaned, k=-1, threshold=0.5)
        predicted = [sorted(l[len("__label__"):] for l in row) or [OTHER] for row in labels]
    else:
        labels, _ = model.predict(cleaned, k=1)
        predicted = [row[0][len("__label__"):] for row in labels]

    def predict_one(text):
        return model.f.predict(fasttext_text(text) + "\n", -1 if multi else 1, 0.5 if multi else 0.0, "strict")

    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        saved = f.name
    try:
        model.save_model(saved)
        size = os.path.getsize(saved)
    finally:
        os.unlink(saved)
    return predicted, size, predict_us(predict_one, test_x)


def main():
    kind, train_path, test_path, out_path = sys.argv[1:5]
    text_column = option("--text-column", "text")
    tag_column = option("--tag-column", "tag")
    tags_column = option("--tags-column")
    min_freq = option("--min-freq", 20, int)
    seed = option("--seed", 42, int)
    multi = tags_column is not None
    train_x, train_y = read(train_path, text_column, tag_column, tags_column)
    test_x, _ = read(test_path, text_column, tag_column, tags_column)
    _, train_y = fold(train_y, multi, min_freq)
    started = time.perf_counter()
    if kind in ("linearsvc", "logreg"):
        predicted, size, us = sklearn_system(kind, train_x, train_y, test_x, multi, seed)
    elif kind == "fasttext":
        predicted, size, us = fasttext_system(train_x, train_y, test_x, multi, seed, len(train_x))
    else:
        raise SystemExit(f"unknown system {kind!r}: linearsvc, logreg or fasttext")
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(
            {
                "predicted": predicted,
                "model_bytes": size,
                "predict_us": us,
                "wall_s": time.perf_counter() - started,
            },
            f,
        )


if __name__ == "__main__":
    main()

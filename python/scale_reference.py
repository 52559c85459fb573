"""The Python peers of the `scale` benchmark (bench/scale.ts, issue 31), one training per process.

    python scale_reference.py linearsvc <train.csv> <test.csv> <out.json> [--features union|word]
    python scale_reference.py fasttext  <train.csv> <test.csv> <out.json> --epoch N --lr X --word-ngrams N
                                        --dim N --loss softmax|hs|ova --bucket N --minn N --maxn N --threads N
                                        [--seed N]

`linearsvc`: scikit-learn's TfidfVectorizer on Tagger's default features (a FeatureUnion of char_wb 2..4 and
word 1..2 n-grams, each block weighted 1/sqrt(2), as src/model/text/features.ts) and LinearSVC (C 1, squared
hinge), one-vs-rest: what a Python peer of Tagger's default model would run. `fasttext`: fastText's
supervised model (the `fasttext` package from PyPI) with the given settings.

Writes `out.json`: the predicted tag of every test row (in order), the training's CPU seconds (this
process, user + system, after the data is read) and wall seconds, the process's peak RSS (MB), the model's
size in bytes as saved, and the predict time per text (one text per call, µs, CPU). The caller scores the
predictions itself, with the same function for every system.
"""
import csv
import json
import os
import pickle
import resource
import sys
import tempfile
import time


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [f"{r['title']} {r['description']}" for r in rows], [r["tag"] for r in rows]


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def option(name, default, kind=str):
    if name in sys.argv:
        return kind(sys.argv[sys.argv.index(name) + 1])
    return default


def predict_us(predict_one, texts):
    sample = texts[: min(len(texts), 2000)]
    for t in sample[:50]:
        predict_one(t)
    started = cpu()
    for t in sample:
        predict_one(t)
    return (cpu() - started) / len(sample) * 1e6


def linearsvc(train_x, train_y, test_x):
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion
    from sklearn.svm import LinearSVC

    features = option("--features", "union")
    if features == "union":
        vectorizer = FeatureUnion(
            [
                ("char_wb", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), lowercase=False)),
                ("word", TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=False)),
            ],
            transformer_weights={"char_wb": 2**-0.5, "word": 2**-0.5},
        )
    else:
        vectorizer = TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=False)
    cpu0, wall0 = cpu(), time.perf_counter()
    x = vectorizer.fit_transform(train_x)
    clf = LinearSVC(C=1.0)
    clf.fit(x, train_y)
    train_cpu, train_wall = cpu() - cpu0, time.perf_counter() - wall0
    predicted = list(clf.predict(vectorizer.transform(test_x)))
    size = len(pickle.dumps((vectorizer, clf), protocol=pickle.HIGHEST_PROTOCOL))
    one = lambda t: clf.predict(vectorizer.transform([t]))  # noqa: E731
    return predicted, train_cpu, train_wall, size, predict_us(one, test_x), {
        "n_features": int(x.shape[1]),
        "coef_nonzero": int(np.count_nonzero(clf.coef_)),
    }


def fasttext_model(train_x, train_y, test_x):
    import fasttext

    settings = {
        "epoch": option("--epoch", 5, int),
        "lr": option("--lr", 0.1, float),
        "wordNgrams": option("--word-ngrams", 1, int),
        "dim": option("--dim", 100, int),
        "loss": option("--loss", "softmax"),
        "bucket": option("--bucket", 2000000, int),
        "minn": option("--minn", 0, int),
        "maxn": option("--maxn", 0, int),
        "thread": option("--threads", 1, int),
        "seed": option("--seed", 0, int),
        "verbose": 0,
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.txt")
        with open(path, "w", encoding="utf-8") as f:
            for text, tag in zip(train_x, train_y):
                f.write(f"__label__{tag} {text}\n")
        cpu0, wall0 = cpu(), time.perf_counter()
        model = fasttext.train_supervised(input=path, **settings)
        train_cpu, train_wall = cpu() - cpu0, time.perf_counter() - wall0
        saved = os.path.join(tmp, "model.bin")
        model.save_model(saved)
        size = os.path.getsize(saved)
    labels, _ = model.predict(test_x, k=1)
    predicted = [label[0].removeprefix("__label__") for label in labels]
    # FastText.predict of one string trips over NumPy 2 (np.array(copy=False)) in 0.9.3: the binding directly.
    one = lambda t: model.f.predict(t + "\n", 1, 0.0, "strict")  # noqa: E731
    return predicted, train_cpu, train_wall, size, predict_us(one, test_x), {"settings": settings}


def main():
    kind, train_path, test_path, out_path = sys.argv[1:5]
    train_x, train_y = read(train_path)
    test_x, _ = read(test_path)
    run = {"linearsvc": linearsvc, "fasttext": fasttext_model}[kind]
    predicted, train_cpu, train_wall, size, us, extra = run(train_x, train_y, test_x)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(
            {
                "predicted": predicted,
                "train_cpu_s": train_cpu,
                "train_wall_s": train_wall,
                "peak_rss_mb": peak_rss_mb(),
                "model_bytes": size,
                "predict_us": us,
                **extra,
            },
            f,
        )


if __name__ == "__main__":
    main()

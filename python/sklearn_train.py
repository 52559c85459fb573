"""scikit-learn version of Tagger's training pipeline, timed for bench/model.ts.

Usage: python sklearn_train.py IN.json OUT.json
IN:  {"train": [{"text", "tag"}], "validation"?: [{"text", "tag"}], "test": [{"text", "tag"}], "args": TrainingArgs,
      "stopwords": [str], "seed": int}
OUT: {"train_seconds": float, "weighted_f1": float, "n_features": int}
Same preprocessing as src/model/preprocess.ts, TfidfVectorizer(analyzer, ngram_range=(ngram_min_range, max),
lowercase=False, sublinear_tf=<sublinear_tf>, min_df=<min_df>) (for analyzer `char_wb+word`: FeatureUnion of a char_wb
(ngram_min_range, max) and a word (1, 2) TfidfVectorizer with transformer_weights 1/sqrt(2) each, as
src/model/features.ts), random oversampling, SGDClassifier(loss=<loss>, class_weight=<class_weight>, penalty='l2',
learning_rate=<schedule>, max_iter=num_epochs, tol=None, average=<average>) and plain argmax (of decision_function);
`balanced` class weights are computed on the (oversampled) rows given to fit, as Tagger counts them; with `refit`, fitted again on train + validation (as Tagger). SGDClassifier is always one-vs-rest (Tagger's `classifier: ovr`);
for `classifier: softmax` it is the nearest sklearn equivalent, not the same algorithm.
With `ensemble` k > 1: k such models with different seeds (member 0: the seed), coef_ and intercept_ averaged.
Timed: preprocessing + vectorising + oversampling + fitting.
"""

import json
import re
import sys
import time

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import precision_recall_fscore_support
from sklearn.pipeline import FeatureUnion

URL_RE = re.compile(r"\b(?:https?://|www\.)\S*", re.IGNORECASE)
NON_ALNUM_RE = re.compile(r"[^A-Za-z0-9]+")


def make_cleaner(stopwords, lower, stem):
    if stem:
        raise SystemExit("sklearn_train.py: stem=true needs nltk's PorterStemmer, which the venv lacks")
    stop_re = re.compile(r"\b(" + "|".join(stopwords) + r")\b\s*")

    def clean(text):
        if lower:
            text = text.lower()
        text = URL_RE.sub(" ", text)
        text = stop_re.sub("", text)
        return NON_ALNUM_RE.sub(" ", text).strip()

    return clean


def make_vectorizer(args):
    sublinear = bool(args.get("sublinear_tf", False))
    min_df = int(args.get("min_df", 1))
    low = int(args.get("ngram_min_range", 2))
    if args["analyzer"] != "char_wb+word":
        return TfidfVectorizer(
            analyzer=args["analyzer"],
            ngram_range=(low, args["ngram_max_range"]),
            lowercase=False,
            sublinear_tf=sublinear,
            min_df=min_df,
        )
    chars = TfidfVectorizer(
        analyzer="char_wb", ngram_range=(low, args["ngram_max_range"]), lowercase=False, sublinear_tf=sublinear, min_df=min_df
    )
    words = TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=False, sublinear_tf=sublinear, min_df=min_df)
    weight = 1 / np.sqrt(2)
    return FeatureUnion([("char_wb", chars), ("word", words)], transformer_weights={"char_wb": weight, "word": weight})


def make_classifier(args, seed):
    """The SGDClassifier of Tagger's training arguments (one-vs-rest, Tagger's `loss` and `class_weight`)."""
    return SGDClassifier(
        loss=args.get("loss", "log_loss"),
        class_weight=args.get("class_weight"),
        penalty="l2",
        alpha=args["alpha"],
        learning_rate=args.get("lr_schedule", "invscaling"),
        eta0=args["learning_rate"],
        power_t=args["power_t"],
        max_iter=args["num_epochs"],
        tol=None,
        shuffle=args["shuffle"],
        random_state=seed,
        average=bool(args.get("average", False)),
    )


def fit(spec, rows):
    """Preprocessing, vectorizer, label normalisation, oversampling and SGD on `rows`: (clean, vectorizer, classes, model)."""
    args = spec["args"]
    clean = make_cleaner(spec["stopwords"], args["lower"], args["stem"])
    texts = [clean(r["text"]) for r in rows]
    tags = [r["tag"] for r in rows]
    counts = {t: tags.count(t) for t in set(tags)}
    accepted = args.get("accepted_tags")
    classes = {t for t, c in counts.items() if c >= args["min_freq"] and (accepted is None or t in accepted)}
    classes.add("other")
    y = np.array([t if t in classes else "other" for t in tags])
    vectorizer = make_vectorizer(args)
    x = vectorizer.fit_transform(texts)
    # A seed ensemble (`ensemble` k > 1, as in Tagger's trainTagger): k models that differ only in their seeded
    # randomness (oversampling draw, SGD shuffles), member 0 with the seed itself; their coef_ and intercept_
    # are averaged into one linear model. The member seeds are numpy's, not Tagger's.
    k = int(args.get("ensemble", 1))
    seeds = [spec["seed"]] + [int(s) for s in np.random.SeedSequence(spec["seed"]).generate_state(k - 1) % (2**31 - 1)]
    x_all, y_all = x, y
    models = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        x, y = x_all, y_all
        if args.get("oversample", True):
            largest = max(int((y == c).sum()) for c in classes)
            index = [np.arange(len(y))]
            for c in sorted(classes):
                members = np.flatnonzero(y == c)
                if 0 < len(members) < largest:
                    index.append(rng.choice(members, largest - len(members)))
            index = np.concatenate(index)
            x, y = x[index], y[index]
        member = make_classifier(args, seed)
        member.fit(x, y)
        models.append(member)
    model = models[0]
    if k > 1:
        model.coef_ = np.mean([m.coef_ for m in models], axis=0)
        model.intercept_ = np.mean([m.intercept_ for m in models], axis=0)
    return clean, vectorizer, classes, model


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    validation = spec.get("validation", [])
    start = time.perf_counter()
    fitted = fit(spec, spec["train"])
    # `refit` (as Tagger's trainTagger): the validated fit is followed by a fit on train + validation, which
    # is the model scored. Both fits are timed, as Tagger's are.
    if spec["args"].get("refit", False) and validation:
        fitted = fit(spec, spec["train"] + validation)
    clean, vectorizer, classes, model = fitted
    train_seconds = time.perf_counter() - start
    test_x = vectorizer.transform([clean(r["text"]) for r in spec["test"]])
    test_y = [r["tag"] if r["tag"] in classes else "other" for r in spec["test"]]
    pred = model.predict(test_x)
    _, _, f1, _ = precision_recall_fscore_support(test_y, pred, average="weighted", zero_division=0)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"train_seconds": train_seconds, "weighted_f1": float(f1), "n_features": len(vectorizer.get_feature_names_out())}, f)


if __name__ == "__main__":
    main()

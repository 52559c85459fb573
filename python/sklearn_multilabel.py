"""scikit-learn version of Tagger's multi-label training (`multi_label: true`), timed for bench/multi-label.ts.

Usage: python sklearn_multilabel.py IN.json OUT.json
IN:  {"train": [{"text", "tags": [str]}], "validation": [...], "test": [...], "args": TrainingArgs, "stopwords": [str],
      "seed": int}
OUT: {"train_seconds": float, "micro_f1": float, "macro_f1": float, "weighted_f1": float, "tags": [str],
      "thresholds": {tag: float}, "oversampled_rows": int, "n_features": int, "sklearn": str}

The preprocessing, vectorizer and SGDClassifier are python/sklearn_train.py's (imported, not copied); the rest follows
src/model/tagger.ts's multi-label path:
- tags: those in at least `min_freq` of the training rows' tag lists (and in `accepted_tags`), plus `other`, sorted;
  a row's labels are its kept tags, or `other` when it has none (labels.ts's normalizeTagSet);
- oversampling (`oversample`): each row's group is its rarest kept tag (fewest fitted rows; the first in tag order on
  ties), and every group smaller than the largest gets random repeats of its rows up to the largest's size, the groups
  in tag order - Tagger's rule exactly; only the random draws differ (numpy's generator, not Tagger's);
- one binary SGDClassifier per tag (make_classifier's settings) on the same oversampled rows, each with its own seed
  drawn after the oversampling (as Tagger and sklearn's own one-vs-rest draw one seed per binary problem; the shuffles
  are numpy's, so the sample order differs from Tagger's); a tag whose column is constant in the fitted rows (sklearn
  refuses one-class data; Tagger fits an all-negative problem) gets a constant probability 0 (or 1);
- probabilities: the independent per-tag sigmoid of each model's decision function (predict_proba of a binary
  log-loss SGDClassifier), or (clip(score, -1, 1) + 1) / 2 for `loss: modified_huber`, as Tagger's multi-label links;
- per-tag thresholds on the validation split by Tagger's chooseTagThresholds: 0.5 for `argmax` or for a tag without
  validation positives; else the best f1 among 0.5 and the midpoints between consecutive distinct validation
  probabilities (`tuned`: the lowest threshold on ties; `auto`: 0.5 unless strictly beaten);
- `refit`: a second fit on train + validation with the same tags and thresholds (as Tagger's refit, which keeps the
  validated fit's tags rather than recounting them);
- scores: micro / macro / weighted f1 on the test split (true tags normalised against the final tags, predicted tags
  those whose probability reaches their threshold, possibly none), sklearn's f1_score on the indicator matrix of the
  tags found in the true or predicted sets (as src/model/metrics.ts's multiLabelMetrics).
With `ensemble` k > 1, k members with seeds as sklearn_train.py's, coef_ and intercept_ averaged per tag.
A member classifier or a soft vote (`classifier` other than ovr / softmax, the default `soft_vote`) is fitted by
python/sklearn_linear.py's Member (liblinear, NB-LR, multinomial NB, one tag-vs-rest problem per tag) on the same
vectorizer, with oversampling as row weights (rarest-tag groups, as above), calibrated members by a Platt sigmoid
per tag on out-of-fold scores (KFold(calibration_folds, shuffle, seed): sklearn's calibration has no multi-label
mode and StratifiedKFold no multi-label strata; Tagger's folds differ), and the members' probabilities averaged
by their weights; tags without a fitted row get probability 0. Not matched:
`class_weight: balanced` (sklearn's binary weights apply to both classes of each problem; Tagger weighs positives only)
and Tagger's per-epoch validation loss (Tagger computes it, this script does not).
Timed: preprocessing + vectorising + oversampling + fitting + validation probabilities and threshold choice, both fits.
"""

import json
import os
import sys
import time
from collections import Counter

import numpy as np
import sklearn
from scipy.special import expit
from sklearn.calibration import _sigmoid_calibration
from sklearn.metrics import f1_score
from sklearn.model_selection import KFold
from sklearn.preprocessing import MultiLabelBinarizer

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sklearn_linear import Member, member_specs  # noqa: E402
from sklearn_train import make_classifier, make_cleaner, make_vectorizer  # noqa: E402

OTHER = "other"


def model_tags(rows, min_freq, accepted):
    """Tags in at least `min_freq` rows' tag lists (a tag listed twice in one row counts once), plus `other`, sorted."""
    counts = Counter(tag for row in rows for tag in set(row["tags"]))
    kept = {t for t, c in counts.items() if c >= min_freq and (accepted is None or t in accepted)}
    kept.add(OTHER)
    return sorted(kept)


def normalize_tag_set(tags, classes):
    """A row's kept tags, sorted, or [other] when none is kept."""
    kept = sorted({t for t in tags if t in classes})
    return kept if kept else [OTHER]


def indicator(rows, tags):
    classes = set(tags)
    index = {t: k for k, t in enumerate(tags)}
    y = np.zeros((len(rows), len(tags)), dtype=np.uint8)
    for r, row in enumerate(rows):
        for tag in normalize_tag_set(row["tags"], classes):
            y[r, index[tag]] = 1
    return y


def link(args, scores):
    if args.get("loss", "log_loss") == "modified_huber":
        return (np.clip(scores, -1, 1) + 1) / 2
    return expit(scores)


def fit_members(spec, rows, tags=None):
    """One fit of the member classifiers / soft vote on `rows`: (clean, vectorizer, tags, proba(x), rows weighed)."""
    args = spec["args"]
    clean = make_cleaner(spec["stopwords"], args["lower"], args["stem"])
    if tags is None:
        tags = model_tags(rows, args["min_freq"], args.get("accepted_tags"))
    labels = indicator(rows, tags)
    vectorizer = make_vectorizer(args)
    x = vectorizer.fit_transform([clean(r["text"]) for r in rows]).tocsr()
    counts = labels.sum(axis=0)
    groups = np.array([row_tags[np.argmin(counts[row_tags])] for row_tags in (np.flatnonzero(r) for r in labels)])
    w = np.ones(len(rows))
    rng = np.random.default_rng(spec["seed"])
    if args.get("oversample", True):
        sizes = np.bincount(groups, minlength=len(tags))
        largest = int(sizes.max())
        for k in range(len(tags)):
            members = np.flatnonzero(groups == k)
            if 0 < len(members) < largest:
                np.add.at(w, rng.choice(members, largest - len(members)), 1)
    fitted = [k for k in range(len(tags)) if counts[k] > 0]
    y = labels[:, fitted]
    members = []
    for member_spec in member_specs(args):
        member = Member(member_spec, len(fitted), None, True)
        ab = None
        if member_spec.get("calibration", "none") == "sigmoid":
            folds = KFold(args.get("calibration_folds", 5), shuffle=True, random_state=spec["seed"]).split(x)
            oof = np.zeros((x.shape[0], len(fitted)))
            for train_idx, test_idx in folds:
                part = Member(**member.get_params()).fit(x[train_idx], y[train_idx], sample_weight=w[train_idx])
                oof[test_idx] = part.decision_function(x[test_idx])
            ab = [_sigmoid_calibration(oof[:, j], y[:, j], w) for j in range(len(fitted))]
        members.append((member_spec.get("weight", 1), member.fit(x, y, sample_weight=w), ab))

    def proba(x_new):
        total = np.zeros((x_new.shape[0], len(fitted)))
        for weight, member, ab in members:
            if ab is None:
                total += weight * member.predict_proba(x_new)
            else:
                s = member.decision_function(x_new)
                total += weight * np.column_stack([expit(-(a * s[:, j] + b)) for j, (a, b) in enumerate(ab)])
        out = np.zeros((x_new.shape[0], len(tags)))
        out[:, fitted] = total / sum(weight for weight, _, _ in members)
        return out

    return clean, vectorizer, tags, proba, None, int(w.sum())


def fit(spec, rows, tags=None):
    """One fit on `rows` (tags counted on them unless given): (clean, vectorizer, tags, W, b, oversampled_rows);
    scores = x @ W + b. A member classifier or soft vote: fit_members."""
    args = spec["args"]
    if args.get("classifier", "ovr") not in ("ovr", "softmax"):
        return fit_members(spec, rows, tags)
    clean = make_cleaner(spec["stopwords"], args["lower"], args["stem"])
    if tags is None:
        tags = model_tags(rows, args["min_freq"], args.get("accepted_tags"))
    labels = indicator(rows, tags)
    vectorizer = make_vectorizer(args)
    x_all = vectorizer.fit_transform([clean(r["text"]) for r in rows]).tocsr()
    counts = labels.sum(axis=0)
    # Oversampling group: the row's rarest tag (np.argmin takes the first, i.e. the first in tag order, on ties).
    groups = np.array([row_tags[np.argmin(counts[row_tags])] for row_tags in (np.flatnonzero(r) for r in labels)])
    k_members = int(args.get("ensemble", 1))
    seeds = [spec["seed"]] + [
        int(s) for s in np.random.SeedSequence(spec["seed"]).generate_state(k_members - 1) % (2**31 - 1)
    ]
    weights = np.zeros((x_all.shape[1], len(tags)))
    bias = np.zeros(len(tags))
    n_rows = len(rows)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        index = np.arange(len(rows))
        if args.get("oversample", True):
            sizes = np.bincount(groups, minlength=len(tags))
            largest = int(sizes.max())
            parts = [index]
            for k in range(len(tags)):
                members = np.flatnonzero(groups == k)
                if 0 < len(members) < largest:
                    parts.append(rng.choice(members, largest - len(members)))
            index = np.concatenate(parts)
        x, y = x_all[index], labels[index]
        n_rows = len(index)
        tag_seeds = rng.integers(0, 2**31 - 1, size=len(tags))
        for k in range(len(tags)):
            column = y[:, k]
            if column.min() == column.max():
                bias[k] += (np.inf if column[0] == 1 else -np.inf) / len(seeds)
                continue
            model = make_classifier(args, int(tag_seeds[k]))
            model.fit(x, column)
            weights[:, k] += model.coef_.ravel() / len(seeds)
            bias[k] += model.intercept_[0] / len(seeds)
    return clean, vectorizer, tags, weights, bias, n_rows


def probabilities(spec, fitted, rows):
    clean, vectorizer, _, weights, bias, _ = fitted
    x = vectorizer.transform([clean(r["text"]) for r in rows])
    if callable(weights):
        return weights(x)
    return link(spec["args"], np.asarray(x @ weights) + bias)


def choose_tag_thresholds(mode, probs, labels):
    """Tagger's chooseTagThresholds, rule for rule (see src/model/tagger.ts)."""
    n_tags = labels.shape[1]
    thresholds = [0.5] * n_tags
    if mode == "argmax":
        return thresholds
    for k in range(n_tags):
        p = probs[:, k].tolist()
        positive = labels[:, k].tolist()
        positives = sum(positive)
        if positives == 0:
            continue
        order = sorted(range(len(p)), key=lambda r: -p[r])

        def f1_of(tp, predicted):
            return 0.0 if predicted == 0 else (2 * tp) / (predicted + positives)

        at_half = [r for r in order if p[r] >= 0.5]
        best = 0.5
        best_f1 = f1_of(sum(positive[r] for r in at_half), len(at_half))
        tp = 0
        for i, r in enumerate(order):
            tp += positive[r]
            if i + 1 == len(order) or p[order[i + 1]] == p[r]:
                continue
            candidate = (p[r] + p[order[i + 1]]) / 2
            f1 = f1_of(tp, i + 1)
            if f1 > best_f1 or (mode == "tuned" and f1 == best_f1 and candidate < best):
                best_f1 = f1
                best = candidate
        thresholds[k] = best
    return thresholds


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    args = spec["args"]
    validation = spec.get("validation", [])
    start = time.perf_counter()
    first = fit(spec, spec["train"])
    tags = first[2]
    thresholds = [0.5] * len(tags)
    if validation:
        thresholds = choose_tag_thresholds(
            args["threshold"], probabilities(spec, first, validation), indicator(validation, tags)
        )
    final = fit(spec, spec["train"] + validation, tags) if args.get("refit", False) and validation else first
    train_seconds = time.perf_counter() - start
    final_thresholds = np.array(thresholds)
    test_probs = probabilities(spec, final, spec["test"])
    classes = set(tags)
    y_true = [normalize_tag_set(r["tags"], classes) for r in spec["test"]]
    y_pred = [[tags[k] for k in np.flatnonzero(row >= final_thresholds)] for row in test_probs]
    binarizer = MultiLabelBinarizer(classes=sorted({t for s in y_true + y_pred for t in s}))
    true_m, pred_m = binarizer.fit_transform(y_true), binarizer.transform(y_pred)

    def f1(average):
        return float(f1_score(true_m, pred_m, average=average, zero_division=0))

    out = {
        "train_seconds": train_seconds,
        "micro_f1": f1("micro"),
        "macro_f1": f1("macro"),
        "weighted_f1": f1("weighted"),
        "tags": tags,
        "thresholds": dict(zip(tags, final_thresholds.tolist(), strict=True)),
        "oversampled_rows": final[5],
        "n_features": len(final[1].get_feature_names_out()),
        "sklearn": sklearn.__version__,
    }
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()

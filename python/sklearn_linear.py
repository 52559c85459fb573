"""scikit-learn's version of Tagger's member classifiers and soft vote (src/model/members.ts, vote.ts), for
the parity tests (test/model/linear-parity.test.ts) and bench/model.ts.

Usage: python sklearn_linear.py IN.json OUT.json
IN: a list of cases, each {"kind": ..., ...}; OUT: the list of their results (one process: importing
sklearn dominates the run time).

kind "binary": one binary problem on a given CSR matrix, solved by liblinear through sklearn.
  {"x": {"indptr", "indices", "data", "n_cols"}, "y": [0|1], "sample_weight": [..], "C", "solver":
   "squared_hinge"|"hinge"|"logistic", "tol", "max_iter"} -> {"coef": [...], "intercept": float}
kind "platt": sklearn's _sigmoid_calibration. {"scores": [..], "y": [0|1], "sample_weight"?: [..]} -> {"a", "b"}
kind "members": the members (or one classifier) of Tagger's args on given tf-idf rows.
  {"x": CSR, "y": [class index] | null, "labels": [[0|1] per class] | null, "n_classes", "row_weight": [..],
   "class_weight": [..] | null, "members": [{classifier, weight, C?, svm_loss?, nb_alpha?, nb_ratio_alpha?,
   nb_svm_beta?, calibration}], "calibration_folds": [[test row indices] per fold] | null, "tol", "max_iter",
   "test": CSR} -> {"members": [{"coef": V x K, "intercept": [K], "calibration": {"a", "b"} | null,
   "proba": test rows x K}], "proba": the vote's test probabilities}
kind "train": the whole pipeline on texts, as bench/model.ts compares it with Tagger's.
  {"train", "validation"?, "test": [{"text", "tag"}], "args": TrainingArgs, "stopwords", "seed"}
  -> {"train_seconds", "weighted_f1", "n_features", "predictions"}
  Same preprocessing and features as python/sklearn_train.py; tags with fewer than min_freq rows become
  `other`; oversampling draws numpy's repeats and passes them as sample weights; calibrated members use
  CalibratedClassifierCV(method='sigmoid', cv=StratifiedKFold(calibration_folds, shuffle, seed),
  ensemble=False); with `refit`, fitted again on train + validation (as Tagger).
"""

import json
import sys
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV, _sigmoid_calibration
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import precision_recall_fscore_support
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import ComplementNB, MultinomialNB
from sklearn.svm import LinearSVC

from sklearn_train import make_cleaner, make_vectorizer


def csr(spec):
    n_rows = len(spec["indptr"]) - 1
    return sp.csr_matrix(
        (np.array(spec["data"], dtype=float), np.array(spec["indices"]), np.array(spec["indptr"])),
        shape=(n_rows, spec["n_cols"]),
    )


def liblinear(solver, C, tol, max_iter, class_weight=None):
    """The binary liblinear estimator Tagger's dual CD mirrors (intercept as a regularised feature of value 1)."""
    if solver == "logistic":
        return LogisticRegression(C=C, solver="liblinear", dual=True, tol=tol, max_iter=max_iter, class_weight=class_weight)
    return LinearSVC(C=C, loss=solver, dual=True, tol=tol, max_iter=max_iter, class_weight=class_weight)


def nb_ratio(xbin, positive, weight, alpha):
    """Wang & Manning's log-count ratio of the positive rows against the others (binary features, weighted rows)."""
    p = alpha + np.asarray(xbin[positive].T @ weight[positive]).ravel()
    q = alpha + np.asarray(xbin[~positive].T @ weight[~positive]).ravel()
    return np.log((p / p.sum()) / (q / q.sum()))


class Member(ClassifierMixin, BaseEstimator):
    """One of Tagger's member classifiers as an sklearn estimator: one-vs-rest binary liblinear problems (with
    NB-scaled binary features for nb_lr / nb_svm), or multinomial / complement NB; decision_function is the
    linear score Tagger calibrates and explains. `labels` set: multi-label (each class its own problem)."""

    def __init__(self, spec=None, n_classes=2, class_weight=None, multi_label=False, tol=1e-4, max_iter=1000, group=None):
        self.spec = spec
        self.group = group
        self.n_classes = n_classes
        self.class_weight = class_weight
        self.multi_label = multi_label
        self.tol = tol
        self.max_iter = max_iter

    def _positives(self, y):
        if self.multi_label:
            return [np.asarray(y)[:, k] == 1 for k in range(self.n_classes)]
        return [np.asarray(y) == k for k in range(self.n_classes)]

    def fit(self, X, y, sample_weight=None):
        spec = self.spec
        kind = spec["classifier"]
        n, V = X.shape
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        cw = self.class_weight
        self.classes_ = np.arange(self.n_classes)
        positives = self._positives(y)
        if kind in ("multinomial_nb", "complement_nb"):
            cls = MultinomialNB if kind == "multinomial_nb" else ComplementNB
            if not self.multi_label:
                yy = np.asarray(y)
                sw = w if cw is None else w * np.asarray(cw)[yy]
                nb = cls(alpha=spec["nb_alpha"]).fit(X, yy, sample_weight=sw)
                self.coef_ = nb.feature_log_prob_
                self.intercept_ = nb.class_log_prior_ if kind == "multinomial_nb" else np.zeros(self.n_classes)
            else:
                group = None if self.group is None else np.asarray(self.group)
                sw = w if cw is None or group is None else w * np.asarray(cw)[group]
                coef, intercept = [], []
                for pos in positives:
                    nb = cls(alpha=spec["nb_alpha"]).fit(X, pos.astype(int), sample_weight=sw)
                    coef.append(nb.feature_log_prob_[1] - nb.feature_log_prob_[0])
                    intercept.append(nb.class_log_prior_[1] - nb.class_log_prior_[0] if kind == "multinomial_nb" else 0.0)
                self.coef_, self.intercept_ = np.array(coef), np.array(intercept)
            return self
        nb = kind in ("nb_lr", "nb_svm")
        solver = "logistic" if kind in ("logistic_regression", "nb_lr") else spec["svm_loss"]
        xbin = (X > 0).astype(float).tocsr() if nb else None
        coef, intercept = [], []
        for k, pos in enumerate(positives):
            weight_k = {1: 1.0 if cw is None else cw[k], 0: 1.0}
            if nb:
                r = nb_ratio(xbin, pos, w, spec["nb_ratio_alpha"])
                Xk = xbin.multiply(r).tocsr()
            else:
                Xk = X
            est = liblinear(solver, spec["C"], self.tol, self.max_iter, weight_k).fit(Xk, pos.astype(int), sample_weight=w)
            wk = est.coef_.ravel()
            if kind == "nb_svm" and spec["nb_svm_beta"] < 1:
                beta = spec["nb_svm_beta"]
                wk = (1 - beta) * np.abs(wk).mean() + beta * wk
            coef.append(wk * r if nb else wk)
            intercept.append(est.intercept_[0])
        self.coef_, self.intercept_ = np.array(coef), np.array(intercept)
        return self

    def decision_function(self, X):
        kind = self.spec["classifier"]
        Xin = (X > 0).astype(float) if kind in ("nb_lr", "nb_svm") else X
        return np.asarray(Xin @ self.coef_.T) + self.intercept_

    def predict(self, X):
        return self.classes_[self.decision_function(X).argmax(axis=1)]

    def predict_proba(self, X):
        s = self.decision_function(X)
        kind = self.spec["classifier"]
        if self.multi_label:
            return 1 / (1 + np.exp(-s))
        if kind in ("multinomial_nb", "complement_nb"):
            e = np.exp(s - s.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        p = 1 / (1 + np.exp(-s))
        return p / p.sum(axis=1, keepdims=True)


def calibrated_proba(member, X, y, w, folds, X_test, multi_label):
    """CalibratedClassifierCV(method='sigmoid', ensemble=False) on explicit folds; multi-label: per class."""
    if not multi_label:
        cal = CalibratedClassifierCV(member, method="sigmoid", cv=folds, ensemble=False)
        cal.fit(X, y, sample_weight=w)
        calibrators = cal.calibrated_classifiers_[0].calibrators
        return cal.predict_proba(X_test), [c.a_ for c in calibrators], [c.b_ for c in calibrators], cal.calibrated_classifiers_[0].estimator
    # sklearn's calibration has no multi-label mode: the same out-of-fold scores, one sigmoid per class.
    oof = np.zeros((X.shape[0], member.n_classes))
    for train_idx, test_idx in folds:
        m = Member(**member.get_params()).fit(X[train_idx], y[train_idx], sample_weight=w[train_idx])
        oof[test_idx] = m.decision_function(X[test_idx])
    ab = [_sigmoid_calibration(oof[:, k], y[:, k], w) for k in range(member.n_classes)]
    final = Member(**member.get_params()).fit(X, y, sample_weight=w)
    s = final.decision_function(X_test)
    proba = np.column_stack([1 / (1 + np.exp(a * s[:, k] + b)) for k, (a, b) in enumerate(ab)])
    return proba, [a for a, _ in ab], [b for _, b in ab], final


def vote(members_spec, X, y, w, n_classes, class_weight, multi_label, folds, X_test, tol, max_iter, group=None):
    out, probas, weights = [], [], []
    for spec in members_spec:
        member = Member(spec, n_classes, class_weight, multi_label, tol, max_iter, group)
        if spec.get("calibration", "none") == "sigmoid":
            proba, a, b, fitted = calibrated_proba(member, X, y, w, folds, X_test, multi_label)
            calibration = {"a": [float(v) for v in a], "b": [float(v) for v in b]}
        else:
            fitted = member.fit(X, y, sample_weight=w)
            proba, calibration = fitted.predict_proba(X_test), None
        out.append({"coef": fitted.coef_.T.tolist(), "intercept": fitted.intercept_.tolist(), "calibration": calibration, "proba": proba.tolist()})
        probas.append(proba * spec.get("weight", 1))
        weights.append(spec.get("weight", 1))
    return out, np.sum(probas, axis=0) / np.sum(weights)


def run_members(case):
    X = csr(case["x"])
    multi = case.get("labels") is not None
    y = np.array(case["labels"]) if multi else np.array(case["y"])
    w = np.array(case["row_weight"], dtype=float)
    folds = case.get("calibration_folds")
    n = X.shape[0]
    cv = None
    if folds is not None:
        cv = [(np.setdiff1d(np.arange(n), np.array(f, dtype=int)), np.array(f, dtype=int)) for f in folds]
    members, proba = vote(
        case["members"], X, y, w, case["n_classes"], case.get("class_weight"), multi, cv, csr(case["test"]),
        case.get("tol", 1e-4), case.get("max_iter", 1000), case.get("group"),
    )
    return {"members": members, "proba": proba.tolist()}


def member_specs(args):
    keys = {"C": 1, "svm_loss": "squared_hinge", "nb_alpha": 1, "nb_ratio_alpha": 1, "nb_svm_beta": 0.25, "calibration": "none"}
    top = {k: args.get(k, v) for k, v in keys.items()}
    if args["classifier"] == "soft_vote":
        return [{**top, **m} for m in args["members"]]
    return [{**top, "classifier": args["classifier"], "weight": 1}]


class SoftVote(ClassifierMixin, BaseEstimator):
    """Tagger's member classifiers or soft vote of `args` as one single-label sklearn estimator on tf-idf rows
    (the MLflow scoring server's twin of Tagger's default model, python/mlflow_scoring_model.py): each member
    fitted as fit_pipeline fits it (calibrated ones by CalibratedClassifierCV on StratifiedKFold), the
    probabilities their weighted mean."""

    def __init__(self, args=None, seed=0):
        self.args = args
        self.seed = seed

    def fit(self, X, y, sample_weight=None):
        args = self.args
        self.classes_, yi = np.unique(np.asarray(y), return_inverse=True)
        w = np.ones(len(yi)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        folds = StratifiedKFold(args.get("calibration_folds", 5), shuffle=True, random_state=self.seed)
        self.members_ = []
        for spec in member_specs(args):
            member = Member(spec, len(self.classes_), None, False)
            if spec.get("calibration", "none") == "sigmoid":
                member = CalibratedClassifierCV(member, method="sigmoid", cv=folds, ensemble=False)
            self.members_.append((spec.get("weight", 1), member.fit(X, yi, sample_weight=w)))
        return self

    def predict_proba(self, X):
        total = sum(weight for weight, _ in self.members_)
        return sum(weight * m.predict_proba(X) for weight, m in self.members_) / total

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


def fit_pipeline(spec, rows):
    args = spec["args"]
    clean = make_cleaner(spec["stopwords"], args["lower"], args["stem"])
    texts = [clean(r["text"]) for r in rows]
    tags = [r["tag"] for r in rows]
    counts = {t: tags.count(t) for t in set(tags)}
    accepted = args.get("accepted_tags")
    kept = {t for t, c in counts.items() if c >= args["min_freq"] and (accepted is None or t in accepted)}
    kept.add("other")
    y_tags = np.array([t if t in kept else "other" for t in tags])
    classes = np.array(sorted(set(y_tags)))
    y = np.searchsorted(classes, y_tags)
    vectorizer = make_vectorizer(args)
    X = vectorizer.fit_transform(texts).tocsr()
    w = np.ones(len(y))
    if args.get("oversample", True):
        rng = np.random.default_rng(spec["seed"])
        largest = np.bincount(y).max()
        for k in range(len(classes)):
            members = np.flatnonzero(y == k)
            if 0 < len(members) < largest:
                np.add.at(w, rng.choice(members, largest - len(members)), 1)
    cw = None
    if args.get("class_weight") == "balanced":
        visited = np.bincount(y, weights=w, minlength=len(classes))
        cw = (w.sum() / (len(classes) * visited)).tolist()
    specs = member_specs(args)
    folds = StratifiedKFold(args.get("calibration_folds", 5), shuffle=True, random_state=spec["seed"])
    fitted = []
    for s in specs:
        member = Member(s, len(classes), cw, False)
        if s.get("calibration", "none") == "sigmoid":
            member = CalibratedClassifierCV(member, method="sigmoid", cv=folds, ensemble=False).fit(X, y, sample_weight=w)
        else:
            member = member.fit(X, y, sample_weight=w)
        fitted.append((s.get("weight", 1), member))
    return clean, vectorizer, classes, fitted


def run_train(spec):
    validation = spec.get("validation", [])
    start = time.perf_counter()
    fitted = fit_pipeline(spec, spec["train"])
    if spec["args"].get("refit", False) and validation:
        fitted = fit_pipeline(spec, spec["train"] + validation)
    clean, vectorizer, classes, members = fitted
    train_seconds = time.perf_counter() - start
    X_test = vectorizer.transform([clean(r["text"]) for r in spec["test"]])
    proba = sum(weight * m.predict_proba(X_test) for weight, m in members) / sum(weight for weight, _ in members)
    pred = classes[proba.argmax(axis=1)]
    known = set(classes) | {"other"}
    test_y = [r["tag"] if r["tag"] in known else "other" for r in spec["test"]]
    _, _, f1, _ = precision_recall_fscore_support(test_y, pred, average="weighted", zero_division=0)
    return {"train_seconds": train_seconds, "weighted_f1": float(f1), "n_features": X_test.shape[1], "predictions": pred.tolist()}


def run(case):
    kind = case["kind"]
    if kind == "binary":
        X = csr(case["x"])
        est = liblinear(case["solver"], case["C"], case["tol"], case["max_iter"])
        est.fit(X, np.array(case["y"]), sample_weight=np.array(case["sample_weight"], dtype=float))
        return {"coef": est.coef_.ravel().tolist(), "intercept": float(est.intercept_[0])}
    if kind == "platt":
        w = case.get("sample_weight")
        a, b = _sigmoid_calibration(np.array(case["scores"]), np.array(case["y"]), None if w is None else np.array(w, dtype=float))
        return {"a": float(a), "b": float(b)}
    if kind == "members":
        return run_members(case)
    if kind == "train":
        return run_train(case)
    raise SystemExit(f"sklearn_linear.py: unknown case kind {kind!r}")


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump([run(case) for case in cases], f)


if __name__ == "__main__":
    main()

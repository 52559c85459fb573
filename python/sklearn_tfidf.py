"""scikit-learn reference for the TF-IDF parity test (test/model/tfidf-parity.test.ts).

Usage: python sklearn_tfidf.py IN.json OUT.json
IN:  [{"docs": [str], "analyzer": "word"|"char"|"char_wb", "ngram_range": [min, max]}, ...]
OUT: [{"vocabulary": [str] (column order), "indptr": [int], "indices": [int], "data": [float]}, ...]
(one process for all cases: importing sklearn dominates the run time)
Lower-casing is done by Tagger's preprocessing, so TfidfVectorizer gets lowercase=False; everything else
is sklearn's default.
"""

import json
import sys

from sklearn.feature_extraction.text import TfidfVectorizer


def fit_transform(spec):
    vectorizer = TfidfVectorizer(
        analyzer=spec["analyzer"], ngram_range=tuple(spec["ngram_range"]), lowercase=False
    )
    matrix = vectorizer.fit_transform(spec["docs"]).tocsr()
    matrix.sort_indices()
    return {
        "vocabulary": vectorizer.get_feature_names_out().tolist(),
        "indptr": matrix.indptr.tolist(),
        "indices": matrix.indices.tolist(),
        "data": matrix.data.tolist(),
    }


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        specs = json.load(f)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump([fit_transform(spec) for spec in specs], f, ensure_ascii=False)


if __name__ == "__main__":
    main()

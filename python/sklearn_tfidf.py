"""scikit-learn reference for the TF-IDF parity test (test/model/tfidf-parity.test.ts).

Usage: python sklearn_tfidf.py IN.json OUT.json
IN:  [{"docs": [str], "analyzer": "word"|"char"|"char_wb"|"char_wb+word", "ngram_range": [min, max],
       "sublinear_tf": bool (optional, default false), "min_df": int (optional, default 1)}, ...]
OUT: [{"vocabulary": [str] (column order), "indptr": [int], "indices": [int], "data": [float]}, ...]
(one process for all cases: importing sklearn dominates the run time)
Lower-casing is done by Tagger's preprocessing, so TfidfVectorizer gets lowercase=False; everything else
is sklearn's default unless the case sets sublinear_tf or min_df. "char_wb+word" is Tagger's union analyzer
(src/model/features.ts): FeatureUnion of char_wb ngram_range and word (1, 2), transformer_weights 1/sqrt(2)
each; its vocabulary is the two blocks' feature names (unprefixed) in column order.
"""

import json
import math
import sys

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import FeatureUnion


def fit_transform(spec):
    sublinear = bool(spec.get("sublinear_tf", False))
    min_df = int(spec.get("min_df", 1))
    if spec["analyzer"] == "char_wb+word":
        blocks = [
            TfidfVectorizer(
                analyzer="char_wb",
                ngram_range=tuple(spec["ngram_range"]),
                lowercase=False,
                sublinear_tf=sublinear,
                min_df=min_df,
            ),
            TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=False, sublinear_tf=sublinear, min_df=min_df),
        ]
        weight = 1 / math.sqrt(2)
        vectorizer = FeatureUnion(
            [("char_wb", blocks[0]), ("word", blocks[1])], transformer_weights={"char_wb": weight, "word": weight}
        )
    else:
        vectorizer = TfidfVectorizer(
            analyzer=spec["analyzer"],
            ngram_range=tuple(spec["ngram_range"]),
            lowercase=False,
            sublinear_tf=sublinear,
            min_df=min_df,
        )
        blocks = [vectorizer]
    matrix = vectorizer.fit_transform(spec["docs"]).tocsr()
    matrix.sort_indices()
    return {
        "vocabulary": [name for block in blocks for name in block.get_feature_names_out().tolist()],
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

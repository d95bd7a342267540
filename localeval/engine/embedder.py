"""Embedders: texts in, one vector per text out. The real one is a local sentence-transformers model."""

from __future__ import annotations

import time
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    """`embed` is all a metric needs. An embedder may also have `load()`, which a run calls before the
    judge works (Pipeline.run), so a model that does not load fails at once."""

    identity: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


class SentenceTransformerEmbedder:
    def __init__(self, path: str, name: str | None = None, device: str = "cpu", batch_size: int = 64):
        self.path, self.device, self.batch_size = str(path), device, batch_size
        self.identity = name or str(path)
        self.load_seconds = 0.0
        self._model = None

    def __repr__(self) -> str:
        return (f"<SentenceTransformerEmbedder {self.identity} on {self.device}; "
                f"{'loaded' if self._model is not None else 'not loaded yet'}>")

    def load(self) -> None:
        self.model  # noqa: B018  (the property loads it)

    @property
    def model(self):
        """Loaded on first use: a run whose metrics need no embeddings never pays for it."""
        if self._model is None:
            from ..interrupts import held

            with held():  # whole, whenever Ctrl-C comes (interrupts.py)
                from sentence_transformers import SentenceTransformer

            from .. import hf

            started = time.perf_counter()
            self._model = hf.load(SentenceTransformer, self.path, device=self.device)
            self.load_seconds = time.perf_counter() - started
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-normalised embeddings, each distinct text encoded once."""
        import torch

        from .attention import kernels

        unique = list(dict.fromkeys(texts))
        with kernels(torch.device(self.device)):  # its batches' shapes vary too: no per-shape plans
            vectors = self.model.encode(unique, batch_size=self.batch_size, normalize_embeddings=True,
                                        convert_to_numpy=True, show_progress_bar=False)
        row = {text: i for i, text in enumerate(unique)}
        return vectors[[row[t] for t in texts]]

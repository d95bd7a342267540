"""Sentences, the unit every metric counts. pysbd splits them, chunk by chunk.

Splitting each chunk on its own means a sentence never spans two retrieved chunks, and the
denominators of the metrics are fixed before the judge says anything.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import pysbd
from pysbd.languages import LANGUAGE_CODES

from .errors import UserError
from .options import given

SUPPORTED_LANGUAGES = frozenset(LANGUAGE_CODES)
DEFAULT_LANGUAGE = "en"
# The names a judge is told, where it writes text of its own in the sample's language.
LANGUAGE_NAMES = {
    "am": "Amharic", "ar": "Arabic", "bg": "Bulgarian", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "es": "Spanish", "fa": "Persian", "fr": "French", "hi": "Hindi", "hy": "Armenian",
    "it": "Italian", "ja": "Japanese", "kk": "Kazakh", "mr": "Marathi", "my": "Burmese", "nl": "Dutch",
    "pl": "Polish", "ru": "Russian", "sk": "Slovak", "ur": "Urdu", "zh": "Chinese",
}


def check_language(code: str) -> None:
    """A run's language must be one pysbd splits: any other would leave every sentence metric null."""
    if code not in SUPPORTED_LANGUAGES:
        raise UserError(f"{given('language', code)}: not supported; choose from {', '.join(sorted(SUPPORTED_LANGUAGES))}")


_per_thread = threading.local()


def _segmenter(language: str) -> pysbd.Segmenter:
    """One Segmenter per thread and language: a Segmenter keeps the text it is splitting on itself, so
    two threads sharing one (evaluate() called from a thread pool) got each other's sentences, or none,
    and split_sentences' cache kept the wrong split for the rest of the process."""
    segmenters = _per_thread.__dict__.setdefault("segmenters", {})
    if language not in segmenters:
        segmenters[language] = pysbd.Segmenter(language=language, clean=False)
    return segmenters[language]


@lru_cache(maxsize=4096)
def split_sentences(text: str, language: str = DEFAULT_LANGUAGE) -> tuple[str, ...]:
    """The pysbd sentences of `text`, stripped, without empty ones."""
    if not text or not text.strip():
        return ()
    return tuple(s.strip() for s in _segmenter(language).segment(text) if s.strip())


def split_chunks(chunks: tuple[str, ...], language: str = DEFAULT_LANGUAGE) -> list[tuple[str, ...]]:
    """The sentences of each chunk, chunk by chunk."""
    return [split_sentences(chunk, language) for chunk in chunks]

"""The unit of evaluation: one question, what was retrieved for it, and what was answered."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

# Legacy ragas names, accepted on input and mapped to the current ones.
FIELD_ALIASES = {
    "question": "user_input",
    "contexts": "retrieved_contexts",
    "answer": "response",
    "ground_truth": "reference",
    "ground_truths": "reference",  # ragas 0.1: a list of strings, joined into one text (data.py)
}
TEXT_FIELDS = ("user_input", "response", "reference")


def numpy_like(value: object) -> bool:
    """A numpy array or number, or a pandas Series: anything that turns itself into plain values with tolist()."""
    return hasattr(value, "tolist") and not isinstance(value, (str, bytes, list, tuple, dict))


@dataclass(frozen=True)
class Sample:
    """One RAG sample, by ragas's field names: `user_input` (the question), `retrieved_contexts` (the chunks
    retrieved for it), `response` (the answer given from them) and `reference` (a correct answer, for the
    metrics that need one). Any may be absent, and the metrics that need it are null with the reason;
    `language` overrides the run's for this sample. evaluate() also takes plain dicts of these fields (an id a
    number, contexts a list), and reads them into Samples as a data file's records are."""
    id: str
    user_input: str | None = None
    # a list is held as a tuple (__post_init__), as are a numpy array and a pandas Series, left out of the type: a
    # Sequence would let a type checker pass a plain string, a common slip
    retrieved_contexts: tuple[str, ...] | list[str] | None = None
    response: str | None = None
    reference: str | None = None
    language: str | None = None

    def __post_init__(self) -> None:
        # a list, as one writes contexts by hand, or a numpy array or pandas Series, as a frame's cell holds them:
        # held as the tuple it is typed as, so that a Sample hashes and equals the one a data file gives (a
        # notebook probe: hash() raised "unhashable type: 'list'"; an array was refused as "a ndarray")
        contexts = self.retrieved_contexts
        if numpy_like(contexts):
            contexts = contexts.tolist()
        if isinstance(contexts, list):
            object.__setattr__(self, "retrieved_contexts", tuple(contexts))

    def texts_digest(self) -> str:
        """The sample known by its texts, not its id (a line number, where a file gives none): how a
        calibration remembers the labeled samples it was fitted on."""
        texts = [self.user_input, list(self.retrieved_contexts or ()), self.response, self.reference]
        return hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]  # escaped: a lone surrogate encodes too

    def missing(self, fields: tuple[str, ...]) -> list[str]:
        """The fields of `fields` this sample lacks: absent, or empty text.

        An empty context list is not missing: it is a retrieval that found nothing, and the
        metrics score it (context_relevance 0, as the seed says).
        """
        gaps = []
        for name in fields:
            value = getattr(self, name)
            if value is None or (isinstance(value, str) and not value.strip()):
                gaps.append(name)
        return gaps

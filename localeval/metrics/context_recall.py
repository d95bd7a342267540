"""context_recall (seed 001): the share of reference sentences that the context supports."""

from __future__ import annotations

from . import prompts
from .sentence_support import SentencesAgainstContext


class ContextRecall(SentencesAgainstContext):
    name = "context_recall"
    requires = ("user_input", "retrieved_contexts", "reference")
    description = "share of reference sentences attributable to the context"
    low_means = "the retrieval (what the right answer rests on was not retrieved)"
    text_field, task = "reference", prompts.CONTEXT_RECALL
    verdict_key = task.verdict

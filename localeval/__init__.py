"""localeval: offline evaluation of retrieval-augmented generation with a local judge model.

    import localeval
    result = localeval.evaluate("data.jsonl", metrics=["context_recall"])
    result.to_pandas()
"""

from . import offline  # noqa: F401  (first: sets the offline switches before any HF import)
from .api import EvaluationResult, evaluate
from .metrics import DEFAULT_METRICS, METRICS, JudgeSettings
from .samples import Sample

__all__ = ["evaluate", "EvaluationResult", "Sample", "JudgeSettings", "METRICS", "DEFAULT_METRICS"]
__version__ = "0.1.0"

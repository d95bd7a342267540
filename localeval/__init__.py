"""localeval: offline evaluation of retrieval-augmented generation with a local judge model.

    import localeval
    result = localeval.evaluate("data.jsonl", metrics=["context_recall"])
    result.to_pandas()

Importing the package is cheap: the pipeline (and torch with it) loads on first use of a name
below, so `localeval --help` answers at once and an application pays only for what it calls.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from .interrupts import import_whole as _import_whole

if _TYPE_CHECKING:  # what a type checker reads (`X as X`: re-exported); at run time each name loads on first use
    from .api import EvaluationResult as EvaluationResult, evaluate as evaluate
    from .api import load_embedder as load_embedder, load_judge as load_judge
    from .calibration import CalibrationWarning as CalibrationWarning
    from .data import IgnoredFieldsWarning as IgnoredFieldsWarning, MissingIdsWarning as MissingIdsWarning
    from .engine.cache import AnswerCache as AnswerCache
    from .engine.limits import BatchLimits as BatchLimits
    from .errors import EnvironmentFailure as EnvironmentFailure, LocalevalWarning as LocalevalWarning
    from .errors import UserError as UserError
    from .metrics import DEFAULT_METRICS as DEFAULT_METRICS, METRICS as METRICS, JudgeSettings as JudgeSettings
    from .metrics import Metric as Metric, MetricResult as MetricResult, register_metric as register_metric
    from .metrics.scoring import Scoring as Scoring
    from .pipeline import ForkedWarning as ForkedWarning
    from .requests import EmbedRequest as EmbedRequest, JudgeAnswer as JudgeAnswer, JudgeRequest as JudgeRequest
    from .samples import Sample as Sample
    from .trust import FewLabelsWarning as FewLabelsWarning, NothingScoredWarning as NothingScoredWarning
    from .trust import RetrievedNothingWarning as RetrievedNothingWarning, WeakJudgeWarning as WeakJudgeWarning
    from .trust import UnmeasuredJudgeWarning as UnmeasuredJudgeWarning

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "evaluate": "api",
    "load_judge": "api",
    "load_embedder": "api",
    "EvaluationResult": "api",
    "Sample": "samples",
    "JudgeSettings": "metrics",
    "Scoring": "metrics.scoring",  # JudgeSettings(scoring=Scoring("soft")), as its message says (a review)
    "METRICS": "metrics",
    "Metric": "metrics",
    "MetricResult": "metrics",
    "register_metric": "metrics",
    "JudgeRequest": "requests",
    "JudgeAnswer": "requests",  # what a judge of one's own returns (a custom-judge probe found it unexported)
    "EmbedRequest": "requests",
    "DEFAULT_METRICS": "metrics",
    "BatchLimits": "engine.limits",
    "AnswerCache": "engine.cache",
    "UserError": "errors",
    "EnvironmentFailure": "errors",
    "LocalevalWarning": "errors",
    "WeakJudgeWarning": "trust",
    "FewLabelsWarning": "trust",
    "UnmeasuredJudgeWarning": "trust",
    "RetrievedNothingWarning": "trust",
    "NothingScoredWarning": "trust",
    "ForkedWarning": "pipeline",
    "CalibrationWarning": "calibration",
    "IgnoredFieldsWarning": "data",  # a misspelt field: made an error, a service answers 400 (a probe)
    "MissingIdsWarning": "data",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'localeval' has no attribute {name!r}")
    _import_whole(f"{__name__}.progress").tqdm_imported_quietly()  # before transformers imports it
    # the first use imports torch: Ctrl-C then must not leave it half imported (interrupts.py)
    value = getattr(_import_whole(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})  # a name looked up is in both

"""A user's own metric, scored as the built-in ones are once register_metric() has checked it and named it.

A probe's metric reached the engine only through an undocumented write to METRICS, and every slip in it
(no `steps`, no `requires`, a name a built-in metric had) surfaced as an
AttributeError deep in a run, or silently scored another prompt under a built-in name. What can be
checked on the class is checked here, once, with a message that says what to write; what only a
sample shows (what a step yields, the score it returns) is checked by the evaluator as it runs.
"""

from __future__ import annotations

import re

from ..errors import UserError
from .base import Metric

NAME = re.compile(r"[a-z][a-z0-9_]*")
SAMPLE_FIELDS = ("user_input", "retrieved_contexts", "response", "reference")  # what `requires` may name
# a score under one of these overwrote a row's id or evidence, or shadowed an input (a review)
RESERVED = frozenset({"all", "id", "evidence", "schema_version", "language", *SAMPLE_FIELDS})


def register_metric(metric: type[Metric]) -> type[Metric]:
    """Make `metric`, a subclass of localeval.Metric, scorable by its name: evaluate(metrics=[..., its name]),
    result[its name], assert_scores. A class decorator (it returns the class). Registering a name again
    replaces the metric of that name (a notebook cell run twice); a built-in metric's name is refused.
    How to write one: `localeval docs custom-metrics`."""
    from . import BUILT_IN, METRICS

    if not (isinstance(metric, type) and issubclass(metric, Metric)) or metric is Metric:
        raise UserError(f"register_metric: give a class derived from localeval.Metric; got {metric!r}")
    name = getattr(metric, "name", None)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise UserError(f"register_metric: {metric.__name__}.name must be a name of lower-case letters, digits and "
                        f"underscores, starting with a letter (it is a results.jsonl key); got {name!r}")
    if name in BUILT_IN:
        raise UserError(f"register_metric: {name!r} is a built-in metric's name; give {metric.__name__} another")
    if name in RESERVED:
        raise UserError(f"register_metric: {name!r} is a key results already have (or, for 'all', every metric); "
                        f"give {metric.__name__} another name")
    problem = next(_class_problems(metric, {key: value for key, value in METRICS.items() if key != name}), None)
    if problem is not None:
        raise UserError(f"register_metric: {metric.__name__}: {problem}")
    METRICS[name] = metric
    return metric


def _class_problems(metric: type[Metric], others: dict[str, type[Metric]]):
    """What the class lacks or gets wrong, first found first."""
    if not isinstance(getattr(metric, "description", None), str) or not metric.description.strip():
        yield "set description, a line saying what the score measures"
    requires = getattr(metric, "requires", None)
    if not isinstance(requires, tuple) or not all(isinstance(field, str) for field in requires):
        yield f"set requires, a tuple of the sample fields it needs, from {', '.join(SAMPLE_FIELDS)}; got {requires!r}"
    elif unknown := [field for field in requires if field not in SAMPLE_FIELDS]:
        yield f"requires names {', '.join(map(repr, unknown))}, not a sample field; choose from {', '.join(SAMPLE_FIELDS)}"
    if metric.steps is Metric.steps:
        yield "define steps(self, sample, language), the generator that yields its requests and returns its result"
    elif not callable(metric.steps):
        yield "steps must be a method: a generator that yields lists of requests and returns a MetricResult, or, for a " \
              "metric that asks no model, a function that returns one"
    names = (metric.name, *getattr(metric, "part_names", ()), *getattr(metric, "list_part_names", ()))
    taken = {part: other for other, cls in others.items() for part in (other, *cls.part_names, *cls.list_part_names)}
    if reserved := next((part for part in names[1:] if part in RESERVED), None):  # the name is checked above
        yield f"its sub-score {reserved!r} would overwrite a results line's own {reserved!r}; name it otherwise"
    if clash := next((part for part in names if part in taken), None):
        yield f"its score or sub-score {clash!r} is already a score of metric {taken[clash]!r}"

"""Which JSON value each choice point decided, so a probability can be read beside its verdict.

The decoder records, at every step where the grammar left a row only a few tokens (decode.py),
each token's probability. Here those points are put in JSON terms: the key whose value was being
written (the text before the point ends with `"key":`), and each allowed token read as the value
it starts. Points that are not the start of a keyed value are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..requests import Choice
from .decode import ChoicePoint

# The text before a value: `"key":`. Only values that are not strings (numbers, true/false): a
# choice just inside a string is a choice of text, not between values.
_KEY_BEFORE_VALUE = re.compile(r'"((?:[^"\\]|\\.)*)":$')
# A value's text ends where the JSON structure resumes.
_VALUE = re.compile(r'[^,}\]"]*')


def keyed_choices(tokens: Sequence[int], points: Sequence[ChoicePoint],
                  decode: Callable[[Sequence[int]], str]) -> tuple[Choice, ...]:
    """`points` of a row that emitted `tokens`, as Choices; `decode` turns token ids into text."""
    choices = []
    for point in points:
        key = _KEY_BEFORE_VALUE.search(decode(tokens[:point.position]))
        if key is None:
            continue
        values: dict[str, float] = {}
        for token, probability in point.probabilities.items():
            value = _VALUE.match(decode([token])).group()
            values[value] = values.get(value, 0.0) + probability
        choices.append(Choice(key.group(1), values))
    return tuple(choices)

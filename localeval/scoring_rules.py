"""Which rules a run's scores were computed by: how texts split into sentences, what each metric asks the
judge and how it turns the answers into a score. Two runs scored by different rules give different scores
for the same answers, so their results do not go in one results.jsonl (--resume refuses), and compare says
so (--same-judge refuses). An upgrade across a change resumed an interrupted run with lines of both, and
compare took the change for a regression (a probe).

SCORING_RULES is a date, set anew with each change that can move a score (a second change on one day adds
.2, .3, ...; tests/test_scoring_rules.py holds the code it covers to it, and docs/changes.md says what each
changed); localeval's own version number does not follow such changes. A localeval before 2026-11-29 recorded none.
"""

from __future__ import annotations

from typing import Any

from .manual import see

SCORING_RULES = "2026-11-29"
# The code whose changes SCORING_RULES follows, from the package's folder
SCORING_CODE = ("text.py", "metrics/*.py")
RECORDED_SINCE = "2026-11-29"  # the first SCORING_RULES: a run without one was scored before it
# said after each refusal or note of other rules (an upgrading team was told the rules differed, not how)
WHAT_CHANGED = f"`{see('changes')}` says what changed"


def other_rules(recorded: Any, ours: str = SCORING_RULES) -> str:
    """Whose rules scored a folder that `ours` are not: "a localeval before 2026-11-29, which recorded no
    scoring rules", or "a localeval of other scoring rules (2026-12-03; this one's are 2026-11-29)"."""
    if not recorded:
        return f"a localeval before {RECORDED_SINCE}, which recorded no scoring rules"
    return f"a localeval of other scoring rules ({recorded}; this one's are {ours})"

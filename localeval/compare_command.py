"""`localeval compare BEFORE AFTER`: the comparison (comparison.py) and its gates (drop_gates.py), printed.

The gates go to stderr first, and their status is settled before stdout is written: piped into `head`, the
table's reader could stop early and a failed gate came out as exit 141, its line never written (a CI probe).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .comparison import MIN_PAIRS, ScoreChange, compared, scored_otherwise, unlike
from .drop_gates import Gate, gate_said, gates, parse_max_drops
from .errors import EXIT_BELOW_THRESHOLD, EXIT_OK, UserError, count_of, for_terminal
from .summary import aligned, fixed
from .run_files import RunFiles, read_run

SCHEMA_VERSION = 1  # of --json's document (docs/output.md, "compare --json")


def compare_command(args) -> int:
    before, after = read_run(args.before), read_run(args.after)
    changes = compared(before, after)
    if not changes:
        raise UserError(f"compare: the two runs share no score ({', '.join(before.metrics)} against "
                        f"{', '.join(after.metrics)})")
    if args.same_judge and (otherwise := scored_otherwise(before, after, [change.name for change in changes])):
        raise UserError(f"compare --same-judge: the runs' scores were measured otherwise ({'; '.join(otherwise)}); "
                        "score the earlier data again as the later run was scored, or compare without --same-judge")
    outcomes = gates(before, changes, parse_max_drops(args.max_drop or (), list(before.metrics)))
    failed = [name for name, gate in outcomes.items() if gate.failed]
    _say_gates(outcomes, failed)
    status = EXIT_BELOW_THRESHOLD if failed else EXIT_OK
    if outcomes:  # the gates' verdict stands if stdout's reader goes early (cli.py's broken pipe)
        args.decided_status = status
    notes = unlike(before, after, changes)
    if args.json:
        print(json.dumps(document(before, after, changes, notes, outcomes)))
    else:
        _say(before, after, changes, notes)
    return status


def _say_gates(outcomes: dict[str, Gate], failed: list[str]) -> None:
    for name, gate in outcomes.items():
        print(for_terminal(gate_said(name, gate)), file=sys.stderr)
    if outcomes:
        total = (f"{len(failed)} of {count_of(len(outcomes), 'gate')} FAILED" if failed else
                 f"{'all ' if len(outcomes) > 1 else ''}{count_of(len(outcomes), 'gate')} passed")
        print(f"max-drop: {total}", file=sys.stderr)


def document(before: RunFiles, after: RunFiles, changes: list[ScoreChange], notes: list[str],
             outcomes: dict[str, Gate]) -> dict[str, Any]:
    """What --json prints."""
    return {"schema_version": SCHEMA_VERSION, "before": before.described(), "after": after.described(),
            "notes": notes, "scores": {change.name: change.to_json() for change in changes},
            "gates": {name: gate.to_json() for name, gate in outcomes.items()},
            "gates_passed": not any(gate.failed for gate in outcomes.values()) if outcomes else None}


def table(changes: list[ScoreChange]) -> str:
    header = ["score", "before", "after", "change", "paired change [95% CI]", "pairs", "direction"]
    lines = [header] + [[for_terminal(change.name), fixed(change.before), fixed(change.after),
                         _signed(change.mean_change), _paired(change), str(change.paired), change.direction]
                        for change in changes]
    return aligned(lines, left=(0, 6))


def _say(before: RunFiles, after: RunFiles, changes: list[ScoreChange], notes: list[str]) -> None:
    for name, run in (("before", before), ("after", after)):
        facts = run.described()
        finished = f"finished {facts['finished']}" if facts["finished"] else "its finish not recorded"  # older summaries
        print(for_terminal(f"{name}: {facts['folder']} ({count_of(facts['samples'] or 0, 'sample')}, judge "
                           f"{facts['judge']}, {finished})"))
    print(f"\n{table(changes)}")
    print("\nEvery score is better higher. change: after's mean minus before's. paired change: the mean of each\n"
          "sample's own change, over the samples both runs scored, with its 95% interval. direction: higher or\n"
          f"lower where that interval leaves 0 out, no clear change where it holds 0 (from {MIN_PAIRS} pairs);\n"
          "unchanged where every pair scored the same.")
    drops = [for_terminal(f"  {change.name}: {sample} {was:.3f} -> {now:.3f}") for change in changes
             for sample, was, now in change.drops]
    if drops:
        print("\nthe samples that fell most (before -> after):\n" + "\n".join(drops))
    for note in notes:
        print(f"\nlocaleval: note: {for_terminal(note)}")


def _paired(change: ScoreChange) -> str:
    if change.paired_change is None:
        return "-"
    bounds = "" if change.interval is None else f" [{change.interval[0]:+.3f}, {change.interval[1]:+.3f}]"
    return f"{change.paired_change:+.3f}{bounds}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"

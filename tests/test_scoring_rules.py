"""The rules a run's scores were computed by: recorded with every run, and changed with the code they name."""

import hashlib
import json
from pathlib import Path

import localeval
from localeval.cli import main
from localeval.errors import EXIT_OK, EXIT_USER
from localeval.scoring_rules import SCORING_CODE, SCORING_RULES

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "samples.jsonl"
# The code SCORING_RULES was last set for. Where this test fails, the scoring code changed: if any score can
# move (a sentence split, a prompt, a schema, a formula), set SCORING_RULES to today's date and say what
# changed in docs/changes.md; then pin the digest the failure names, whether or not the rules changed.
PINNED = ("2026-11-29", "e0e0bef530da12a17720ebd728416d76e381f2593d82a9e7e85cc85b4e10c9b7")


def _scoring_code_digest() -> str:
    package = Path(localeval.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(path for pattern in SCORING_CODE for path in package.glob(pattern)):
        # Unix line breaks whatever the checkout's: a Windows clone's CRLF changes no rule
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes().replace(b"\r\n", b"\n"))
    return digest.hexdigest()


def test_the_scoring_rules_follow_the_scoring_code():
    assert (SCORING_RULES, _scoring_code_digest()) == PINNED, (
        "the scoring code changed since SCORING_RULES was last set: if a score can move, set it anew "
        "(localeval/scoring_rules.py) and say what changed in docs/changes.md; then pin this digest")


def _run(out: Path, judge: Path, *options: str) -> int:
    return main(["run", str(EXAMPLES), "--out", str(out), "--metrics", "context_recall", "--judge", str(judge),
                 "--limit", "2", "--quiet", "--no-cache", *options])


def _recorded_by_an_earlier_localeval(out: Path) -> None:
    """The folder as a localeval before the rules were recorded leaves it, cut short by an interrupt."""
    for name in ("run.json", "summary.json"):
        recorded = json.loads((out / name).read_text(encoding="utf-8"))
        recorded.pop("scoring_rules")
        (out / name).write_text(json.dumps(recorded), encoding="utf-8")
    (out / "results.jsonl").write_text((out / "results.jsonl").read_text(encoding="utf-8").splitlines(True)[0])


def test_a_run_scored_by_other_rules_is_not_resumed_and_compare_says_so(tmp_path, tiny_judge, capsys):
    """An upgrade across a change of the rules resumed an interrupted run, one file holding lines of both, and
    compare --same-judge took the change for a regression (a probe)."""
    before, after = tmp_path / "before", tmp_path / "after"
    assert _run(before, tiny_judge) == _run(after, tiny_judge) == EXIT_OK
    for out in (before, after):
        assert json.loads((out / "run.json").read_text())["scoring_rules"] == SCORING_RULES
        assert json.loads((out / "summary.json").read_text())["scoring_rules"] == SCORING_RULES
    capsys.readouterr()
    assert main(["compare", str(before), str(after), "--same-judge"]) == EXIT_OK
    _recorded_by_an_earlier_localeval(before)
    assert main(["compare", str(before), str(after), "--same-judge"]) == EXIT_USER
    assert (f"other scoring rules (localeval's, how it splits sentences and scores answers): not recorded before, "
            f"{SCORING_RULES} after; an upgrade needs a new baseline; `localeval docs changes` says what changed"
            ) in capsys.readouterr().err
    kept = (before / "results.jsonl").read_bytes()
    assert _run(before, tiny_judge, "--resume") == EXIT_USER
    assert ("holds a run scored by a localeval before 2026-11-29, which recorded no scoring rules, whose scores "
            "would not mix with this localeval's in one file: score into another --out, or run without --resume to "
            "score it afresh here (replacing it); `localeval docs changes` says what changed"
            ) in capsys.readouterr().err
    assert (before / "results.jsonl").read_bytes() == kept


def test_each_set_of_rules_says_what_changed_in_the_documents():
    """`localeval docs changes`, which every refusal for other rules names, has a section for today's rules:
    a new date without one left an upgrading team asking what had changed."""
    changes = (Path(__file__).resolve().parent.parent / "docs" / "changes.md").read_text(encoding="utf-8")
    assert f"\n## {SCORING_RULES}\n" in changes

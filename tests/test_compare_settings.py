"""scripts/compare_settings.py on two recorded bench runs (docs/judges/tuning): the numbers docs/judges.md quotes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUNING = ROOT / "docs" / "judges" / "tuning"


def compare(a: str, b: str) -> dict[tuple[str, str], list[str]]:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_settings.py"), str(TUNING / a),
                             str(TUNING / b)], capture_output=True, text=True, timeout=300, check=True)
    rows = [line.strip("|").split("|") for line in result.stdout.splitlines()[2:]]
    return {(cells[0].strip(), cells[1].strip()): [c.strip() for c in cells[2:]] for cells in rows}


def test_reasons_on_against_off_for_the_best_judge():
    rows = compare("01-list-reasons-on.json", "02-list-reasons-off.json")
    recall = rows[("qwen2.5-coder-1.5b-instruct", "context_recall")]
    assert recall[:4] == ["0.315", "0.634", "0.403 / 0.214", "0.785 / 0.442"]
    assert int(recall[4].rstrip("%")) >= 95  # off wins in nearly every resample
    assert int(recall[4].rstrip("%")) + int(recall[5].rstrip("%")) <= 100  # wins and ties are apart
    supported = rows[("qwen2.5-coder-1.5b-instruct", "context_supported_precision")]
    assert supported[:2] == ["0.965", "0.833"] and int(supported[4].rstrip("%")) <= 5
    # response_relevancy asks for no reasons: the two runs gave it the very same scores
    assert rows[("qwen2.5-coder-1.5b-instruct", "response_relevancy")][4:] == ["same scores", "—"]
    # a judge that gave every sample the same score under both settings has no ρ to compare
    assert rows[("qwen2.5-coder-0.5b-instruct", "context_recall")] == ["—"] * 6


def test_only_judges_and_metrics_in_both_runs_are_compared():
    rows = compare("11-example-qwen1.5b.json", "02-list-reasons-off.json")
    assert sorted(rows) == [("qwen2.5-coder-1.5b-instruct", "answer_supported_precision"),
                            ("qwen2.5-coder-1.5b-instruct", "context_recall")]


def test_hard_against_soft_within_one_run(tmp_path):
    """A run is re-scored hard and soft; `FILE:hard FILE:soft` compares the two scorings of one run."""
    import json

    bench = json.loads((TUNING / "20-probabilities.json").read_text(encoding="utf-8"))
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_settings.py"),
                             f"{TUNING / '20-probabilities.json'}:hard", f"{TUNING / '20-probabilities.json'}:soft"],
                            capture_output=True, text=True, timeout=300, check=True)
    rows = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): [c.strip() for c in line.strip("|").split("|")[2:]]
            for line in result.stdout.splitlines()[2:]}
    judge = next(j for j in bench["judges"] if j["name"] == "qwen2.5-coder-1.5b-instruct")
    for metric, row in judge["metrics"].items():
        shown = rows[("qwen2.5-coder-1.5b-instruct", metric)]
        assert shown[:2] == [f"{row['scorings'][mode]['spearman']:.3f}" for mode in ("hard", "soft")]

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
    assert rows[("qwen2.5-coder-1.5b-instruct", "response_relevancy")][4:] == ["same scores", "—", "30"]
    # a judge that gave every sample the same score under both settings has no ρ to compare
    assert rows[("qwen2.5-coder-0.5b-instruct", "context_recall")] == ["—"] * 6 + ["30"]


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


def test_runs_on_other_samples_are_said_and_runs_on_other_data_refused(tmp_path):
    """A probe compared a bench of 8 samples with one of 6: each row paired the 6, unsaid, and its ρ was
    neither report's."""
    import json

    bench = json.loads((TUNING / "01-list-reasons-on.json").read_text(encoding="utf-8"))
    fewer = {**bench, "dataset": {**bench["dataset"], "samples": 20},
             "judges": [{**judge, "per_sample": judge["per_sample"][:20]} if judge["status"] == "ok" else judge
                        for judge in bench["judges"]]}
    (tmp_path / "fewer.json").write_text(json.dumps(fewer), encoding="utf-8")
    script = [sys.executable, str(ROOT / "scripts" / "compare_settings.py"), str(TUNING / "01-list-reasons-on.json")]
    result = subprocess.run([*script, str(tmp_path / "fewer.json")], capture_output=True, text=True, timeout=300,
                            check=True)
    assert result.stderr.startswith("note: A scored 30 samples and B 20: each row pairs only the samples both scored")
    recall = next(line for line in result.stdout.splitlines() if "1.5b-instruct | context_recall" in line)
    assert recall.endswith("| 20 |")
    other = {**bench, "dataset": {**bench["dataset"], "sha256": "0" * 64}}
    (tmp_path / "other.json").write_text(json.dumps(other), encoding="utf-8")
    (tmp_path / "mine.json").write_text(json.dumps({**bench, "dataset": {**bench["dataset"], "sha256": "1" * 64}}))
    result = subprocess.run([*script[:2], str(tmp_path / "mine.json"), str(tmp_path / "other.json")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "benched different data files" in result.stderr and result.stdout == ""
    result = subprocess.run([*script[:2], str(tmp_path / "missing.json"), str(tmp_path / "other.json")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].startswith(
        "compare_settings.py: error: cannot read the two runs: FileNotFoundError")

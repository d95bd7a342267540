"""scripts/bench_speed.py as a user runs it: every mistake answered before anything is measured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "bench_speed.py"
DATA = ROOT / "examples" / "samples.jsonl"


def run_script(*options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *options], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("options", "message"), [
    # each of these ended in a traceback, some only after the model had loaded or a config had run
    (["--configs", "default,foo"], "argument --configs: foo: choose from batch-size-1, default"),
    (["--batch-size", "abc"], "argument --batch-size: abc: give a whole number"),
    (["--drafts", "8,-1"], "argument --drafts: -1: give at least 0"),
    (["--linears", "plian"], "argument --linears: plian: choose from packed, plain"),  # was measured as packed
    (["--cuda-attention", "no-cudnn,torch", "--device", "cpu"], "compares attention kernels on CUDA"),  # two same runs
    (["--limit", "0"], "argument --limit: 0: give at least 1"),  # was a ZeroDivisionError after two empty runs
    (["--out", "/nonexistent/speed.md"], "--out /nonexistent/speed.md: its folder does not exist"),  # was lost at the end
    (["--out", "/tmp"], "--out /tmp: a folder; give a markdown file"),
    (["--judge", "nosuch"], "unknown judge 'nosuch'"),
    (["--dtypes", "float32,bogus"], "unknown dtype 'bogus'"),  # was found after all of float32 had run
    (["--metrics", "bogus"], "unknown metric 'bogus'"),
    (["--data", "/nowhere/data.jsonl"], "/nowhere/data.jsonl"),
])
def test_a_mistake_is_one_line_and_exit_2_before_anything_loads(options, message):
    result = run_script("--data", str(DATA), *options)
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("bench_speed.py: error: ") and message in last, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "loading the judge" not in result.stderr


def test_a_sample_without_contexts_is_kept_by_the_length_filters_as_run_scores_it(tmp_path):
    """--max-context-chars counted a sample without retrieved_contexts with a TypeError; `run` scores
    it (its context metrics null). Here the filter passes it and the mistyped metric is what stops."""
    data = tmp_path / "no-contexts.jsonl"
    data.write_text('{"id": "a", "user_input": "When?", "response": "In 1967."}\n')
    result = run_script("--data", str(data), "--max-context-chars", "10", "--max-response-chars", "20",
                        "--metrics", "bogus")
    assert result.returncode == 2 and "unknown metric 'bogus'" in result.stderr and "Traceback" not in result.stderr
    result = run_script("--data", str(data), "--max-response-chars", "3", "--metrics", "bogus")
    assert result.returncode == 2 and "no sample is left to measure" in result.stderr  # the filters leave none

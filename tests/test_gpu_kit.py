"""scripts/gpu_kit.py and bench_speed.py as a lent GPU machine runs them, on this CPU: the models'
small files carried, random weights built from them, and the benchmark run on those by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from localeval import models

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(SCRIPTS))
import gpu_kit  # noqa: E402  (scripts/gpu_kit.py)

JUDGE = "qwen2.5-coder-0.5b-instruct"  # a registered name, so that its measured settings apply


def carried_files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_a_shape_carries_every_file_but_the_weights_and_the_provenance(tmp_path):
    embedder = models.resolve("all-minilm-l6-v2", "embedder", log=lambda _: None).path
    gpu_kit.copy_shape(embedder, tmp_path / "shape")
    carried = carried_files(tmp_path / "shape")
    assert {"config.json", "modules.json", "tokenizer.json", "1_Pooling/config.json"} <= carried
    assert not any(name.endswith(gpu_kit.WEIGHT_SUFFIXES) for name in carried)
    assert sum((tmp_path / "shape" / name).stat().st_size for name in carried) < 2**20  # it travels
    assert carried == carried_files(embedder) - {name for name in carried_files(embedder)
                                                 if name.endswith(gpu_kit.WEIGHT_SUFFIXES)}


def test_the_benchmark_runs_on_random_weights_built_from_the_shapes(tiny_judge, tmp_path):
    shapes, store = tmp_path / "shapes", tmp_path / "store"
    gpu_kit.copy_shape(tiny_judge, shapes / JUDGE)
    (shapes / JUDGE / gpu_kit.PROVENANCE).write_text("{}")  # a real judge's: must not travel on
    gpu_kit.copy_shape(models.resolve("all-minilm-l6-v2", "embedder", log=lambda _: None).path,
                       shapes / "all-minilm-l6-v2")
    environment = {**os.environ, "LOCALEVAL_MODEL_STORE": str(store)}
    subprocess.run([sys.executable, str(SCRIPTS / "gpu_kit.py"), "randomize", str(shapes), str(store)],
                   env=environment, check=True, capture_output=True)
    assert (store / JUDGE / "model.safetensors").is_file() and not (store / JUDGE / gpu_kit.PROVENANCE).exists()

    table = tmp_path / "benchmarks.md"
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_speed.py"), "--data", str(ROOT / "examples" / "samples.jsonl"),
         "--judge", JUDGE, "--embedder", str(store / "all-minilm-l6-v2"), "--device", "cpu", "--limit", "1",
         "--metrics", "context_recall,response_relevancy", "--configs", "default", "--batch-size", "1,4", "--no-roofline",
         "--out", str(table), "--title", "random weights"],
        env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    text = table.read_text()
    # the judge found by its registered name is the random one in the store: fingerprinted by its
    # files, never by the real model's GGUF (the answer cache must not mix the two)
    real = models.registry()[JUDGE].gguf["sha256"][:16]
    assert "### random weights" in text and f"`{JUDGE}|" in text and real not in text
    # several batch sizes (a GPU's, up to what its memory holds) each measured as a config of its own
    rows = {line.split("|")[1].strip(): line.split("|") for line in text.splitlines() if line.startswith("| batch-size-")}
    assert set(rows) == {"batch-size-1", "batch-size-4"}
    assert all(float(row[3]) > 0 for row in rows.values())  # samples/s of runs that scored their sample


def test_the_graph_probes_static_pass_computes_what_the_engines_pass_does(tiny_judge):
    """scripts/gpu_graph_probe.py on this CPU: the pass a CUDA graph would record (a cache of fixed
    size written in place, a 4D mask kept in place) gives the engine's logits, pass after pass; the
    graph itself needs CUDA, so no column of its here."""
    import torch
    from transformers import AutoModelForCausalLM

    import gpu_graph_probe
    from localeval.engine import attention

    model = AutoModelForCausalLM.from_pretrained(tiny_judge, dtype=torch.float32,
                                                 attn_implementation=attention.register()).eval()
    row = gpu_graph_probe.probe(model, torch.device("cpu"), rows=3, context=20, passes=5)
    assert set(row) == {"rows", "cache columns", "engine", "static", "static vs engine"}
    assert float(row["static vs engine"]) < 1e-5  # 3e-7 to 6e-7 here; a position off by one gives 2e-4
    assert row["cache columns"] == "256"

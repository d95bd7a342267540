#!/usr/bin/env bash
# The GPU benchmark on a lent GPU machine, with random weights (scripts/gpu_kit.py says why).
#
# Here, once: python scripts/gpu_kit.py prepare          (writes .gpu/, ignored by git)
# There, through the device tool's `run` with carry [".gpu"]:
#     bash scripts/gpu_bench.sh --limit 12 [more bench_speed.py options, e.g. --batch-size 32,128,512]
# Tables go to $OUT/benchmarks.md (copy them into docs/benchmarks.md), each judge's log beside it
# (where LOG_TAG is set, for a second run of a judge in the same call: its log is $judge-$LOG_TAG.log
# and its section's title ends in LOG_TAG, so neither replaces the first run's).
# GRAPH_PROBE=1 also runs scripts/gpu_graph_probe.py on each judge's random weights ($OUT/$judge-graph-probe.txt);
# BENCH=0 leaves the benchmark out (the probe alone: GRAPH_PROBE=1 BENCH=0 bash scripts/gpu_bench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-bench}
mkdir -p "$OUT"
# what the GPU image lacks, from the carried wheels; the image's own torch and transformers stay
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/wheels/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 LOCALEVAL_MODEL_STORE=/tmp/store
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
# once per machine: a second run in the same call (other options, JUDGES) reuses the weights
[ -f /tmp/store.done ] || { python3 scripts/gpu_kit.py randomize .gpu/shapes /tmp/store && touch /tmp/store.done; }
for judge in ${JUDGES:-qwen2.5-coder-0.5b-instruct qwen2.5-coder-1.5b-instruct}; do
    # a probe that fails says so in its log and leaves the next judge's probe and the benchmark to run
    [ -z "${GRAPH_PROBE:-}" ] || python3 scripts/gpu_graph_probe.py --model "/tmp/store/$judge" 2>&1 \
        | tee "$OUT/$judge-graph-probe.txt" || echo "the graph probe of $judge failed" | tee -a "$OUT/$judge-graph-probe.txt"
    [ "${BENCH:-1}" = 0 ] || python3 scripts/bench_speed.py --data .gpu/data/dev.jsonl --judge "$judge" --device cuda \
        --embedder /tmp/store/all-minilm-l6-v2 --out "$OUT/benchmarks.md" \
        --title "$(head -1 "$OUT/device.txt" | cut -d, -f1) · $judge, random weights · dev.jsonl${LOG_TAG:+ · $LOG_TAG}" "$@" \
        2>&1 | tee "$OUT/$judge${LOG_TAG:+-$LOG_TAG}.log"
done

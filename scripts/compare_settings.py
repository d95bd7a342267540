"""Is setting B really better than setting A? Two bench.json files of the same judges and data, compared.

`python -m localeval bench` measures one setting. Choosing a judge's defaults means comparing two
runs on the same samples, and on 30 samples a difference in Spearman ρ can be noise. For every
judge and metric that both runs scored, this prints ρ under A and under B, ρ on each half of the
samples (odd and even positions: does the change help on both?), and the share of paired
bootstrap resamples of the samples in which B's ρ beats A's, and the share in which the two are
equal (a metric whose scores differ on few samples ties often: "beats in 40%" with 55% ties is
not "loses in 60%"), and how many samples the row pairs: only those both runs scored, so a row's
ρ is the report's only where both ran on the same samples (a note on stderr says where not). Runs
of different data files (their bench.json's sha256) are refused: the same id is not the same sample.

    python scripts/compare_settings.py runs/reasons-on/bench.json runs/reasons-off/bench.json

Each run is scored as it ran (its `--scoring`), or, with `:hard` or `:soft` after its path, under
that scoring (bench re-scores every run both ways). Hard against soft within one run:

    python scripts/compare_settings.py runs/x/bench.json:hard runs/x/bench.json:soft
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from localeval.bench.agreement import spearman  # noqa: E402

RESAMPLES = 2000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="bench.json of setting A (the baseline), optionally :hard or :soft")
    parser.add_argument("b", help="bench.json of setting B (the change), optionally :hard or :soft")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        check_same_data(args.a, args.b)
        a, b = load(args.a), load(args.b)
    except (OSError, ValueError, KeyError) as error:  # a path mistyped, a file that is no bench.json
        parser.error(f"cannot read the two runs: {type(error).__name__}: {error}")
    except DifferentData as error:
        parser.error(str(error))
    rng = np.random.default_rng(args.seed)
    print("| judge | metric | ρ A | ρ B | halves A | halves B | B beats A in | ties | paired |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for judge in sorted(a.keys() & b.keys()):
        for metric in [m for m in a[judge] if m in b[judge]]:
            print(row(judge, metric, a[judge][metric], b[judge][metric], rng))


def dataset(spec: str) -> dict:
    return json.loads(Path(bench_path(spec)).read_text(encoding="utf-8"))["dataset"]


def bench_path(spec: str) -> str:
    return spec.rpartition(":")[0] if spec.endswith((":hard", ":soft")) else spec


class DifferentData(Exception):
    """Two runs of different data files: their samples cannot be paired by id."""


def check_same_data(a: str, b: str) -> None:
    """Refused where the two runs read different files; said where they scored different samples of one
    (--limit): a probe's rows paired 6 of 8 samples, unsaid, and gave ρ the runs' reports did not."""
    data_a, data_b = dataset(a), dataset(b)
    if data_a.get("sha256") and data_b.get("sha256") and data_a["sha256"] != data_b["sha256"]:
        raise DifferentData(f"{bench_path(a)} and {bench_path(b)} benched different data files ({data_a['path']} "
                            f"and {data_b['path']}, other sha256): the same id is not the same sample")
    if data_a["samples"] != data_b["samples"]:
        print(f"note: A scored {data_a['samples']} samples and B {data_b['samples']}: each row pairs only the "
              "samples both scored (its 'paired' column), so its ρ is not either report's", file=sys.stderr)


def load(spec: str) -> dict[str, dict[str, dict[str, tuple[float, float]]]]:
    """{judge: {metric: {sample id: (judge score, human score)}}} for every scored pair; `spec` is a
    bench.json path, optionally with :hard or :soft (default: the scores the run reported)."""
    scoring = spec.rpartition(":")[2] if spec.endswith((":hard", ":soft")) else "judge"
    bench = json.loads(Path(bench_path(spec)).read_text(encoding="utf-8"))
    out: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
    for judge in bench["judges"]:
        if judge["status"] != "ok":
            continue
        per_metric = out.setdefault(judge["name"], {})
        for sample in judge["per_sample"]:
            for metric, pair in sample.items():
                if metric == "id" or scoring not in pair:  # runs before soft scoring have "judge" only
                    continue
                if pair[scoring] is not None and pair["human"] is not None:
                    per_metric.setdefault(metric, {})[sample["id"]] = (pair[scoring], pair["human"])
    return out


def row(judge: str, metric: str, a: dict, b: dict, rng: np.random.Generator) -> str:
    ids = sorted(a.keys() & b.keys())
    human = np.array([a[i][1] for i in ids])
    score_a, score_b = np.array([a[i][0] for i in ids]), np.array([b[i][0] for i in ids])
    if spearman(score_a, human) is None and spearman(score_b, human) is None:  # constant under both
        return f"| {judge} | {metric} | — | — | — | — | — | — | {len(ids)} |"
    halves = [np.arange(len(ids)) % 2 == parity for parity in (0, 1)]
    wins, ties = (None, None) if np.array_equal(score_a, score_b) else b_wins(score_a, score_b, human, rng)
    return (f"| {judge} | {metric} | {fmt(spearman(score_a, human))} | {fmt(spearman(score_b, human))} | "
            f"{' / '.join(fmt(spearman(score_a[h], human[h])) for h in halves)} | "
            f"{' / '.join(fmt(spearman(score_b[h], human[h])) for h in halves)} | "
            f"{'same scores' if wins is None else f'{100 * wins:.0f}%'} | {'—' if ties is None else f'{100 * ties:.0f}%'} | "
            f"{len(ids)} |")


def b_wins(score_a: np.ndarray, score_b: np.ndarray, human: np.ndarray,
           rng: np.random.Generator) -> tuple[float, float]:
    """Shares of paired bootstrap resamples in which B's ρ beats A's, and in which they are equal
    (an undefined ρ counts as 0)."""
    wins = ties = 0
    for _ in range(RESAMPLES):
        pick = rng.integers(0, len(human), len(human))
        rho_a, rho_b = (spearman(s[pick], human[pick]) or 0.0 for s in (score_a, score_b))
        wins += rho_b > rho_a
        ties += rho_b == rho_a
    return wins / RESAMPLES, ties / RESAMPLES


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main()

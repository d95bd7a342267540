"""Does the bias-corrected interval of `run --labels` cover the people's mean? Checked on a bench run.

A bench run has, for every sample, the judge's score and the score people's labels give. This
draws a labeled part of the samples many times (a third by default), corrects the judge's mean
over all of them with it (localeval/estimates.py, as `run --labels` does), and counts how often
the 95% interval covers the people's mean over all samples. Beside it, how often the judge's own
bootstrap interval covers it: an interval around a biased mean covers the wrong value.

    python scripts/check_coverage.py localeval-bench/bench.json [--labeled 10] [--draws 2000]
    # every scoring bench measured, at several label counts (docs/judges.md's check)
    python scripts/check_coverage.py localeval-bench/bench.json --labeled 8,10,12,15,20 --scorings hard,soft
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from localeval.estimates import bootstrap_interval, corrected_mean  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", help="bench.json of a bench run")
    parser.add_argument("--labeled", default=None,
                        help="labeled samples per draw, or several, comma-separated (default: a third)")
    parser.add_argument("--scorings", default="judge",
                        help="which of each sample's scores to check, comma-separated: judge (the scoring the "
                             "judge's settings choose, the default), hard, soft")
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bench = json.loads(Path(args.bench).read_text(encoding="utf-8"))
    rng = np.random.default_rng(args.seed)
    print("| judge | metric | scoring | samples | labeled | judge mean | people's mean | judge interval covers | "
          "corrected interval covers | mean corrected width |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for judge in bench["judges"]:
        if judge["status"] != "ok":
            continue
        for metric in judge["metrics"]:
            for scoring in args.scorings.split(","):
                pairs = np.array([(s[metric][scoring], s[metric]["human"]) for s in judge["per_sample"]
                                  if s[metric].get(scoring) is not None and s[metric]["human"] is not None],
                                 dtype=float)
                for labeled in _label_counts(args.labeled, len(pairs)):
                    print(row(judge["name"], metric, scoring, pairs, labeled, args.draws, rng))


def _label_counts(asked: str | None, samples: int) -> list[int]:
    return [int(n) for n in asked.split(",")] if asked else [max(2, samples // 3)]


def row(judge: str, metric: str, scoring: str, pairs: np.ndarray, n: int, draws: int,
        rng: np.random.Generator) -> str:
    n_all = len(pairs)
    target = pairs[:, 1].mean()
    plain = bootstrap_interval(pairs[:, 0])
    covered, widths = 0, []
    for _ in range(draws):
        picked = rng.choice(n_all, size=n, replace=False)
        low, high = corrected_mean(pairs[:, 0], [tuple(p) for p in pairs[picked]]).interval
        covered += low <= target <= high
        widths.append(high - low)
    return (f"| {judge} | {metric} | {scoring} | {n_all} | {n} | {pairs[:, 0].mean():.3f} | {target:.3f} | "
            f"{'yes' if plain[0] <= target <= plain[1] else 'no'} | {100 * covered / draws:.1f}% | "
            f"{np.mean(widths):.3f} |")


if __name__ == "__main__":
    main()

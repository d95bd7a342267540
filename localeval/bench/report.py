"""bench.json (every number), bench.md (the tables) and bench.html (the tables and the charts).

The tables are built once, as text cells with the best value per column marked, and then
written as markdown or as HTML, so the two files can never disagree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from .. import manual
from ..metrics import BUILT_IN
from ..report import PAGE_BASICS, breakable, content_policy, scrolling
from ..errors import count_of
from ..results import write_atomically
from ..trust import WEAK
from . import svg
from .agreement import RESAMPLES
from .compare import SUPPORT_METRICS
from .cpu_share import allowed_cores, crowded
from .labels import RESPONSE_RELEVANCY, SENTENCE_LABELS

JSON_FILE, MARKDOWN_FILE, HTML_FILE = "bench.json", "bench.md", "bench.html"
RESULTS_DIR = "results"  # each judge's rows, evidence included, as a run's results.jsonl
BENCH_TITLE = "localeval bench"
NO_VALUE = "—"  # a cell with no value (no score, nothing measured), in every table
HIGHER, LOWER = "higher", "lower"  # which way a column is better


def write_reports(out_dir: Path, bench: dict[str, Any]) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        JSON_FILE: json.dumps(bench, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
        MARKDOWN_FILE: markdown(bench),
        HTML_FILE: html_page(bench),
    }
    for name, text in files.items():
        write_atomically(out_dir / name, text)
    return [out_dir / name for name in files]


# --- the tables, independent of the format -------------------------------------------------------


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[dict], float | None]  # from one judge's entry in bench.json
    text: Callable[[float], str] = lambda v: f"{v:.3f}"
    better: str | None = HIGHER  # None: not ranked
    note: Callable[[dict], str] = lambda entry: ""  # appended to the cell; not part of the ranking
    ranked: Callable[[dict], bool] = lambda entry: True  # whether this judge's value may be marked best
    chance: float | None = None  # a best value no better than this is not marked (a probe: 0.500 bolded as best)


@dataclass(frozen=True)
class Table:
    title: str
    headers: list[str]
    rows: list[list[tuple[str, bool]]]  # per judge: (cell text, is the best of its column)
    note: str = ""


def _get(*path: str) -> Callable[[dict], Any]:
    def value(entry: dict):
        for key in path:
            if entry is None:
                return None
            entry = entry.get(key)
        return entry
    return value


def _scores(entry: dict, metric: str) -> dict:
    """A judge's per-sample agreement on `metric` (bench.json's "scores"); empty where it has none."""
    return _get("metrics", metric, "scores")(entry) or {}


def _leniency(metric: str) -> Callable[[dict], float | None]:
    def value(entry: dict) -> float | None:
        scores = _scores(entry, metric)
        judge, human = scores.get("judge_mean"), scores.get("human_mean")
        return None if judge is None or human is None else judge - human
    return value


def _means_note(metric: str) -> Callable[[dict], str]:
    """The two means a leniency is the difference of (a probe: the judge that called every sentence
    attributed, 1.0 against people's 0.54, was visible in bench.json alone)."""
    def note(entry: dict) -> str:
        scores = _scores(entry, metric)
        if scores.get("judge_mean") is None or scores.get("human_mean") is None:
            return ""
        return f" ({scores['judge_mean']:.2f} vs {scores['human_mean']:.2f})"
    return note


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def tables(bench: dict[str, Any]) -> list[Table]:
    metrics = bench["settings"]["metrics"]
    sentence_metrics = [m for m in metrics if m in SENTENCE_LABELS]
    # A judge answered from the cache (bench --cache) was still loaded: only its load time is its own.
    # A speed measured beside other work is not the judge's own either (a probe's were bolded as best).
    speed = [
        Column("valid JSON", _get("summary", "valid_json_rate"), _percent),
        Column("samples/s", _get("measures", "samples_per_second"), lambda v: f"{v:.3g}" if v < 1000 else f"{v:.0f}",
               note=_speed_note(bench["judges"]), ranked=_speed_comparable),
        Column("output tok/s", _get("measures", "output_tokens_per_second"), lambda v: f"{v:.0f}",
               ranked=_speed_comparable),
        Column("prompt tok/s", _get("measures", "prompt_tokens_per_second"), lambda v: f"{v:.0f}",
               ranked=_speed_comparable),
        Column("load s", _get("measures", "load_seconds"), lambda v: f"{v:.1f}", LOWER, ranked=_uncrowded),
        Column("peak MB", _get("measures", "peak_memory_mb"), lambda v: f"{v:.0f}", LOWER, ranked=_judged_afresh),
    ]
    main = [Column("mean ρ", _get("summary", "mean_spearman"), note=_defined_share, chance=0.0),
            *(Column(m, _get("metrics", m, "scores", "spearman"), note=_few_untied_note(m), chance=0.0)
              for m in metrics), *speed]
    per_sentence = [Column(m, _get("metrics", m, "sentences", "balanced_accuracy"), note=_one_class_note(m),
                           chance=0.5) for m in sentence_metrics]
    if sentence_metrics:
        per_sentence.append(Column("mean", _get("summary", "mean_balanced_accuracy"), chance=0.5))
    if any(m in SUPPORT_METRICS for m in metrics):
        per_sentence.append(Column("pooled support", _get("summary", "pooled_support_balanced_accuracy"), chance=0.5))
    if RESPONSE_RELEVANCY in metrics:
        per_sentence += [Column("response_relevancy AUC", _get("metrics", RESPONSE_RELEVANCY, "auc"), chance=0.5),
                         Column("noncommittal", _get("metrics", RESPONSE_RELEVANCY, "noncommittal", "balanced_accuracy"),
                                note=_one_class_flags, chance=0.5)]
    # response_relevancy's score is a mean similarity, its label a 0 or 1: the distance between them ranks
    # nothing (a probe: the judge with a ρ of -0.41 had the least error)
    errors = [Column(m, _get("metrics", m, "scores", "mae"), better=LOWER) for m in metrics if m != RESPONSE_RELEVANCY]
    leniency = [Column(m, _leniency(m), lambda v: f"{v:+.2f}", better=None, note=_means_note(m))
                for m in metrics if m != RESPONSE_RELEVANCY]
    sureness = [Column(m, _get("metrics", m, "scores", "spearman"), better=None, note=_interval_note(m))
                for m in metrics]
    scorings = [Column(m, _get("metrics", m, "scorings", "soft", "spearman"),
                       note=_hard_note(_get("metrics", m, "scorings", "hard", "spearman")), chance=0.0)
                for m in metrics if m in BUILT_IN]  # a metric of one's own is scored its own way alone
    scorings.append(Column("mean", _get("summary", "mean_spearman_soft"), note=_scorings_mean_note, chance=0.0))
    probability_auc = [Column(m, _get("metrics", m, "sentences", "probability_auc"), chance=0.5)
                       for m in sentence_metrics]
    judges = bench["judges"]
    return [
        _table("Agreement with people (Spearman ρ of judge vs human score per sample) and speed", main, judges,
               f"ρ: 1, the judge orders the samples as people do; 0, its order is unrelated to theirs; -1, the "
               f"reverse. A mean ρ below {WEAK} says little of a RAG system ({manual.see('labeled-data')}, \"Reading "
               "the numbers\"). "
               f"mean ρ: an undefined ρ (the judge, or people, gave every sample the same score, or fewer than two "
               f"samples were scored) counts as 0; (n of {len(metrics)}): "
               "how many are defined. Speeds exclude "
               "load time; tokens/s are per second of generation; peak memory is "
               f"{_memory_kind(judges)}.{_cache_caveat(judges)}{_crowded_caveat(judges)}"
               f"{_few_untied_caveat(metrics, judges)}"),
        *([_table("How sure each ρ is: in brackets, its 95% interval when the samples are drawn again", sureness,
                  judges, f"{RESAMPLES:,} resamplings of the samples, each judge's with the same "
                  "draws; an undefined ρ in a draw counts as 0, as in the mean. An interval that reaches below "
                  f"{WEAK} is no promise that the judge reads that metric as people do.")]
          if any(_interval_note(m)(j) for m in metrics for j in judges) else []),
        *([_table("Per sentence: balanced accuracy of the judge's verdicts (0.5 = chance)", per_sentence, judges,
                  _per_sentence_note(metrics, judges))]
          if per_sentence else []),  # the peers' metrics are compared per sample only (docs/labeled-data.md)
        *([_table("Per sample: mean absolute error of the judge's score (lower is better)", errors, judges,
                  "response_relevancy has none: its score is a similarity, its label a 0 or 1"
                  if RESPONSE_RELEVANCY in metrics else "")] if errors else []),
        *([_table("Per sample: how lenient the judge is, its mean score minus people's (0: as strict as people; "
                  "+: it scores higher)", leniency, judges,
                  "In brackets, the judge's mean and people's. A lenient judge's means overstate a RAG system: "
                  "run --labels corrects a run's means by the judge's bias on labeled samples.")]
          if leniency else []),
        *([_table("Spearman ρ soft (the judge's probability of 1) and, in brackets, hard (its 0/1 verdicts), from "
                  "the same answers", scorings, judges,
                  "The run's own scores follow each judge's --scoring choice per metric (its settings above).",
                  marked="Bold marks the best soft ρ. ")] if len(scorings) > 1 else []),  # the mean alone: none
        *([_table("Per sentence: how well the judge's probability of 1 ranks people's true verdicts above false "
                  "ones (ROC AUC; 0.5 = chance)", probability_auc, judges)] if probability_auc else []),
        *([_calibration_table(bench, metrics)] if any(j.get("calibration") for j in judges) else []),
    ]


def _judged_afresh(entry: dict) -> bool:
    """No answer from the cache (bench --cache): only then are its speed and memory the judge's own."""
    return not entry["measures"].get("cache_hits")


def _crowded_caveat(judges: list[dict]) -> str:
    if all(_uncrowded(j) for j in judges if j["status"] == "ok"):
        return ""
    return (" (shared CPU): other work ran beside that judge, so its speeds and load time are not its own, and "
            "are not marked best.")


def _uncrowded(entry: dict) -> bool:
    """No other work beside the judge as it ran (cpu_share.crowded): only then are its times its own."""
    return crowded(entry.get("measures") or {}, allowed_cores()) is None


def _speed_comparable(entry: dict) -> bool:
    return _judged_afresh(entry) and _uncrowded(entry)


def _speed_note(judges: list[dict]) -> Callable[[dict], str]:
    """A samples/s cell's note: why the speed is not the judge's own, and its dtype where the judges ran in
    more than one (a probe's best judge ran in bfloat16, half the bytes a pass reads, the others in float32,
    and only bench.json said so)."""
    dtypes = set(_dtypes(judges).values())

    def note(entry: dict) -> str:
        said = [] if len(dtypes) < 2 else [(entry.get("measures") or {}).get("dtype") or "dtype unknown"]
        said += [] if _judged_afresh(entry) else ["cached"]
        said += [] if _uncrowded(entry) else ["shared CPU"]
        return f" ({', '.join(said)})" if said else ""
    return note


def _cache_caveat(judges: list[dict]) -> str:
    if all(_judged_afresh(j) for j in judges if j["status"] == "ok"):
        return ""
    return (" (cached): some answers came from the answer cache (--cache), so that judge's speed and memory are "
            "not its own, and are not marked best.")


def _hard_note(value: Callable[[dict], float | None]) -> Callable[[dict], str]:
    def note(entry: dict) -> str:
        hard = value(entry)
        return f" ({_plain(hard)})"
    return note


def _scorings_mean_note(entry: dict) -> str:
    """The soft mean's "(n of N)" and, in brackets, the hard mean with its own: each counts an undefined ρ
    as 0, as the main table's mean does, and says so there (the hard mean lacked it: a probe)."""
    def share(mode: str) -> str:
        spearmans = [metric["scorings"][mode]["spearman"] for metric in entry["metrics"].values() if "scorings" in metric]
        defined = sum(value is not None for value in spearmans)
        return "" if defined == len(spearmans) else f"{defined} of {len(spearmans)}"
    hard = entry["summary"]["mean_spearman_hard"]
    soft_share, hard_share = share("soft"), share("hard")
    return (f" ({soft_share})" if soft_share else "") + \
        f" ({_plain(hard)}{f', {hard_share}' if hard_share else ''})"


def _calibration_table(bench: dict[str, Any], metrics: list[str]) -> Table:
    """Per judge and metric: the fitted threshold, and balanced accuracy at 0.5 -> at it on each held-out half."""
    def cell(entry: dict | None) -> str:
        if entry is None:
            return NO_VALUE
        halves = ", ".join(f"{_plain(h['test_balanced_accuracy_at_0.5'])} → {_plain(h['test_balanced_accuracy_fitted'])}"
                           for h in entry["halves"])
        why = entry.get("not_applied_because")  # none in a bench.json from before the reasons were kept
        applied = "applied" if entry["helps_both_halves"] else f"not applied: {why}" if why else "not applied"
        return f"{entry['threshold']:.2f}: {halves} ({applied})"

    rows = [[(j["name"], False)] + [(cell((j.get("calibration") or {}).get(m)), False) for m in metrics]
            for j in bench["judges"] if j["status"] == "ok"]
    return Table("Calibration (bench --calibrate): fitted threshold, and balanced accuracy at 0.5 → at the threshold "
                 "on each half of the samples when fitted on the other", ["judge", *metrics], rows,
                 "A threshold is applied by run --calibration only where, on both held-out halves, it beat the "
                 "verdicts at 0.5 and chance (a balanced accuracy of 0.5), and where both halves' thresholds lean the "
                 "same way as the one fitted on all the samples: below 0.5 for a judge too strict, above for one too "
                 "lenient.")


def _defined_share(entry: dict) -> str:
    """' (3 of 5)' when some rho is undefined and counted as 0, so the mean is not read as more than it is."""
    defined, total = entry["summary"]["spearman_defined"], len(entry["metrics"])
    return "" if defined == total else f" ({defined} of {total})"


def _interval_note(metric: str) -> Callable[[dict], str]:
    """' [0.31, 0.88]': the ρ's 95% interval, where the bench measured one (ten samples or more)."""
    def note(entry: dict) -> str:
        interval = _scores(entry, metric).get("spearman_interval")
        return "" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]"

    return note


FEW_UNTIED = 2  # people's scores that differ from their commonest one, at most, for a ρ to be marked


def _few_untied_note(metric: str) -> Callable[[dict], str]:
    """' (rests on 2)' where people gave all but one or two of the samples compared the same score."""
    def note(entry: dict) -> str:
        scores = _scores(entry, metric)
        untied = scores.get("human_untied")  # absent from a bench.json written before it was counted
        shared = (scores.get("samples") or 0) - (untied or 0)  # how many have the commonest score: a tie needs two
        return f" (rests on {untied})" if scores.get("spearman") is not None and untied and untied <= FEW_UNTIED \
            and shared >= 2 else ""

    return note


def _few_untied_caveat(metrics: list[str], judges: list[dict]) -> str:
    if not any(_few_untied_note(m)(entry) for m in metrics for entry in judges):
        return ""
    return (" (rests on n): people gave all but n of the samples compared the same score, so that ρ says only "
            "where the judge ranks those n: the luck of a sample or two, however many were compared.")


def _memory_kind(judges: list[dict]) -> str:
    kinds = {j["measures"].get("peak_memory_kind") for j in judges if j.get("measures")}
    return " / ".join(sorted(k for k in kinds if k)) or "not measured"


def _table(title: str, columns: list[Column], judges: list[dict], note: str = "", marked: str = "") -> Table:
    """`marked` opens the note where some value is marked best (two judges or more have one)."""
    ranked = [j for j in judges if j["status"] == "ok"]
    best = {c.header: _best_text(c, [j for j in ranked if c.ranked(j)]) for c in columns}
    rows = []
    for judge in judges:
        if judge["status"] != "ok":
            rows.append([(judge["name"], False), ("failed", False)] + [("", False)] * (len(columns) - 1))
            continue
        cells = [(judge["name"], False)]
        for column in columns:
            value = column.value(judge)
            text = NO_VALUE if value is None else column.text(value)
            is_best = value is not None and column.ranked(judge) and text == best[column.header]
            cells.append((text + column.note(judge), is_best))
        rows.append(cells)
    if any(best for row in rows for _, best in row):
        note = marked + note
    return Table(title, ["judge", *(c.header for c in columns)], rows, note)


def _best_text(column: Column, judges: list[dict]) -> str | None:
    """The best value's text; None when fewer than two judges have a value (nothing to compare)."""
    values = [v for v in (column.value(j) for j in judges) if v is not None]
    if column.better is None or len(values) < 2:
        return None
    best = max(values) if column.better == HIGHER else min(values)
    if column.chance is not None and best <= column.chance:  # the best of judges no better than chance
        return None
    if len({column.text(v) for v in values}) == 1:  # all alike: none better
        return None
    return column.text(best)


def ranked_judges(judges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The judges that ran, highest mean rho first. A judge with no defined rho at all (on every metric,
    constant scores or fewer than two samples) ranks nothing, so it is left out."""
    return sorted((j for j in judges if j["status"] == "ok" and j["summary"]["spearman_defined"]),
                  key=lambda j: -j["summary"]["mean_spearman"])


# Labeled samples below which a ranking of judges is said to be noise: a Spearman rho on three
# samples takes one of a handful of values, and a probe's 3-sample bench named a "best judge".
FEW_TO_RANK = 10


def headline(bench: dict[str, Any]) -> str:
    sentences = [_ranking(bench)]
    samples = bench["dataset"]["samples"]
    ran = sum(j["status"] == "ok" for j in bench["judges"])
    if ran and (samples < 2 or samples < FEW_TO_RANK and ranked_judges(bench["judges"])):  # a ρ, to be chance
        what = "this ranking is" if ran > 1 else "its ρ is"
        said = "no ρ can be measured (it pairs two samples or more)" if samples < 2 else f"{what} mostly chance"
        sentences.append(f"On {count_of(samples, 'labeled sample')} {said}: label {FEW_TO_RANK} or "
                         f"more ({manual.see('labeled-data')})")
    elif few := _few_compared(bench):
        rests = (f"The ρ of {next(iter(few))} rests on {count_of(next(iter(few.values())), 'sample')}" if len(few) == 1
                 else f"The ρ of {', '.join(f'{metric} ({compared})' for metric, compared in few.items())} rest on "
                 f"fewer than {FEW_TO_RANK} samples each")
        sentences.append(f"{rests} (the others had no label or no score for it), so "
                         f"{'it is' if len(few) == 1 else 'they are'} mostly chance: label {FEW_TO_RANK} or more for "
                         f"{'it' if len(few) == 1 else 'each'} ({manual.see('labeled-data')})")
    if not_run := bench.get("not_run"):  # absent from a bench.json written before interrupts kept a report
        sentences.append(f"Interrupted before {', '.join(not_run)} finished: not compared")
    return ". ".join([*(sentence.rstrip(".") for sentence in sentences[:-1]), sentences[-1]])  # the last keeps its own


def _people_never_differ(judge: dict[str, Any], metrics: list[str]) -> bool:
    """Whether people's scores, as compared with this judge's, are one value in every metric (a bench.json
    written before it counted them says nothing)."""
    scores = [_scores(judge, metric) for metric in metrics]
    return all(score.get("samples", 0) >= 2 and score.get("human_untied") == 0 for score in scores)


def _few_compared(bench: dict[str, Any]) -> dict[str, int]:
    """{metric: samples compared} for the metrics whose ρ, for some judge that ran, pairs fewer than FEW_TO_RANK
    samples, though the bench has more: a metric a sample cannot score (context_recall without a reference)."""
    compared = {metric: min((_scores(judge, metric).get("samples", FEW_TO_RANK) for judge in bench["judges"]
                             if judge["status"] == "ok" and _scores(judge, metric).get("spearman") is not None),
                            default=FEW_TO_RANK)
                for metric in bench["settings"]["metrics"]}
    return {metric: samples for metric, samples in compared.items() if samples < FEW_TO_RANK}


def _ranking(bench: dict[str, Any]) -> str:
    ok = [j for j in bench["judges"] if j["status"] == "ok"]
    ranked = ranked_judges(bench["judges"])
    if not ranked and ok and _people_never_differ(ok[0], bench["settings"]["metrics"]):
        return ("No judge has a defined mean Spearman: people gave every sample the same score in every metric, so "
                "there is no order of theirs to compare a judge's with; label answers of better and worse quality "
                f"({manual.see('labeled-data')}).")
    if not ranked:
        return "No judge completed." if not ok else ("No judge has a defined mean Spearman (each score was "
                                                     "constant, or paired on fewer than two samples).")
    first, total = ranked[0], len(bench["settings"]["metrics"])
    defined = first["summary"]["spearman_defined"]
    across = (f"mean Spearman ρ = {first['summary']['mean_spearman']:.3f}{_interval(first)} across "
              f"{count_of(total, 'metric')}")
    if defined < total:
        across += f" ({total - defined} undefined, counted as 0)"
    if bench["best_judge"] is None:  # ranked, yet none best: the first two tie (command.best_judge)
        return f"No best judge: {first['name']} and {ranked[1]['name']} tie, {across}"
    if len(ok) == 1:
        return f"One judge: {first['name']}, {across}"
    if len(ranked) == 1:
        return f"Best judge: {first['name']}, {across}"
    title = "Best judge" if _decisive(bench["best_judge"]) else "Ahead here, not decisively"
    return (f"{title}: {first['name']}, {across} (next: {ranked[1]['name']}, "
            f"{ranked[1]['summary']['mean_spearman']:.3f}{_certainty(bench['best_judge'])})")


def _interval(judge: dict[str, Any]) -> str:
    """The 95% interval of a judge's mean ρ (samples drawn again), where the bench measured one."""
    interval = judge["summary"].get("mean_spearman_interval")
    return "" if interval is None else f" (95% interval {interval[0]:.2f} to {interval[1]:.2f})"


def _decisive(best: dict[str, Any]) -> bool:
    """Whether the best judge's lead holds when the samples are drawn again: its 95% interval above 0. A
    10-sample bench named a "Best judge" whose lead ran from -0.23 to +0.67 (a judge-choosing probe)."""
    ahead = best.get("ahead_of_next")
    return ahead is None or ahead["gap_interval"][0] > 0  # a bench.json from before it was measured: as it said


def _certainty(best: dict[str, Any]) -> str:
    """How often the best judge stays first when the samples are drawn again (compare.ranking_certainty);
    nothing for a bench.json written before it was measured."""
    ahead = best.get("ahead_of_next")
    if ahead is None:
        return ""
    low, high = ahead["gap_interval"]
    ties = f", ties in {100 * ahead['tied']:.0f}%" if ahead["tied"] else ""
    undecided = "" if low > 0 else ", which holds 0: label more samples to tell the two apart"
    return (f", which does better in {100 * ahead['second_better']:.0f}% of {ahead['resamples']:,} resamplings of "
            f"the samples{ties}; the lead's 95% interval {low:+.2f} to {high:+.2f}{undecided}")


def context_lines(bench: dict[str, Any]) -> list[str]:
    data, settings = bench["dataset"], bench["settings"]
    languages = ", ".join(f"{n} {lang}" for lang, n in data["languages"].items())
    return [
        f"Dataset: {data['path']} ({count_of(data['samples'], 'sample')}: {languages})",
        f"Device: {bench['device']}; time taken: {bench['total_seconds']:.1f} s (started {bench['started']})",
        (f"Settings: reasons {settings['reasons']}, example {settings.get('example', 'off')}, "
         f"scoring {settings.get('scoring', 'hard')}, "
         f"batch size {settings['batch_size']}, max batch tokens {settings['max_batch_tokens']}, "
         f"dtype {_dtypes_ran(bench)}, "
         f"answer cache {'on' if settings['cache'] else 'off'}, embedder {settings['embedder']}"),
        *_resumed_lines(bench),
        *_judge_settings_lines(bench),
        *bench.get("warnings", ()),  # what reading the data warned of (absent from an earlier bench.json)
    ]


def _dtypes_ran(bench: dict[str, Any]) -> str:
    """The --dtype asked and, for auto, what each judge ran in: "auto" said nothing of bfloat16 against
    float32 (a probe)."""
    asked, ran = bench["settings"]["dtype"], _dtypes(bench["judges"])
    if asked != "auto" or not ran:
        return asked
    if len(set(ran.values())) == 1:
        return f"auto ({next(iter(ran.values()))})"
    return "auto (" + ", ".join(f"{name} {dtype}" for name, dtype in ran.items()) + ")"


def _dtypes(judges: list[dict]) -> dict[str, str]:
    """The dtype each judge that ran ran in, where its measures say."""
    return {j["name"]: dtype for j in judges if j["status"] == "ok" and (dtype := (j.get("measures") or {}).get("dtype"))}


def _resumed_lines(bench: dict[str, Any]) -> list[str]:
    """Which judges a resumed bench kept as an earlier process measured them (bench --resume)."""
    if not (resumed := bench.get("resumed")):
        return []
    kept = resumed["kept"]
    by_start = {start: [name for name, when in kept.items() if when == start] for start in sorted(set(kept.values()))}
    measured = "; ".join(f"{', '.join(names)} as the bench started {start} measured {'it' if len(names) == 1 else 'them'}"
                         for start, names in by_start.items())
    return [f"Resumed (--resume), keeping {measured}; the time taken is this run's alone"]


def _judge_settings_lines(bench: dict[str, Any]) -> list[str]:
    """What each judge was asked and scored with, per metric: reasons and worked example on or off,
    scoring hard, soft or calibrated."""
    lines = []
    for judge in bench["judges"]:
        parts = []
        for option, chosen in judge.get("settings", {}).items():
            if option == "thresholds":
                continue
            named = {True: "on", False: "off"}
            values = sorted(dict.fromkeys(named.get(v, v) for v in chosen.values()), key=lambda v: v != "on")
            states = [f"{value} for {', '.join(m for m, v in chosen.items() if named.get(v, v) == value)}"
                      for value in values]
            if states:
                parts.append(f"{option} {'; '.join(states)}")
        if parts:
            lines.append(f"{judge['name']}: {'. '.join(parts)}")
    return lines


def _per_sentence_note(metrics: list[str], judges: list[dict] = ()) -> str:
    """What the per-sentence table's pooled and AUC columns are, for those of them this bench has, and
    what a column of one class of labels means, where it has one."""
    support = [m for m in SUPPORT_METRICS if m in metrics]
    notes = [f"pooled support: the attributed/supported verdicts of {', '.join(support)} together."] if support else []
    if RESPONSE_RELEVANCY in metrics:
        notes.append("AUC: judge score against relevant / not relevant. noncommittal: the judge's flag (every "
                     "question it wrote flagged noncommittal) against people's, per response.")
    if any(_one_class_note(m)(entry) for m in metrics for entry in judges) or any(map(_one_class_flags, judges)):
        notes.append("(one class): people gave every sentence (or response) compared the same verdict, so the figure "
                     "is the judge's hit rate on that verdict, from 0 to 1, with no chance level at 0.5.")
    return " ".join([*notes, "Accuracy and F1 are in bench.json."])


def _one_class_note(metric: str) -> Callable[[dict], str]:
    """" (one class)" where people's verdicts of the sentences compared were all true or all false:
    balanced accuracy is then that class's recall (agreement.balanced_accuracy)."""
    def note(entry: dict) -> str:
        sentences = _get("metrics", metric, "sentences")(entry)
        one_class = sentences and sentences["sentences"] and sentences["human_true"] in (0, sentences["sentences"])
        return " (one class)" if one_class else ""

    return note


def _one_class_flags(entry: dict) -> str:
    """_one_class_note's for the noncommittal flag: people flagged every response compared, or none."""
    flags = _get("metrics", RESPONSE_RELEVANCY, "noncommittal")(entry) or {}
    return " (one class)" if flags.get("samples") and flags["human_flagged"] in (0, flags["samples"]) else ""


def failures(bench: dict[str, Any]) -> list[str]:
    return [failure_of(j["name"], j["error"]) for j in bench["judges"] if j["status"] != "ok"]


def failure_of(judge: str, error: str) -> str:
    """A failed judge and why, named once: a folder's error begins with its path already."""
    return error if error.startswith(f"{judge}: ") else f"{judge}: {error}"


# --- markdown ---------------------------------------------------------------------------------


def markdown(bench: dict[str, Any]) -> str:
    lines = [f"# {BENCH_TITLE}", "", f"**{markdown_text(headline(bench))}**", ""]
    lines += [f"- {markdown_text(line)}" for line in context_lines(bench)]
    for table in tables(bench):
        lines += ["", f"## {markdown_text(table.title)}", "", markdown_table(table)]
        if table.note:
            lines += ["", markdown_text(table.note)]
    failed = failures(bench)
    if failed:
        lines += ["", "## Failed judges", ""] + [f"- {markdown_text(line)}" for line in failed]
    return "\n".join(lines) + "\n"


def markdown_text(text: str) -> str:
    """`text` as plain text in Markdown, whatever the names and data in it hold: a judge folder named
    `<img src=x onerror=...>` with backticks was written into bench.md as HTML and markup, a field name from
    the data in a warning too, and a line break ended a table's row (a security probe; bench.html escapes as
    it writes). localeval's own text uses none of these characters."""
    return re.sub(r"([\\`<>\[\]])", r"\\\1", " ".join(text.split()))


def markdown_table(table: Table) -> str:
    def cell(text: str, best: bool) -> str:
        text = markdown_text(text).replace("|", "\\|")
        return f"**{text}**" if best else text

    lines = ["| " + " | ".join(table.headers) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(table.headers) - 1)) + "|"]
    lines += ["| " + " | ".join(cell(text, best) for text, best in row) + " |" for row in table.rows]
    return "\n".join(lines)


# --- HTML -------------------------------------------------------------------------------------

STYLE = PAGE_BASICS + """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
tbody th{font-weight:inherit;text-align:left;white-space:nowrap}.wide svg{max-width:none}
table{border-collapse:collapse;margin:.6em 0}td,th{border-bottom:1px solid #ddd;padding:4px 7px}
td{text-align:right;font-variant-numeric:tabular-nums}td:first-child,th:first-child{text-align:left}
td.best{font-weight:bold;background:#eaf4ea}.winner{font-size:1.35em;padding:.6em .9em;background:#eef5ff;
border-left:5px solid #1f77b4;margin:1em 0}.note{color:#666;font-size:12px}.failed{color:#b3261e}
.panels{display:flex;flex-wrap:wrap;gap:8px}svg{max-width:100%;height:auto}details{margin:.5em 0}
th{vertical-align:bottom;text-align:right}td:first-child{white-space:nowrap}.wide{overflow-x:auto;max-width:100%}
"""


def html_page(bench: dict[str, Any]) -> str:
    ok = [j for j in bench["judges"] if j["status"] == "ok"]
    parts = [
        f"<!doctype html><html lang='en'><meta charset='utf-8'>{content_policy()}"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{BENCH_TITLE}</title>"
        f"<style>{STYLE}</style>",
        "<main><h1>localeval bench</h1>",
        f"<div class='winner'>{escape(headline(bench))}</div>",
        *(f"<div>{escape(line)}</div>" for line in context_lines(bench)),
        *(f"<p class='failed'>failed: {escape(line)}</p>" for line in failures(bench)),
    ]
    if ok:
        parts += [f"<p>{svg.legend([j['name'] for j in ok])}</p>", _charts(bench, ok)]
    for number, table in enumerate(tables(bench), 1):
        parts += [f"<h2 id='table-{number}'>{escape(table.title)}</h2>", html_table(table, f"table-{number}")]
        if table.note:
            parts.append(f"<p class='note'>{escape(table.note)}</p>")
    parts += [_details(j, bench["settings"]["metrics"]) for j in ok]
    return "\n".join(parts) + "\n</main>\n"


def html_table(table: Table, title_id: str) -> str:
    """The table named by its heading (`title_id`), each row by its first cell; the best values said as such
    to a screen reader too, not by bold and colour alone (an accessibility probe)."""
    # Headers break at underscores: the widest table has a column per metric, and whole metric names
    # side by side are wider than the page. The scrolling box is for what still does not fit.
    head = "<thead><tr>" + "".join(f"<th scope='col'>{breakable(h)}</th>" for h in table.headers) + "</tr></thead>"
    body = "".join("<tr>" + "".join(_cell(column, text, best) for column, (text, best) in enumerate(row)) + "</tr>"
                   for row in table.rows)
    return f"{scrolling(labelled_by=title_id)}<table aria-labelledby='{title_id}'>{head}<tbody>{body}</tbody></table></div>"


def _cell(column: int, text: str, best: bool) -> str:
    if column == 0:
        return f"<th scope='row'>{escape(text)}</th>"
    said = "<span class='sr-only'> (best)</span>" if best else ""
    return f"<td{' class=best' if best else ''}>{escape(text)}{said}</td>"


def _charts(bench: dict[str, Any], ok: list[dict]) -> str:
    metrics = bench["settings"]["metrics"]
    names = [j["name"] for j in ok]
    rho = svg.grouped_bars(
        "Spearman ρ, judge vs human score per sample (1 = same ranking)", [*metrics, "mean"], names,
        {j["name"]: [*(j["metrics"][m]["scores"]["spearman"] for m in metrics), j["summary"]["mean_spearman"]]
         for j in ok}, -1.0, 1.0, (-1, -0.5, 0, 0.5, 1))
    groups, getters = [], []
    for metric in metrics:
        if metric in SENTENCE_LABELS:  # a bar of one class of labels has no chance level: its name says so
            groups.append(metric + (" (one class)" if any(_one_class_note(metric)(j) for j in ok) else ""))
            getters.append(_get("metrics", metric, "sentences", "balanced_accuracy"))
    if any(m in SUPPORT_METRICS for m in metrics):
        groups.append("pooled_support")
        getters.append(_get("summary", "pooled_support_balanced_accuracy"))
    if RESPONSE_RELEVANCY in metrics:
        groups.append("response_relevancy_AUC")
        getters.append(_get("metrics", RESPONSE_RELEVANCY, "auc"))
    balanced = svg.grouped_bars(
        "Balanced accuracy of per-sentence verdicts (response_relevancy: ROC AUC)", groups, names,
        {j["name"]: [get(j) for get in getters] for j in ok}, 0.0, 1.0, (0, 0.25, 0.5, 0.75, 1),
        reference=(0.5, "chance")) if groups else ""
    panels = "".join(_scatter(metric, ok) for metric in metrics)
    # the bar charts scroll sideways in their box: shrunk to a phone's width their labels were 3-4 px tall
    rho, balanced = (f"{scrolling('chart')}{chart}</div>" if chart else "" for chart in (rho, balanced))
    return (f"<h2>Agreement per metric</h2>{rho}{balanced}"
            f"<h2>Judge score against human score, per sample</h2><div class='panels'>{panels}</div>")


def _scatter(metric: str, ok: list[dict]) -> str:
    points, notes = {}, {}
    for judge in ok:
        points[judge["name"]] = [
            (row[metric]["human"], row[metric]["judge"], row["id"]) for row in judge["per_sample"]
            if row[metric]["human"] is not None and row[metric]["judge"] is not None
        ]
        rho = judge["metrics"][metric]["scores"]["spearman"]
        notes[judge["name"]] = f"ρ {NO_VALUE if rho is None else f'{rho:.2f}'}"
    return svg.scatter(metric, [j["name"] for j in ok], points, notes)


def _details(judge: dict[str, Any], metrics: list[str]) -> str:
    measures = "".join(f"<tr><td>{escape(_measure_label(k))}</td><td>{escape(_plain(v))}</td></tr>"
                       for k, v in judge["measures"].items())
    head = "<tr><th>sample</th>" + "".join(f"<th>{breakable(m)}<br>judge / human</th>" for m in metrics) + "</tr>"
    rows = "".join(
        f"<tr><td>{escape(str(row['id']))}</td>"
        + "".join(f"<td>{_plain(row[m]['judge'])} / {_plain(row[m]['human'])}</td>" for m in metrics) + "</tr>"
        for row in judge["per_sample"]
    )
    return (f"<details><summary>{escape(judge['name'])}: how it ran, and every sample's scores</summary>"
            f"<div class='wide'><table>{measures}</table></div><div class='wide'><table>{head}{rows}</table></div>"
            f"<p class='note'>{NO_VALUE}: in a score, none (no human label for the metric, or no valid answer from "
            "the judge); in how it ran, not measured</p></details>")


def _measure_label(key: str) -> str:
    """bench.json's name of a measure, as a reader says it: load_seconds -> load (s)."""
    for suffix, unit in (("_per_second", "/s"), ("_seconds", " (s)"), ("_mb", " (MB)")):
        if key.endswith(suffix):
            return key.removesuffix(suffix).replace("_", " ") + unit
    return key.replace("_", " ")


def _plain(value: Any) -> str:
    if value is None:
        return NO_VALUE
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)

"""Verdict thresholds fitted against people (`bench --calibrate`), and read back (`run --calibration`).

A judge's greedy verdict is 1 when its probability of 1 passes 0.5. A small judge may be
systematically too lenient or too strict, and then a different threshold separates the
sentences people call true from the rest far better. `fit_threshold` picks the threshold with
the highest balanced accuracy on labeled verdicts. Thirty samples are few, so the fit is also
checked out of sample: fitted on one half of the samples and scored on the other, both ways. A
threshold is applied only where that check holds on both held-out halves (it beats 0.5 there, and
chance) and the halves' thresholds lean the same way as the whole's (_why_not_applied). The rest
is noise: recorded with the reason, not applied.

The file names each judge's thresholds per metric, those `run --calibration` applies under
"judges" and the rest under "not_applied", each with what fitting it did, and under "fitted_with"
what the thresholds belong to: the judge's weights (weights_of), its folder when it is not a
registered judge, how each metric asked it (reasons, worked example) and by which scoring rules. A
threshold fitted on one model's probabilities means nothing for another's, so `run` refuses other
weights (a folder's weights are known by sampling its files' contents, so a copy keeps them:
models.folder_weights); asked another way, or under other rules, the same judge's probabilities
move, so `run` warns.

    {"localeval_calibration": 1, "data": "dev.jsonl", "samples": 30, "fitted_on_samples": ["3f2a...", ...],
     "judges": {"qwen2.5-coder-0.5b-instruct": {"context_recall": {"threshold": 0.67, ...}}},
     "not_applied": {"qwen2.5-coder-0.5b-instruct": {"answer_supported_precision": {...}}},
     "fitted_with": {"qwen2.5-coder-0.5b-instruct": {"weights": "8d2c...", "folder": null,
                                                     "reasons": {"context_recall": false}, "example": {...},
                                                     "scoring_rules": "2026-11-29"}}}

A file written before "fitted_with" existed is applied by the judge's name alone, as it was, warned of
as fitted under other scoring rules.
"fitted_on_samples" knows the labeled samples by their texts (Sample.texts_digest): `run --labels` with
the same samples corrects a judge with the labels it was fitted to, and is warned (seen_in_fitting).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import models
from .errors import LocalevalWarning, UserError, count_of
from .metrics import METRICS
from .options import given, option
from .results import write_atomically
from .samples import Sample
from .scoring_rules import SCORING_RULES, WHAT_CHANGED, other_rules

CALIBRATION_FILE = "calibration.json"
FORMAT = 1
# Fewest labeled samples a calibration is fitted on: each half holds five, and with fewer a threshold
# passes the check on held-out halves by the luck of two or three sentences (a probe's 4-sample bench fitted one).
MIN_SAMPLES = 10
CHANCE = 0.5  # balanced accuracy of a coin, or of one verdict for every sentence
# why a threshold is not applied (not_applied_because); balanced accuracy needs true and false labels
# to compare the judge on, in all the samples and in each half
ONE_CLASS = "a half without both kinds of label"
NOTHING_TO_CORRECT = "fitted on all the samples it is 0.5"
# A calibration file holds a few numbers per judge (a few kilobytes): a larger file is some other file,
# and is not read whole (/dev/zero was, until memory ran out)
MAX_FILE_BYTES = 1 << 24


class CalibrationWarning(LocalevalWarning):
    """A calibrated metric asks the judge otherwise, or under other scoring rules, than the bench that fitted its
    threshold (fit_warnings); or the calibration applies none, is outdated, or was fitted on the labeled samples."""


def check_enough_samples(samples: int) -> None:
    if samples < MIN_SAMPLES:
        raise UserError(f"--calibrate needs at least {MIN_SAMPLES} labeled samples (it fits on one half and checks "
                        f"on the other); this bench has {samples}")


def balanced_accuracy_at(threshold: float, probabilities: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Balanced accuracy of the verdicts `probability >= threshold` against the labels."""
    p, y = np.asarray(probabilities, dtype=float), np.asarray(labels, dtype=bool)
    recalls = [np.mean((p[y == value] >= threshold) == value) for value in (True, False) if np.any(y == value)]
    return float(np.mean(recalls)) if recalls else None


def fit_threshold(probabilities: Sequence[float], labels: Sequence[bool]) -> float:
    """The threshold with the highest balanced accuracy; among equals, the one nearest 0.5.

    Candidates lie midway between neighbouring distinct probabilities (and beyond both ends), so
    every distinct way of cutting the labeled verdicts is tried once.
    """
    values = np.unique(np.asarray(probabilities, dtype=float))
    if len(values) == 0:
        return 0.5
    candidates = np.concatenate([[values[0] / 2], (values[:-1] + values[1:]) / 2, [(values[-1] + 1) / 2], [0.5]])
    scored = [(balanced_accuracy_at(t, probabilities, labels) or 0.0, -abs(t - 0.5), t) for t in candidates]
    return float(max(scored)[2])


def calibrate(verdicts: dict[str, list[tuple[int, float, bool]]]) -> dict[str, dict[str, Any]]:
    """Per metric, from (sample index, judge probability, human label) triples: the fitted
    threshold, balanced accuracy at 0.5 and at the threshold, and the check on halves of the samples."""
    return {metric: _calibrate_one(triples) for metric, triples in verdicts.items() if triples}


def _both_classes(labels: np.ndarray) -> bool:
    """Balanced accuracy compares a judge on true and on false labels: with one class it is a recall,
    which a threshold at either end maximises, so nothing can be fitted or checked."""
    return bool(labels.any() and not labels.all())


def _calibrate_one(triples: list[tuple[int, float, bool]]) -> dict[str, Any]:
    samples = np.array([t[0] for t in triples])
    p, y = np.array([t[1] for t in triples]), np.array([t[2] for t in triples], dtype=bool)
    threshold = fit_threshold(p, y) if _both_classes(y) else 0.5
    halves, checkable = [], _both_classes(y)
    for fit_parity in (0, 1):  # samples at even positions, then odd: fit on one, test on the other
        fit, test = samples % 2 == fit_parity, samples % 2 != fit_parity
        fittable = _both_classes(y[fit])
        checkable = checkable and fittable
        fitted = fit_threshold(p[fit], y[fit]) if fittable else 0.5
        halves.append({
            "fit_on": "even" if fit_parity == 0 else "odd",
            "threshold": fitted,
            "test_balanced_accuracy_at_0.5": balanced_accuracy_at(0.5, p[test], y[test]),
            "test_balanced_accuracy_fitted": balanced_accuracy_at(fitted, p[test], y[test]),
        })
    labeled_samples = len(set(samples.tolist()))
    why_not = (_too_few(labeled_samples) if labeled_samples < MIN_SAMPLES else
               _why_not_applied(threshold, halves) if checkable else ONE_CLASS)
    return {
        "threshold": threshold,
        "samples": labeled_samples,
        "verdicts": len(y),
        "balanced_accuracy_at_0.5": balanced_accuracy_at(0.5, p, y),
        "balanced_accuracy_fitted": balanced_accuracy_at(threshold, p, y),
        "halves": halves,
        "helps_both_halves": why_not is None,
        "not_applied_because": why_not,
    }


def _too_few(labeled_samples: int) -> str:
    """A metric labeled on fewer samples than a bench needs (a sample without a reference gives context_recall
    no sentence): its halves were checked on two samples each, a probe found, however many the bench had."""
    return f"verdicts from {count_of(labeled_samples, 'sample')}, fewer than {MIN_SAMPLES}"


def _why_not_applied(threshold: float, halves: list[dict[str, Any]]) -> str | None:
    """Why a threshold fitted on all the samples is not one to apply; None when it is.

    Fitting on one half and testing on the other checks the fitting, so the number applied must be
    what the halves found: a judge too strict (threshold below 0.5) or too lenient (above) in all
    three fits. And on each held-out half the fitted threshold must beat both 0.5 and chance (as
    measured on that half: a point estimate): a threshold that lifts a judge worse than a coin no
    further than a coin's 0.5 (often by giving every sentence one verdict) has not made it right."""
    tested = [(h["test_balanced_accuracy_fitted"] or 0, h["test_balanced_accuracy_at_0.5"] or 0) for h in halves]
    if threshold == 0.5:  # applied, it would only turn a soft-scored metric to hard verdicts
        return NOTHING_TO_CORRECT
    if any(fitted <= at_half for fitted, at_half in tested):
        return "no gain on a held-out half"
    if any(fitted <= CHANCE for fitted, _ in tested):
        return "no better than chance on a held-out half"
    if len({threshold > 0.5, *(h["threshold"] > 0.5 for h in halves)}) > 1:
        return "the halves lean another way"
    return None


def write_calibration(path: Path, judges: dict[str, dict[str, Any]], data: str, samples: list[Sample],
                      belongs_to: dict[str, dict[str, Any]]) -> None:
    """`judges`: {judge: calibrate(...)}; the thresholds that pass the check (helps_both_halves) are the ones applied.
    `samples`: the labeled samples they were fitted on. `belongs_to`: {judge: fitted_with(...)}, what
    each judge's thresholds belong to."""
    applied = {judge: {m: e for m, e in fitted.items() if e["helps_both_halves"]} for judge, fitted in judges.items()}
    rejected = {judge: {m: e for m, e in fitted.items() if not e["helps_both_halves"]} for judge, fitted in judges.items()}
    payload = {"localeval_calibration": FORMAT, "data": data, "samples": len(samples),
               "fitted_on_samples": sorted({sample.texts_digest() for sample in samples}), "judges": applied,
               "not_applied": rejected, "fitted_with": {judge: belongs_to[judge] for judge in judges}}
    write_atomically(path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def fitted_with(weights: str | None, folder: str | None, settings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What a judge's thresholds belong to: its weights (weights_of), its folder (resolved, for a judge
    that is not registered), how each metric asked it (tuning.settings_used's reasons and example) and
    the scoring rules it was asked by (scoring_rules.py: what a sentence is, what each metric asks)."""
    return {"weights": weights, "folder": folder,
            **{setting: dict(settings.get(setting, {})) for setting in ASKED_BY}, "scoring_rules": SCORING_RULES}


ASKED_BY = ("reasons", "example")  # the settings that change a verdict's probability, not only its use


def load_thresholds(path: str | Path, judge: str, folder: str | None = None) -> tuple[dict[str, float], dict[str, Any]]:
    """The thresholds a calibration file gives `judge` ({metric: threshold}), and how to name the file
    in a summary (its path and digest). A judge that is a folder (`folder`, resolved) is also found by
    that folder, however it was typed in either command."""
    path = Path(path).expanduser()
    try:
        path = _file_in(path)  # inside: a folder that cannot be searched is "cannot read it", as a file is
        raw = _read_small_file(path)
        payload = json.loads(raw)
    except OSError as error:
        raise UserError(f"{given('calibration', path)}: cannot read it ({error.strerror or error})") from None
    except ValueError:  # not JSON, not UTF-8, or a number too long to read (a traceback, exit 1: a review)
        raise UserError(f"{given('calibration', path)}: not JSON; give the calibration.json of `bench --calibrate`") from None
    if not isinstance(payload, dict) or payload.get("localeval_calibration") != FORMAT:
        raise UserError(f"{given('calibration', path)}: not a localeval calibration file (written by `bench --calibrate`)")
    judges = payload.get("judges") or {}
    recorded = payload.get("fitted_with") if isinstance(payload.get("fitted_with"), dict) else {}
    key = _entry_for(judge, folder, [*judges, *(payload.get("not_applied") or {})], recorded)
    if key is None:
        how = " (a folder is found by its path, or a copy of one by its weights)" if folder else ""
        raise UserError(f"{given('calibration', path)} has no thresholds for judge '{judge}'{how}; it calibrates: "
                        f"{', '.join(judges) or 'no judge'}")
    entries, outdated = _rechecked(judges.get(key, {}))
    try:
        written = {metric: entry["threshold"] for metric, entry in entries.items()}
    except (AttributeError, KeyError, TypeError):
        raise UserError(f"{given('calibration', path)}: the entry of judge '{key}' is not a map of metric to "
                        "{\"threshold\": number}") from None
    thresholds = _checked_thresholds(path, key, written)
    named = {"path": str(path), "sha256": hashlib.sha256(raw).hexdigest(), "judge": key,
             "fitted_on": payload.get("data"), "thresholds": thresholds,
             "fitted_with": recorded.get(key) if isinstance(recorded.get(key), dict) else None,
             OUTDATED: outdated, FITTED_ON_SAMPLES: _digests(payload.get("fitted_on_samples"))}
    return thresholds, named


OUTDATED = "not_applied_now"  # {metric: why}: a file's thresholds that today's check refuses (_rechecked)


def _rechecked(entries: Any) -> tuple[Any, dict[str, str]]:
    """A judge's applied entries as today's check takes them, and {metric: why} for those it refuses.

    A file written before a threshold had to beat chance and lean the way its halves do (entries without
    "not_applied_because") would apply thresholds `bench --calibrate` now refuses; each entry keeps its
    halves, so it is checked again here. Entries of another shape are left to the checks that follow."""
    if not isinstance(entries, dict):
        return entries, {}
    outdated = {}
    for metric, entry in entries.items():
        try:
            if why := entry.get("not_applied_because"):  # moved from not_applied by hand: it says why not
                outdated[metric] = why
            elif entry.get("samples", MIN_SAMPLES) < MIN_SAMPLES:  # counted per metric since (older files: not)
                outdated[metric] = _too_few(entry["samples"])
            elif "not_applied_because" not in entry and (why := _why_not_applied(entry["threshold"], entry["halves"])):
                outdated[metric] = why
        except (KeyError, TypeError, AttributeError):  # no halves (a file edited by hand): applied as written
            continue
    return {metric: entry for metric, entry in entries.items() if metric not in outdated}, outdated


def outdated_thresholds(calibration: dict[str, Any] | None) -> str | None:
    """The warning for thresholds an older file applied and today's check refuses (_rechecked)."""
    outdated = (calibration or {}).get(OUTDATED)
    if not outdated:
        return None
    return (f"{calibration['path']}: its thresholds for {', '.join(f'{metric} ({why})' for metric, why in outdated.items())} "
            "are not applied, since the check of `bench --calibrate` refuses them (the file was written by an older "
            "localeval, whose check was looser, or edited); run bench --calibrate again to write the file anew")


FITTED_ON_SAMPLES = "fitted_on_samples"  # kept in load_thresholds' naming for seen_in_fitting, not in a summary


def _digests(recorded: Any) -> frozenset[str]:
    """The fitted-on samples' digests; none from a file written before they were kept (or edited into another shape)."""
    return frozenset(d for d in recorded if isinstance(d, str)) if isinstance(recorded, list) else frozenset()


def seen_in_fitting(calibration: dict[str, Any] | None, samples: list[Sample], human: dict[str, Any] | None,
                    path: Any) -> str | None:
    """The warning for labels (`human`, by sample id, from `path`) that correct a judge whose thresholds were
    fitted on the same samples: on them the calibrated judge agrees with people better than elsewhere, so the
    bias they measure is too small and the corrected means lean towards the judge's, with intervals too narrow.
    None where every one of the scored `samples` is labeled for every calibrated metric: the corrected mean is then
    people's own. A sample counts where it labels a calibrated metric (run --labels may leave metrics out)."""
    if not calibration or not calibration["thresholds"] or not human:
        return None
    # the calibrated metrics some samples label and others do not: where every one is labeled, people's own mean
    leaning = [metric for metric in calibration["thresholds"]
               if 0 < sum(human.get(sample.id, {}).get(metric) is not None for sample in samples) < len(samples)]
    labeled = [sample for sample in samples if any(human.get(sample.id, {}).get(metric) is not None
                                                   for metric in leaning)]
    if not labeled:
        return None
    seen = sum(sample.texts_digest() in calibration[FITTED_ON_SAMPLES] for sample in labeled)
    if not seen:
        return None
    return (f"{given('labels', path)}: {seen} of its {len(labeled)} labeled samples are ones the thresholds of "
            f"{given('calibration', calibration['path'])} were fitted on (bench --calibrate): on them the calibrated "
            "judge agrees with people better than elsewhere, so the corrected means of "
            f"{', '.join(leaning)} lean towards the judge's and their intervals are too narrow; "
            "correct with labels the calibration did not see")


def _file_in(path: Path) -> Path:
    """A bench's --out folder stands for the calibration.json in it: the folder is what a user has at hand."""
    if not path.is_dir():
        return path
    if (path / CALIBRATION_FILE).exists():  # not a regular file: _read_small_file says so
        return path / CALIBRATION_FILE
    raise UserError(f"{given('calibration', path)}: a folder with no {CALIBRATION_FILE} in it; give the file that "
                    "`bench --calibrate` writes in its --out folder (bench without --calibrate writes none)")


def _read_small_file(path: Path) -> bytes:
    """The file's bytes; a pipe or a device (reading one would block, or never end) and a file too large
    to be a calibration are refused before it is opened."""
    if path.exists() and not path.is_file():
        raise UserError(f"{given('calibration', path)}: not a regular file (a pipe, device or socket); give the "
                        "calibration.json of `bench --calibrate`")
    if path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
        raise UserError(f"{given('calibration', path)}: {path.stat().st_size / 2**20:.0f} MiB, not a calibration "
                        "file (`bench --calibrate` writes a few kilobytes)")
    return path.read_bytes()


def _checked_thresholds(path: Path, judge: str, written: dict[str, Any]) -> dict[str, float]:
    """The thresholds as written, each checked to be a metric's and a probability: 5 or NaN scored every
    verdict 0, and NaN made the run's summary.json a file that strict JSON readers refuse; true read as 1.0."""
    for metric, threshold in written.items():
        if metric not in METRICS:
            raise UserError(f"{given('calibration', path)}: judge '{judge}' has a threshold for '{metric}', which is "
                            f"no metric; the metrics are {', '.join(METRICS)}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise UserError(f"{given('calibration', path)}: the threshold of judge '{judge}' for {metric} is "
                            f"{json.dumps(threshold)}; a threshold is a probability, a number from 0 to 1")
    return {metric: float(threshold) for metric, threshold in written.items()}


def applied(named: dict[str, Any], thresholds: dict[str, float], metrics: list[str]) -> dict[str, Any]:
    """`load_thresholds`' naming of the file, its thresholds narrowed to the metrics a run scores: what
    `run`'s summary and `evaluate()`'s result say was applied."""
    return {**named, "thresholds": {name: thresholds[name] for name in metrics if name in thresholds},
            OUTDATED: {name: why for name, why in named.get(OUTDATED, {}).items() if name in metrics}}


def described(calibration: dict[str, Any] | None) -> dict[str, Any] | None:
    """The calibration as a summary names it: without the digests of the samples it was fitted on."""
    return calibration and {key: value for key, value in calibration.items() if key != FITTED_ON_SAMPLES}


def _entry_for(judge: str, folder: str | None, keys: list[str], recorded: dict[str, Any]) -> str | None:
    """The file's name for this judge: its own name (a folder's is its absolute path), else the entry
    fitted on the same folder, else, for a folder, the one fitted on the same weights elsewhere (a copy,
    a checkout on another machine)."""
    if judge in keys:
        return judge
    entries = {key: recorded[key] for key in keys if isinstance(recorded.get(key), dict)}
    same_folder = [key for key, entry in entries.items() if folder and entry.get("folder") == folder]
    if same_folder or not folder or not entries:
        return same_folder[0] if same_folder else None
    weights = models.folder_weights(folder)
    return next((key for key, entry in entries.items() if entry.get("weights") == weights), None)


def weights_of(folder: str | None, fingerprint: str | None) -> str | None:
    """What a judge's thresholds are checked against: a folder judge's weights as a copy keeps them
    (models.folder_weights), a registered judge's GGUF digest (its fingerprint)."""
    return models.folder_weights(folder) if folder else fingerprint


def fit_warnings(calibration: dict[str, Any] | None, judge: Any, asked: dict[str, dict[str, Any]]) -> list[str]:
    """What a run applying `calibration` (`applied`'s, None: none) with `judge` (the pipeline's, found not
    loaded) must be told, or refused (check_weights); `asked` is tuning.settings_used of the run's metrics.
    A file without "fitted_with" (written before it existed) is taken on trust but for its scoring rules,
    which it cannot have shared, and a judge's weights are read only here, for a calibration that names some."""
    if not calibration:
        return []
    other_rules_warning = fitted_by_other_rules(calibration)
    if not calibration.get("fitted_with"):
        return [other_rules_warning] if other_rules_warning else []
    check_weights(calibration, weights_of(models.judge_folder(judge), getattr(judge, "fingerprint", None)))
    return [warning for warning in (asked_otherwise(calibration, asked), other_rules_warning) if warning]


def applies_none(calibration: dict[str, Any] | None, in_file: dict[str, float]) -> str | None:
    """A calibration that gives none of the chosen metrics a threshold: `in_file`, the thresholds the file has for
    the judge. Said by run and evaluate() alike (evaluate() said nothing: a review)."""
    if calibration is None or calibration["thresholds"]:
        return None
    why = (f"its thresholds, for {', '.join(in_file)}, are for none of the metrics chosen" if in_file else
           "none passed the check on held-out halves of the labeled samples")
    return (f"{calibration['path']} applies no threshold to {calibration['judge']} ({why}); every metric is "
            f"scored as {option('scoring')} says")


def scoring_overridden(calibration: dict[str, Any] | None, scoring: str) -> str | None:
    """An explicit scoring (hard or soft) that the calibrated metrics do not follow: a threshold decides
    each of their verdicts. `calibration`: what `applied` names."""
    if not calibration or not calibration["thresholds"] or scoring == "auto":
        return None
    return (f"{', '.join(calibration['thresholds'])} scored by the thresholds of "
            f"{given('calibration', calibration['path'])}, not as {given('scoring', scoring)} says: a threshold "
            "decides each verdict of its metric")


def check_weights(calibration: dict[str, Any], weights: str | None) -> None:
    """Thresholds fitted on other weights than the judge's (`weights`: weights_of) are refused: one
    model's probabilities say nothing of another's."""
    recorded = calibration["fitted_with"]
    if weights and recorded.get("weights") and recorded["weights"] != weights:
        raise UserError(f"{given('calibration', calibration['path'])}: its thresholds for '{calibration['judge']}' "
                        f"were fitted on other weights ({recorded['weights']}; this judge's are {weights}), so they "
                        "do not apply; fit them again with `bench --calibrate` on this judge")


def asked_otherwise(calibration: dict[str, Any], asked: dict[str, dict[str, Any]]) -> str | None:
    """The calibrated metrics that this run asks otherwise than the bench that fitted them."""
    recorded = calibration["fitted_with"]
    differ = sorted((metric, setting) for setting in ASKED_BY for metric in calibration["thresholds"]
                    if metric in recorded.get(setting, {}) and metric in asked.get(setting, {})
                    and recorded[setting][metric] != asked[setting][metric])
    if not differ:
        return None
    how = "; ".join(f"{metric} {option(setting)} {_on_off(asked[setting][metric])} now, "
                    f"{_on_off(recorded[setting][metric])} when fitted" for metric, setting in differ)
    return (f"{', '.join(dict.fromkeys(metric for metric, _ in differ))} asked the judge otherwise than the bench "
            f"that fitted {given('calibration', calibration['path'])} ({how}): the judge's probabilities move "
            "with how it is asked, so those thresholds may not fit")


def fitted_by_other_rules(calibration: dict[str, Any]) -> str | None:
    """Thresholds applied that were fitted under other scoring rules: the judge was asked of other sentences,
    or otherwise, so its probabilities may have moved (warned, as another asking is: the weights are the same)."""
    rules = (calibration.get("fitted_with") or {}).get("scoring_rules")
    if rules == SCORING_RULES or not calibration["thresholds"]:
        return None
    fitted_by = other_rules(rules) if rules else "a localeval that recorded no scoring rules in it"
    return (f"the thresholds of {given('calibration', calibration['path'])} for {', '.join(calibration['thresholds'])} "
            f"were fitted by {fitted_by}: what a sentence is and what each metric asks the judge may have changed "
            "since, and the judge's probabilities with them, so they may not fit; fit them again with `bench "
            f"--calibrate`; {WHAT_CHANGED}")


def _on_off(value: Any) -> str:
    return "on" if value is True else "off" if value is False else json.dumps(value)

"""Labeled records: a sample's fields plus a `labels` object of human verdicts, sentence by sentence.

The sample fields are read by localeval's own loader (same aliases, same checks, same
messages). Every per-sentence label array must line up with the pysbd sentences localeval
judges, so that a judge's verdicts can be compared with the human ones one by one; a file that
does not line up is refused, naming the record and the array, before any judge runs.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import manual
from ..data import CONTENT_FIELDS, RecordError, load_samples, read_text
from ..errors import DataError, LocalevalWarning, UserError, closest, count_of, first_few, shortened, warn
from ..metrics import BUILT_IN, METRICS
from ..options import given, option
from ..samples import Sample
from ..text import DEFAULT_LANGUAGE, LINE_BREAK, SUPPORTED_LANGUAGES, split_chunks, split_sentences

LABELED_EXTENSIONS = (".jsonl", ".json")
FORMAT_DOC = manual.see("labeled-data")
# where a label count differs: pysbd's sentences, after the line breaks inside one are read as spaces
# Labels counted on plain pysbd, or by a localeval before a change of its splitting, count otherwise where a text
# holds code, wrapped lines, or a quote pysbd puts after its end (an upgrade probe: the message did not say why)
SHOW_SPLIT = (f"localeval.text.split_sentences and split_chunks print them; labels counted on plain pysbd, or by an "
              f"earlier localeval, may count such a text otherwise; {FORMAT_DOC} says how")


@dataclass(frozen=True)
class SentenceLabels:
    """Where a metric's human verdicts are (`key` in `labels`); the judge's are where the metric
    says (Metric.verdicts: its typed evidence, metrics/evidence.py)."""

    key: str
    text: str | None = None  # the sample field whose sentences are labeled; None: the context, chunk by chunk


SENTENCE_LABELS = {
    "context_relevance": SentenceLabels("context_sentences_relevant"),
    "context_recall": SentenceLabels("reference_sentences_attributed", text="reference"),
    "answer_supported_precision": SentenceLabels("response_sentences_supported", text="response"),
    "context_supported_precision": SentenceLabels("context_sentences_supported_by_response"),
}
# The peers' metrics have no labels of their own: their human scores come from another metric's
# labels, through the metric's own formula (docs/labeled-data.md). context_precision: a chunk is
# useful when it holds a sentence needed to answer the question. faithfulness: the share of
# supported response sentences, the nearest people's labels come to a share of supported claims.
DERIVED_FROM = {"context_precision": "context_relevance", "faithfulness": "answer_supported_precision"}
RESPONSE_RELEVANCY = "response_relevancy"
RESPONSE_LABELS = ("response_relevant", "response_noncommittal")
LABEL_KEYS = (*(spec.key for spec in SENTENCE_LABELS.values()), *RESPONSE_LABELS)


@dataclass(frozen=True)
class LabeledSample:
    sample: Sample
    sentences: dict[str, tuple[bool, ...]]  # metric -> human verdict per sentence, chunks flattened in order
    response_relevant: bool | None = None  # None when response_relevancy is not benchmarked
    response_noncommittal: bool | None = None
    chunk_sizes: tuple[int, ...] = ()  # sentences per retrieved chunk, to regroup the flattened context labels
    own: dict[str, float | None] = field(default_factory=dict)  # a metric of one's own -> people's score (None: unlabeled)

    def human_score(self, metric: str) -> float | None:
        """The score a perfect judge would give: the metric's own formula (Metric.formula, hard
        scoring) applied to the human verdicts, as typed verdicts of the metric's kind; for a metric
        of one's own, the score people gave the sample."""
        if not self.labeled_for(metric):  # left unlabeled (run --labels)
            return None
        if metric not in BUILT_IN:
            return self.own[metric]
        if metric == RESPONSE_RELEVANCY:
            return float(self.response_relevant)
        judged = METRICS[metric]()
        if metric == "context_precision":  # one verdict per chunk: useful when it holds a relevant sentence
            labels = [any(chunk) for chunk in self.chunks(DERIVED_FROM[metric])]
        else:
            labels = self.sentences[DERIVED_FROM.get(metric, metric)]
        return judged.formula([judged.verdict_type("", int(label)) for label in labels])

    def labeled_for(self, metric: str) -> bool:
        """Whether people labeled the sample for `metric` (run --labels may leave a metric out, or a metric of one's
        own null); a label list with no sentence in it (an empty reference) is labeled."""
        if metric not in BUILT_IN:
            return self.own.get(metric) is not None
        if metric == RESPONSE_RELEVANCY:
            return self.response_relevant is not None
        return DERIVED_FROM.get(metric, metric) in self.sentences

    def chunks(self, metric: str) -> list[tuple[bool, ...]]:
        """A context metric's flattened labels, chunk by chunk again."""
        flat, grouped, start = self.sentences[metric], [], 0
        for size in self.chunk_sizes:
            grouped.append(flat[start:start + size])
            start += size
        return grouped


SHOWN_PROBLEMS = 5  # records whose problem one error names in full


def read_labeled(path: str | Path, metrics: list[str], partial: bool = False) -> list[LabeledSample]:
    """Every labeled sample of `path`, with the labels the chosen `metrics` need, checked for alignment.
    `partial` (run --labels): a sample may leave a metric unlabeled (its labels absent or null), and then does
    not correct that metric's mean; bench compares every sample on every metric, so it needs them all."""
    path = Path(path).expanduser()
    if path.suffix.lower() not in LABELED_EXTENSIONS and path.exists():
        spreadsheet = (" (its labels are lists of true/false per sentence, which a spreadsheet's cells do not hold: "
                       "keep the labels in JSON Lines)" if path.suffix.lower() in (".csv", ".tsv", ".xlsx") else "")
        raise DataError(path, f"labeled data must be .jsonl or .json{spreadsheet} (format: {FORMAT_DOC})")
    samples = load_samples(path)  # file, JSON and sample-field errors, with the loader's messages
    labeled, problems, records = [], [], []
    for sample, (place, record) in zip(samples, _raw_records(path)):
        records.append(record)
        try:
            labeled.append(_labeled(sample, record, place, metrics, partial))
        except DataError as problem:  # the others too: a file labeled by several people has several
            problems.append(problem)
    if len(samples) > 1 and not any(isinstance(record.get("labels"), dict) for record in records):
        raise DataError(path, f"none of its {len(samples)} samples has 'labels': a labeled file gives each sample "
                              f"people's labels (format: {FORMAT_DOC}); is it the data rather than its labels?")
    if problems:
        raise problems[0] if len(problems) == 1 else _together(path, problems)
    _warn_of_near_keys(path, records)
    return labeled


def _warn_of_near_keys(path: Path, records: list[dict]) -> None:
    """A label key that is one of localeval's mistyped is the labeler's own and not read: said, since beside
    the right key it went unnoticed ("response_relevent": true next to "response_relevant": false, a probe)."""
    near: dict[tuple[str, str], int] = {}
    for record in records:
        for key in record.get("labels") or {}:
            if any(known in key for known in LABEL_KEYS):  # the right key, or one the labeler built on it (_v2)
                continue
            if (meant := closest(key, LABEL_KEYS, 0.85)) is not None:
                near[(key, meant)] = near.get((key, meant), 0) + 1
    if near:
        said = "; ".join(f"{key!r} ({count_of(count, 'record')}): did you mean {meant!r}?"
                         for (key, meant), count in near.items())
        warn(LocalevalWarning(f"{path}: labels localeval does not read, each close to one it does: {said}"),
             stacklevel=3)


def _together(path: Path, problems: list[DataError]) -> DataError:
    """Every record's problem in one error, the first few in full ("line 2, field 'labels.x': ...")."""
    shown = [problem.after_path.removeprefix(", ") for problem in problems[:SHOWN_PROBLEMS]]
    more = f"; and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
    return DataError(path, f"{len(problems)} labeled records have problems: {'; '.join(shown)}{more}")


def warn_of_samples_left_out(path: str | Path, labeled: list[LabeledSample], metrics: list[str]) -> None:
    """bench's: the samples that drop out of a metric's agreement figures, said, so none rests on fewer
    samples unseen. One that gives it no sentence to judge (an empty reference, say) has no human score;
    one whose retrieval came back empty has verdicts set by rule (all 0), not by the judge, which would
    count as agreement with people who labeled the same."""
    for metric in metrics:
        if metric == RESPONSE_RELEVANCY:  # its two flags are required, and its judge is always asked
            continue
        unscored = [item.sample.id for item in labeled if item.human_score(metric) is None]
        if unscored:
            why = "give it no sentence to judge" if metric in BUILT_IN else f"have labels.{metric} null"
            warn(LocalevalWarning(f"{path}: {metric}: {len(unscored)} of {len(labeled)} labeled samples {why} "
                                  f"({first_few(unscored)}): no human score, left out of its agreement with people"),
                 stacklevel=2)
        rule = METRICS[metric]().decided_by_rule
        by_rule = [item.sample.id for item in labeled if item.human_score(metric) is not None and rule(item.sample)]
        if by_rule:
            warn(LocalevalWarning(f"{path}: {metric}: {len(by_rule)} of {len(labeled)} labeled samples retrieved "
                                  f"nothing ({first_few(by_rule)}): their verdicts are 0 by rule, not the judge's, so "
                                  "they are left out of its agreement with people"), stacklevel=2)


def human_scores(path: str | Path, samples: list[Sample], metrics: list[str],
                 left_out: frozenset[str] = frozenset()) -> dict[str, dict[str, float | None]]:
    """{sample id: {metric: the score people's labels give}} for `run --labels`: every labeled
    sample must be one of the run's `samples` (matched by id), whose judge scores it corrects, or
    one of the data's samples that the run `left_out` (--limit), whose labels are not used."""
    try:
        every = read_labeled(path, metrics, partial=True)
    except DataError as error:  # named as the option it came from: the run reads two files
        raise UserError(f"{given('labels', error.path)}{error.after_path}") from None
    labeled = [item for item in every if item.sample.id not in left_out]
    if not labeled:
        raise UserError(f"{given('labels', path)}: none of its labeled samples is among the {len(samples)} scored "
                        "(--limit left them out); score more samples or label some of these")
    if len(labeled) < len(every):  # allowed (a quick check with --limit), but the corrections rest on fewer
        warn(LocalevalWarning(f"{given('labels', path)}: {len(every) - len(labeled)} of its {len(every)} labeled "
                              f"samples are beyond --limit and not used; the corrections rest on the {len(labeled)} "
                              "within it"),
             stacklevel=2)
    by_id = {sample.id: sample for sample in samples}
    strangers = [item.sample.id for item in labeled if item.sample.id not in by_id]
    if strangers:
        numbered = all(sample_id.isdigit() for sample_id in strangers)  # line numbers, where a file had no ids
        raise UserError(f"{given('labels', path)}: {len(strangers)} labeled sample(s) are not among the samples scored "
                        f"(matched by id): {first_few(strangers)}"
                        + ("; a file without ids is matched by line number, so give both files the same ids"
                           if numbered else _nearest_id(strangers, by_id)))
    # an id alone may be a line number: the labels must be of this very sample
    changed = [(item.sample, by_id[item.sample.id]) for item in labeled
               if _texts(item.sample) != _texts(by_id[item.sample.id])]
    if changed:
        raise UserError(f"{given('labels', path)}: {_other_texts(changed)}")
    _say_unlabeled(path, metrics, labeled, every)
    return {item.sample.id: {m: item.human_score(m) for m in metrics} for item in labeled}


def _say_unlabeled(path: str | Path, metrics: list[str], labeled: list[LabeledSample], every: list[LabeledSample]
                   ) -> None:
    """The run's metrics that no `labeled` sample (those scored) labels: refused where that is every one (a file
    labeled for other metrics), else warned, since their means stay the judge's alone while the others are
    corrected. `every`: the file's labeled samples, --limit's left out included, which may label them."""
    def named(metric: str) -> str:
        beyond = any(item.labeled_for(metric) for item in every)  # every one of them beyond --limit
        return f"{metric} ({_labels_of(metric)}{', labeled only on samples --limit leaves out' if beyond else ''})"

    unlabeled = [metric for metric in metrics if not any(item.labeled_for(metric) for item in labeled)]
    where = "; ".join(map(named, unlabeled))
    if len(unlabeled) == len(metrics):
        raise UserError(f"{given('labels', path)}: none of its samples labels a metric of this run: {where} "
                        f"(format: {FORMAT_DOC})")
    if unlabeled:
        warn(LocalevalWarning(f"{given('labels', path)}: no sample labels {where}: "
                              f"{'its mean stays' if len(unlabeled) == 1 else 'their means stay'} the judge's alone"),
             stacklevel=3)


TEXTS = ("user_input", "retrieved_contexts", "response", "reference")  # what a label is made on


def _texts(sample: Sample) -> tuple:
    return tuple(getattr(sample, field) for field in TEXTS)


def _other_texts(changed: list[tuple[Sample, Sample]]) -> str:
    """How labeled samples' texts differ from the data's samples of their ids: every field of each named, the
    first with where it differs. Only the first field of the first sample was named, and a data file made again
    was mended one run at a time."""
    first, data = changed[0]
    fields = _differing(first, data)
    where = _first_difference(getattr(first, fields[0]), getattr(data, fields[0]))
    also = "".join(f", and another {field}" for field in fields[1:])
    if len(changed) == 1:
        return (f"sample {first.id} has another {fields[0]} than the sample of that id in the data{where}{also}; labels "
                "hold only for the texts they were made on (label it again, or score the data it was labeled on; a "
                "file without ids is matched by line number)")
    others = first_few([f"{labeled.id} ({', '.join(_differing(labeled, data))})" for labeled, data in changed[1:]])
    return (f"{len(changed)} labeled samples have other texts than the samples of their ids in the data: {first.id} "
            f"has another {fields[0]}{where}{also}; also {others}; labels hold only for the texts they were made on "
            "(label them again, or score the data they were labeled on; a file without ids is matched by line number)")


def _differing(labeled: Sample, data: Sample) -> list[str]:
    return [field for field in TEXTS if getattr(labeled, field) != getattr(data, field)]


def _nearest_id(strangers: list[str], ids: Iterable[str]) -> str:
    """A "did you mean" for the first of the labels' unknown ids that is one of the data's written
    another way: in another case, spacing or zero padding ("q-1" for "q-01"), or the same letters in
    another Unicode form, which no eye can tell apart (é as one code point or as e and an accent: a file
    saved on a Mac)."""
    by_form = {_comparable(sample_id): sample_id for sample_id in ids}
    for stranger in strangers:
        if (match := by_form.get(_comparable(stranger))) is None:
            continue
        form = unicodedata.normalize("NFC", stranger) == unicodedata.normalize("NFC", match)
        return (f"; {stranger!r} is the data's {match!r} written another way"
                + (": the same letters in other Unicode code points (NFD and NFC); write both files' ids in one form"
                   if form else ""))
    return ""


def _comparable(sample_id: str) -> str:
    """An id in the form that two ways of writing it share: Unicode NFC, lower case, spaces and zero
    padding of numbers left out."""
    folded = " ".join(unicodedata.normalize("NFC", sample_id).casefold().split())
    return re.sub(r"\d+", lambda digits: str(int(digits.group())), folded)


# --- the raw records again, for their labels: the loader has already checked the JSON -------


Place = Callable[[str, str], DataError]  # (message, field) -> the error, placed at the record


def _raw_records(path: Path) -> Iterator[tuple[Place, Any]]:
    text = read_text(path)  # as the loader read it: UTF-16 with its BOM too (a paths probe: a traceback)
    if path.suffix.lower() == ".jsonl":
        for number, line in enumerate(LINE_BREAK.split(text), start=1):  # the loader's breaks: its line numbers
            if line.strip():
                yield (lambda message, field, n=number: DataError(path, message, line=n, field=field)), json.loads(line)
        return
    data = json.loads(text)
    records = data["samples"] if isinstance(data, dict) else data
    for number, record in enumerate(records, start=1):
        yield (lambda message, field, n=number: RecordError(path, message, n, field)), record


def _first_difference(labeled: Any, scored: Any) -> str:
    """Where two texts (or lists of chunks) first differ, for a message: a double space is hard to find.
    Written as ascii() writes them, so that an accent made of two characters shows as what it is."""
    if isinstance(labeled, (list, tuple)) and isinstance(scored, (list, tuple)):
        if len(labeled) != len(scored):
            return f" ({count_of(len(labeled), 'chunk')} in the labels, {len(scored)} in the data)"
        chunk = next((n for n, (one, other) in enumerate(zip(labeled, scored), 1) if one != other), None)
        return "" if chunk is None else \
            _first_difference(labeled[chunk - 1], scored[chunk - 1]).replace(" (", f" (chunk {chunk}, ", 1)
    if not (isinstance(labeled, str) and isinstance(scored, str)):
        return ""  # one side has none (a reference left out): the field's name says it all
    at = next((i for i, (one, other) in enumerate(zip(labeled, scored)) if one != other), min(len(labeled), len(scored)))
    start = max(0, at - 10)
    return (f" (from character {at + 1}: {ascii(labeled[start:at + 10])} in the labels, {ascii(scored[start:at + 10])} "
            "in the data)")


# --- one record's labels ------------------------------------------------------------------


def _labeled(sample: Sample, record: dict, place: Place, metrics: list[str], partial: bool) -> LabeledSample:
    labels = record.get("labels")
    if labels is None:
        outside = [key for key in LABEL_KEYS if key in record]
        where = (f"; its {first_few(outside, 2)} {'is' if len(outside) == 1 else 'are'} beside the sample's fields: "
                 "put them in a 'labels' object") if outside else "; a labeled file holds only labeled samples"
        raise place(f"sample {sample.id} has no 'labels': a labeled file gives each sample people's labels "
                    f"(format: {FORMAT_DOC}){where}", "labels")
    if not isinstance(labels, dict):
        raise place(f"sample {sample.id}: expected an object of label arrays", "labels")
    if not CONTENT_FIELDS & record.keys():  # an id and labels, as a spreadsheet's export makes them (a labels probe)
        raise place(f"sample {sample.id} has labels but none of the sample's texts: a labeled record repeats the "
                    f"texts its labels were made on ({', '.join(TEXTS)}), since an id alone may be a line number and "
                    f"texts change; copy them in from the data (format: {FORMAT_DOC})", "labels")
    # a score, as a metric of one's own is labeled (null: an empty column of a sheet, read as no label)
    if scored := [name for name, value in labels.items() if name in BUILT_IN and value is not None]:
        raise place(f"sample {sample.id}: {scored[0]} is one of localeval's metrics, labeled by people's verdicts "
                    f"({_labels_of(scored[0])}), not with one score: its formula makes their score of those "
                    f"(format: {FORMAT_DOC})", f"labels.{scored[0]}")
    language = sample.language or DEFAULT_LANGUAGE
    if language not in SUPPORTED_LANGUAGES:
        raise place(f"sample {sample.id}: pysbd cannot split language '{language}'", "language")
    sentences = {}
    for metric in dict.fromkeys(DERIVED_FROM.get(m, m) for m in metrics):  # in order: the same error first, each time
        spec = SENTENCE_LABELS.get(metric)
        if spec is not None and not (partial and labels.get(spec.key) is None):  # else left unlabeled
            fail = lambda message, key=spec.key: place(f"sample {sample.id}: {message}", f"labels.{key}")
            if labels.get(spec.key) is None:
                shape = "a list of true/false" if spec.text else "a list of true/false per retrieved_contexts chunk"
                missing = _missing(spec.key, metric, labels) if spec.key not in labels else \
                    f"null, where {metric} needs {shape}"
                raise fail(missing + _nothing_to_label(spec, sample))
            sentences[metric] = _aligned(spec, labels[spec.key], sample, language, fail)
            if spec.text and any(sentences[metric]) and METRICS[metric]().decided_by_rule(sample):
                # an empty retrieval supports nothing: a true here is a slip, and would correct the judge's 0 up
                raise fail(f"a {spec.text} sentence is labeled true, but the sample retrieved nothing (its "
                           f"retrieved_contexts are empty) to support it: label every one false")
    sizes = (tuple(len(chunk) for chunk in split_chunks(sample.retrieved_contexts or (), language))
             if "context_precision" in metrics else ())  # only it regroups the context labels by chunk
    flags = {}
    if RESPONSE_RELEVANCY in metrics:
        # bench compares the noncommittal flag too; a run's correction reads response_relevant alone
        needed = RESPONSE_LABELS if not partial else [key for key in RESPONSE_LABELS if labels.get(key) is not None]
        for key in needed:
            if not isinstance(labels.get(key), bool):
                what = _missing(key, RESPONSE_RELEVANCY, labels) if key not in labels else \
                    f"expected true or false (needed for {RESPONSE_RELEVANCY}); got {_shown(labels[key])}" + \
                    (" (write true and false, not 1 and 0)" if labels[key] in (0, 1) else "")
                raise place(f"sample {sample.id}: {what}", f"labels.{key}")
            flags[key] = labels[key]
        if flags.get("response_relevant") and flags.get("response_noncommittal"):  # the guide: never both
            raise place(f"sample {sample.id}: response_relevant and response_noncommittal are both true, but a "
                        f"noncommittal response is never relevant: label it response_relevant: false ({FORMAT_DOC})",
                        "labels.response_relevant")
    own = {metric: _own_score(metric, labels, lambda message, key=metric: place(f"sample {sample.id}: {message}",
                                                                              f"labels.{key}"))
           for metric in metrics if metric not in BUILT_IN and not (partial and metric not in labels)}
    return LabeledSample(sample, sentences, **flags, chunk_sizes=sizes, own=own)


def _labels_of(metric: str) -> str:
    """Where a metric's labels go: 'labels.reference_sentences_attributed', 'labels.mine' for one's own."""
    if metric not in BUILT_IN:
        return f"labels.{metric}"
    if metric == RESPONSE_RELEVANCY:  # and response_noncommittal, which only bench compares
        return "labels.response_relevant"
    source = DERIVED_FROM.get(metric, metric)
    return f"{'from ' if source != metric else ''}labels.{SENTENCE_LABELS[source].key}"


def _own_score(metric: str, labels: dict, fail) -> float | None:
    """People's score of the sample for a metric of one's own: labels[metric], a number from 0 to 1 (true and
    false for 1 and 0), or null where it was not labeled."""
    if metric not in labels:
        raise fail(_missing(metric, metric, labels, ": a metric of your own is labeled with its name, a score from 0 "
                                                    "to 1"))
    value = labels[metric]
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    if not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise fail(f"expected a score from 0 to 1 (or true, false, null) for {metric}; got {_shown(value)}"
                   f"{_rescaling(value)}")
    return float(value)


def _rescaling(value: Any) -> str:
    """How a rating on another scale becomes a score: annotators' sheets hold 1-5 ratings and percentages (the scale
    is the sheet's, which one value cannot tell, so both ways are said)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 < value <= 100:
        return ""
    return (" (on another scale, rescale every label to 0-1: a rating from 1 to 5 as (rating - 1) / 4, a percentage "
            "as / 100)")


def _missing(key: str, metric: str, labels: dict, what: str = "") -> str:
    """A needed label that is absent: the metric that needs it (`what` the label is, where that needs saying), and
    a key of the labeler's that looks like a typo of it (other keys, an annotator's notes, are the labeler's own)."""
    theirs = [name for name in labels if name not in LABEL_KEYS and name not in METRICS]  # a metric of one's own: read
    close = closest(key, theirs, 0.85)
    if close:
        typo = f"; '{close}' is there: did you mean '{key}'?"
    else:
        typo = f"; localeval reads none of {first_few([repr(name) for name in theirs], 3)}" if theirs else ""
    return f"missing{what} (needed for {metric}; {option('metrics')} chooses the metrics that need labels){typo}"


def _nothing_to_label(spec: SentenceLabels, sample: Sample) -> str:
    """Where the sample has no text for the label (no reference, say): what to write for it all the same."""
    text = getattr(sample, spec.text) if spec.text else "".join(sample.retrieved_contexts or ())
    if text and text.strip():
        return ""
    # the context's labels are a list per chunk, blank chunks included: [[], []] for two
    empty = "[]" if spec.text else json.dumps([[]] * len(sample.retrieved_contexts or ()))
    return f"; the sample has no {spec.text or 'context'} to label, so give it \"{spec.key}\": {empty}"


def _aligned(spec: SentenceLabels, value: Any, sample: Sample, language: str, fail) -> tuple[bool, ...]:
    """The labels flattened in sentence order, after checking they line up with pysbd's sentences."""
    if spec.text is not None:
        sentences = split_sentences(getattr(sample, spec.text) or "", language)
        _check_bools(value, fail)
        if len(value) != len(sentences):
            if not sentences:  # no text at all: the count is not the question
                raise fail(f"{count_of(len(value), 'label')}, but the sample has no {spec.text}; give it "
                           f"\"{spec.key}\": []")
            raise fail(f"{count_of(len(value), 'label')}, but localeval splits the {spec.text} into "
                       f"{count_of(len(sentences), 'sentence')} ({SHOW_SPLIT})")
        return tuple(value)
    chunks = split_chunks(sample.retrieved_contexts or (), language)
    if not isinstance(value, list):
        raise fail("expected one list of true/false per retrieved_contexts chunk")
    if value and all(isinstance(flag, bool) for flag in value):  # one list for the whole context
        raise fail("expected one list of true/false per retrieved_contexts chunk, [[...], [...]]; got a single list")
    if len(value) != len(chunks):
        raise fail(f"{len(value)} chunk lists for {len(chunks)} retrieved_contexts chunks")
    for number, (chunk_labels, chunk_sentences) in enumerate(zip(value, chunks), start=1):
        _check_bools(chunk_labels, fail, f"chunk {number}: ")
        if len(chunk_labels) != len(chunk_sentences):
            raise fail(f"chunk {number} has {count_of(len(chunk_labels), 'label')}, but localeval splits it into "
                       f"{count_of(len(chunk_sentences), 'sentence')} ({SHOW_SPLIT})")
    return tuple(flag for chunk_labels in value for flag in chunk_labels)


def _check_bools(value: Any, fail, where: str = "") -> None:
    if not isinstance(value, list) or not all(isinstance(flag, bool) for flag in value):
        raise fail(f"{where}expected a list of true/false, one per sentence; got {_shown(value)}"
                   + (" (write true and false, not 1 and 0)" if isinstance(value, list) and value
                      and all(flag in (0, 1) and not isinstance(flag, bool) for flag in value) else ""))


def _shown(value: Any) -> str:
    """A label as the file has it (JSON), cut to 40 characters."""
    return shortened(json.dumps(value, ensure_ascii=False), 40)

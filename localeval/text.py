"""Sentences, the unit every metric counts. pysbd splits them, chunk by chunk.

Splitting each chunk on its own means a sentence never spans two retrieved chunks, and the
denominators of the metrics are fixed before the judge says anything.

pysbd ends a sentence at every line break. A line break inside a sentence (text wrapped at a fixed
width, as chunks taken from PDFs and Markdown are) is read as a space first: one that follows no end
punctuation, ends a line of 20 characters or more and comes before a lowercase letter. Lists,
headings and paragraphs keep their breaks, unless a line of 20 characters or more without end
punctuation is followed by a lowercase one. Chinese and Japanese, which have no letter case, are joined
without a space where such a line ends between two of their characters. Other scripts without letter
case (Hindi, Arabic) are never joined, nor a German line that starts with a noun.
Three of pysbd's splits are mended: a closing quote or bracket it puts at the start of the next
sentence, right after the end (Chinese `“可以吗？”我说` gave `”我说`), goes back to the sentence it closes; a piece it
ends at a comma (Arabic's `،`: `نعم،` alone) is joined to the sentence it begins; and so is one it ends at
a dot that begins a word (`.env`, `~/.bashrc`, `.NET`), where the two touch.
Code and markup: each line of a fenced code block (```, ~~~, as CommonMark reads fences) is one
sentence, never joined nor split, its fences and its lines without a word (`{`) are none, and nor is a table's delimiter
row (`|---|---|`): a judge cannot say they are true. Everywhere else every piece pysbd gives is a
sentence, `！！` and `...` too: labeled data is counted on pysbd's sentences.
pysbd's time grows with the square of the text it is given (13,000 characters without a line break:
0.65 s; 112,000: 18 s), so it is given a line at a time, and a long line in pieces that end where
pysbd ends a sentence.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from functools import lru_cache

import pysbd
from pysbd.languages import LANGUAGE_CODES

from .errors import UserError
from .options import given

SUPPORTED_LANGUAGES = frozenset(LANGUAGE_CODES)
DEFAULT_LANGUAGE = "en"
# The names a judge is told, where it writes text of its own in the sample's language.
LANGUAGE_NAMES = {
    "am": "Amharic", "ar": "Arabic", "bg": "Bulgarian", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "es": "Spanish", "fa": "Persian", "fr": "French", "hi": "Hindi", "hy": "Armenian",
    "it": "Italian", "ja": "Japanese", "kk": "Kazakh", "mr": "Marathi", "my": "Burmese", "nl": "Dutch",
    "pl": "Polish", "ru": "Russian", "sk": "Slovak", "ur": "Urdu", "zh": "Chinese",
}


def language_code(tag: str) -> str | None:
    """The code pysbd splits `tag`'s language by: the tag's language part, so that a system's own tags are
    taken as they are written ("de-DE", "zh-Hans", "en_GB", "EN": a region or a script changes no sentence
    end); None for a language pysbd does not split."""
    code = re.split(r"[-_]", tag.strip(), maxsplit=1)[0].lower()
    return code if code in SUPPORTED_LANGUAGES else None


def check_language(tag: str) -> str:
    """A run's language, as language_code reads it: one pysbd does not split would leave every sentence
    metric null."""
    if not isinstance(tag, str):  # evaluate(language=None): an AttributeError from deep inside
        raise UserError(f"{given('language', tag)}: give a language code, such as en (the default) or zh")
    code = language_code(tag)
    if code is None:
        raise UserError(f"{given('language', tag)}: {not_split(tag)}")
    return code


def not_split(tag: str) -> str:
    """Why a language tag is refused, and what to give instead."""
    return (f"not a language pysbd splits into sentences; choose from {', '.join(sorted(SUPPORTED_LANGUAGES))} "
            "(a region or script may follow: de-DE, zh-Hans; README, \"Languages\", says what to do for another)")


_per_thread = threading.local()


def _segmenter(language: str) -> pysbd.Segmenter:
    """One Segmenter per thread and language: a Segmenter keeps the text it is splitting on itself, so
    two threads sharing one (evaluate() called from a thread pool) got each other's sentences, or none,
    and split_sentences' cache kept the wrong split for the rest of the process."""
    segmenters = _per_thread.__dict__.setdefault("segmenters", {})
    if language not in segmenters:
        segmenters[language] = pysbd.Segmenter(language=language, clean=False)
    return segmenters[language]


# A line break inside a sentence: after a character that ends no sentence or clause, before a lowercase letter
_WRAPPED = re.compile(r"(?<=[^\s.!?:;。！？：；])[ \t]*\r?\n[ \t]*(?=\w)")
# Chinese and Japanese characters (kana, ideographs, full-width forms): a line of 20 of them or more that
# ends mid-sentence, before another, was wrapped at a width (a PDF's); they were split there (a probe)
_HAN_OR_KANA = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff10-\uff5a]")
# A shorter line before a break is more likely a list's item ("apples\nbananas") than wrapped text
MIN_WRAPPED_LINE = 20
# pysbd takes a line longer than LONG_LINE characters in pieces of PIECE characters or more
LONG_LINE, PIECE = 4000, 2000
_LIKELY_END = re.compile(r"[.!?。！？]")
_SPACES = re.compile(r"\s*")
# A line break, for sentences and for the loaders' line numbers alike: not str.splitlines's others (a
# form feed, U+2028), which pysbd reads within a sentence and JSON allows raw inside a string
LINE_BREAK = re.compile(r"\r\n|\r|\n")
# A fenced code block's marker line (```python, ~~~): up to 3 spaces before it, as CommonMark has it, and at most
# one word after it, a language's name: prose that begins with ``` or ~~~ ("~~~ The End ~~~") opens no block
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([\w+#.-]*)[ \t]*\r?$", re.MULTILINE)
# A table's delimiter row, |---|:--:|: markup that no prose holds
_TABLE_RULE = re.compile(r"\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-{3,}:?\s*\|?|\|(?:\s*:?-{3,}:?\s*\|)+")
_WORD = re.compile(r"\w")


@lru_cache(maxsize=4096)
def split_sentences(text: str, language: str = DEFAULT_LANGUAGE) -> tuple[str, ...]:
    """The pysbd sentences of `text`, stripped, without empty ones; wrapped lines read as one."""
    return tuple(unit for unit, _ in _units(text, language))


@lru_cache(maxsize=1024)
def code_units(text: str, language: str = DEFAULT_LANGUAGE) -> frozenset[str]:
    """The sentences of `text` (split_sentences's) that are lines of its fenced code blocks: the report shows
    them as code."""
    return frozenset(unit for unit, in_code in _units(text, language) if in_code)


def _units(text: str, language: str) -> Iterator[tuple[str, bool]]:
    """Each sentence of `text` in order, and whether it is a line of a fenced code block."""
    if not text or not text.strip():
        return
    segmenter, text = _segmenter(language), unwrapped(text)
    code = fenced_code(text)
    for start, line in _lines(text):
        if any(begin <= start < end for begin, end in code):  # a line of code is one unit: pysbd cut `cd ..` in two
            if _a_unit(line, in_code=True):
                yield line.strip(), True
        else:
            yield from ((piece.strip(), False) for piece in _line_sentences(segmenter, line)
                        if _a_unit(piece, in_code=False))


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Each line of `text`, and where it starts."""
    start = 0
    for line_break in LINE_BREAK.finditer(text):
        yield start, text[start:line_break.start()]
        start = line_break.end()
    yield start, text[start:]


def _a_unit(sentence: str, in_code: bool) -> bool:
    """Whether a piece is something a judge can say is true or relevant: not a table's delimiter row, nor in a
    fenced code block its fences or a line without a word (`{`). A docs chatbot's answer of one code block was
    judged on its fences, a third of its units (a probe). Outside code every piece counts, `！！` and `...`
    too, as pysbd gives them: labels are counted on its sentences."""
    if not sentence.strip() or _TABLE_RULE.fullmatch(sentence.strip()):
        return False
    return not in_code or bool(_WORD.search(sentence)) and not _FENCE.fullmatch(sentence)


def unwrapped(text: str) -> str:
    """`text` with each line break inside a sentence made a space, or nothing between Chinese or Japanese
    characters, which no space separates (see the module's note)."""
    code = fenced_code(text)

    def joined(found: re.Match) -> str:
        line_start = text.rfind("\n", 0, found.start()) + 1
        if found.start() - line_start < MIN_WRAPPED_LINE or any(start <= found.start() <= end for start, end in code):
            return found.group()  # a short line (a list's item), or a line of code or a fence: no wrapped prose
        if _HAN_OR_KANA.match(text, found.start() - 1) and _HAN_OR_KANA.match(text, found.end()):
            return ""
        return " " if text[found.end()].islower() else found.group()

    return _WRAPPED.sub(joined, text)


def fenced_code(text: str) -> list[tuple[int, int]]:
    """Where `text`'s fenced code blocks are, as CommonMark reads them: from an opening fence's line to the
    next fence of the same character, at least as long and with nothing after it. A block left open runs to
    the end where its fence names a language (an answer cut off inside its code); a bare fence left open is
    none: a chunk cut inside a block begins with its closing fence, and the prose after it is no code."""
    blocks, opened = [], None
    for fence in _FENCE.finditer(text):
        marks, language = fence.groups()
        if opened is None:
            opened = fence
        elif marks[0] == opened.group(1)[0] and len(marks) >= len(opened.group(1)) and not language:
            blocks.append((opened.start(), fence.end()))
            opened = None
    return blocks + ([(opened.start(), len(text))] if opened and opened.group(2) else [])


def _line_sentences(segmenter: pysbd.Segmenter, line: str) -> list[str]:
    """pysbd's sentences of one line. A long line goes in pieces, each starting where pysbd ended the
    last sentence before the previous piece's last one: every cut falls where pysbd itself ends a
    sentence (a piece cut after "Dr." is mended by the next). Where pysbd's sentences are not the
    piece's own text, the rest of the line goes to it whole."""
    sentences, start = [], 0
    while len(line) - start > LONG_LINE:
        start = _SPACES.match(line, start).end()  # pysbd drops a piece's leading spaces
        found = _piece_sentences(segmenter, line, start)
        kept = "".join(found[:-1]) if found else ""
        if not kept or not line.startswith(kept, start):
            break
        sentences += found[:-1]
        start += len(kept)
    return _mended(sentences + segmenter.segment(line[start:]), line)


# What closes a quote or a bracket, never opens one (not the ASCII quotes, which do both)
_CLOSERS = "”’」』）》】〉)]"
_COMMAS = ("،", ",", "，", "、")
# A dot that begins a word (.env, ~/.bashrc, ./run.sh, .NET), where pysbd ended a sentence: after a space, or
# right after a path's or an assignment's mark
_DOT_STARTING_A_WORD = re.compile(r"(?:^|\s|(?P<mark>[~/=`]))\.+$")
# What a path goes on with after its dot (~/.bashrc, =./dev.yaml): a file name's characters, or its next folder
_FILE_NAME_START = re.compile(r"[A-Za-z0-9_./-]")


def _mended(pieces: list[str], line: str) -> list[str]:
    """pysbd's pieces of a line, with a piece's leading closing quotes or brackets given back to the
    piece before, where they touch it (after a space, "’s Avonds" is Dutch's apostrophe, not a quote
    closed), and a piece joined to the one before where that ended at a comma, or at a dot that begins a
    word (see the module's note)."""
    mended: list[str] = []
    for piece, touching in zip(pieces, _touching(pieces, line)):
        closing = len(piece) - len(piece.lstrip(_CLOSERS))
        if mended and closing and not mended[-1][-1:].isspace():
            mended[-1], piece = mended[-1] + piece[:closing], piece[closing:]
        if mended and (mended[-1].rstrip().endswith(_COMMAS) or touching and _dot_word_goes_on(mended[-1], piece)):
            mended[-1] += piece
        elif piece.strip() or not mended:
            mended.append(piece)
    return mended


def _touching(pieces: list[str], line: str) -> list[bool]:
    """For each piece, whether it starts in `line` right where the one before it ended: no space between them,
    none that pysbd dropped."""
    touching, end = [], None
    for piece in pieces:
        at = line.find(piece, end or 0)
        touching.append(at >= 0 and at == end)
        end = at + len(piece) if at >= 0 else None
    return touching


def _dot_word_goes_on(previous: str, piece: str) -> bool:
    """Whether `previous` ended at a dot that begins the word `piece` goes on with: `Copy .env to .env.local`
    was three sentences, `Copy .`, `env to .` and `env.local` (a probe: a docs chatbot). After a space the word
    goes on in lowercase, a digit or a run of capitals (.env, .5, .NET), not one capital, as a sentence after a
    dot typed with a space before it begins (`home .I stayed`), nor a Chinese or Japanese character; in a path
    (~/., =./, an inline code's `.) with a file name's character, and a closing backtick ends a code span."""
    dot = _DOT_STARTING_A_WORD.search(previous)
    if dot is None:
        return False
    if dot.group("mark"):
        code_opened = dot.group("mark") != "`" or previous.count("`") % 2 == 1
        return code_opened and _FILE_NAME_START.match(piece) is not None
    return piece[:1].islower() or piece[:1].isdigit() or piece[:2].isalpha() and piece[:2].isupper()


def _piece_sentences(segmenter: pysbd.Segmenter, line: str, start: int) -> list[str] | None:
    """pysbd's sentences of the shortest piece from `start` that ends after a likely end of sentence,
    is PIECE characters or more, and holds two sentences or more: it doubles until pysbd ends one in
    it, so a long stretch without an end costs about what pysbd would take for it whole. None where no
    such piece ends before the line does."""
    reach = start + PIECE
    while (end := _LIKELY_END.search(line, reach)) is not None:
        found = segmenter.segment(line[start:end.end()])
        if len(found) >= 2:
            return found
        reach = start + 2 * (end.end() - start)
    return None


def split_chunks(chunks: tuple[str, ...], language: str = DEFAULT_LANGUAGE) -> list[tuple[str, ...]]:
    """The sentences of each chunk, chunk by chunk."""
    return [split_sentences(chunk, language) for chunk in chunks]

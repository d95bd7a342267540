"""Which writing system a sample's text is in, against the language it is split and judged in.

A dataset of Chinese samples without a `language` field (or `--language`) is split with English
rules and its judge is asked in English: the questions response_relevancy compares came back in
English, unsaid (a probe). Only the script can be told from the text cheaply and surely, so a
sample is warned of where its language's scripts make up less than a tenth of the letters of its
question and of its response alike: Chinese text split as English, English text split as Chinese.
Each is looked at apart, and its chunks not at all: a Chinese question over English documents, or
answered with code, is written in Chinese. German split as English is the same script and goes
unseen.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

from .errors import LocalevalWarning
from .options import option
from .samples import Sample
from .text import LANGUAGE_NAMES


class LanguageMisfitWarning(LocalevalWarning):
    """Samples whose text is in another script than the language they are taken as (language_misfits)."""


# The scripts each language pysbd splits is written in, as the first word of a letter's Unicode name
SCRIPTS = {
    **dict.fromkeys(("da", "de", "en", "es", "fr", "it", "nl", "pl", "sk"), ("LATIN",)),
    **dict.fromkeys(("ar", "fa", "ur"), ("ARABIC",)), **dict.fromkeys(("hi", "mr"), ("DEVANAGARI",)),
    **dict.fromkeys(("bg", "kk", "ru"), ("CYRILLIC",)),
    "zh": ("CJK",), "ja": ("CJK", "HIRAGANA", "KATAKANA"), "el": ("GREEK",), "hy": ("ARMENIAN",),
    "am": ("ETHIOPIC",), "my": ("MYANMAR",),
}
OWN_SHARE = 0.1  # below this share of a text's letters in its language's scripts, it is in another
MIN_LETTERS = 10  # fewer letters than this tell nothing sure
READ = 2000  # characters of each text looked at: enough to tell, and a long one costs nothing


def script_counts(text: str) -> Counter[str]:
    """How many of the text's letters are in each script."""
    return Counter(unicodedata.name(character, "?").split(" ")[0] for character in text[:READ] if character.isalpha())


def in_another_script(sample: Sample, language: str) -> str | None:
    """The script most of the sample's question and response are in, where neither is in its language's own
    scripts (less than a tenth of its letters); None where either fits, or where neither, nor the two together,
    has letters enough to tell."""
    every = [script_counts(text) for text in (sample.user_input, sample.response) if text]
    told = [counts for counts in every if sum(counts.values()) >= MIN_LETTERS]
    together = sum(every, Counter())  # two short ones: 法国的首都是哪里？ and 法国的首都是巴黎。 are 8 letters each,
    if not told and sum(together.values()) >= MIN_LETTERS:  # and a Chinese letter says much
        told = [together]
    own = SCRIPTS.get(language, ())
    if not told or any(sum(counts[script] for script in own) >= OWN_SHARE * sum(counts.values()) for counts in told):
        return None
    return sum(told, Counter()).most_common(1)[0][0]


def language_misfits(samples: list[Sample], language: str) -> str | None:
    """One line naming the samples whose text is in another script than the language they are split and
    judged in (their `language`, else the run's), with the languages that script suggests."""
    misfits: dict[tuple[str, str], list[str]] = {}
    for sample in samples:
        split_as = sample.language or language
        script = in_another_script(sample, split_as)
        if script is not None:
            misfits.setdefault((script, split_as), []).append(sample.id)
    if not misfits:
        return None
    parts = [f"{_ids(ids)} {'is' if len(ids) == 1 else 'are'} in {_script_name(script)} but taken as "
             f"{LANGUAGE_NAMES.get(taken, taken)}{_meant(script)}" for (script, taken), ids in misfits.items()]
    return (f"{'; '.join(parts)}: a sample's language sets how its sentences are split and the "
            f"language its judge is asked in; give each sample's in a `language` field, or the run's with "
            f"{option('language')}")


def _script_name(script: str) -> str:
    return {"CJK": "Chinese characters", "HIRAGANA": "Japanese kana", "KATAKANA": "Japanese kana",
            "LATIN": "Latin letters"}.get(script, f"{script.title()} script")


def _meant(script: str) -> str:
    """The languages localeval splits that are written in `script`, where they are few enough to name."""
    languages = sorted(code for code, scripts in SCRIPTS.items() if script in scripts)
    if not languages:
        return " (no language localeval splits is written in it)"
    if len(languages) > 3:  # Latin letters: any of nine
        return ""
    named = languages[0] if len(languages) == 1 else f"{', '.join(languages[:-1])} or {languages[-1]}"
    return f" (meant {named}?)"


def _ids(ids: list[str]) -> str:
    return ("id " if len(ids) == 1 else "ids ") + ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")

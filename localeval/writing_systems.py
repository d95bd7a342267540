"""Which writing system a sample's text is in, against the language it is split and judged in.

A dataset of Chinese samples without a `language` field (or `--language`) is split with English
rules and its judge is asked in English: the questions response_relevancy compares came back in
English, unsaid (a probe). Only the script can be told from the text cheaply and surely, so a
sample is warned of where its language's scripts make up less than a tenth of its letters: Chinese
text split as English, English text split as Chinese. German split as English is the same script
and goes unseen.
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
OWN_SHARE = 0.1  # below this share of a sample's letters in its language's scripts, it is in another
MIN_LETTERS = 10  # fewer letters than this tell nothing sure
READ = 2000  # characters of each text looked at: enough to tell, and a long context costs nothing


def script_counts(sample: Sample) -> Counter[str]:
    """How many of the sample's letters (its question, response, reference and first chunk) are in each script."""
    texts = (sample.user_input, sample.response, sample.reference, *(sample.retrieved_contexts or ())[:1])
    return Counter(unicodedata.name(character, "?").split(" ")[0]
                   for text in texts if text for character in text[:READ] if character.isalpha())


def in_another_script(sample: Sample, language: str) -> str | None:
    """The script most of the sample's letters are in, where its language's own scripts hold less than a
    tenth of them; None where they fit, or where there are too few letters to tell."""
    counts = script_counts(sample)
    letters = sum(counts.values())
    own = sum(counts[script] for script in SCRIPTS.get(language, ()))
    if letters < MIN_LETTERS or own >= OWN_SHARE * letters:
        return None
    return counts.most_common(1)[0][0]


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
    return f" (meant {', '.join(languages[:-1])} or {languages[-1]}?)" if 1 < len(languages) <= 3 else \
        f" (meant {languages[0]}?)" if len(languages) == 1 else ""


def _ids(ids: list[str]) -> str:
    return ("id " if len(ids) == 1 else "ids ") + ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")

"""response_relevancy (seed 002): do questions reverse-engineered from the response match the input?

The judge writes N questions the response answers, each flagged noncommittal or not; the score
is the mean cosine similarity between their embeddings and the embedding of the user input,
and 0 when every generation is noncommittal (an evasive answer is not relevant).

The seed makes N calls of one question each; localeval asks for N different questions in one
call, which agreed with people far better for every judge measured (docs/judges.md: Qwen-1.5B
0.770 against 0.477 for N calls with different instructions), at a third of the requests.
"""

from __future__ import annotations

import numpy as np

from ..requests import EmbedRequest, JudgeRequest
from ..samples import Sample
from ..text import DEFAULT_LANGUAGE, LANGUAGE_NAMES
from . import prompts, schemas
from .base import JudgedMetric, Step, judge_failure
from .evidence import GeneratedQuestion, Verdict
from .scoring import Scoring, mean
from .verdicts import recorded_probabilities

FLAG = "noncommittal"


class ResponseRelevancy(JudgedMetric):
    name = "response_relevancy"
    requires = ("user_input", "response")
    description = "mean cosine similarity of questions generated from the response to the user input"
    low_means = "the answer (off the question, or noncommittal)"
    uses_embedder = True
    verdict_type, judged, verdict_key = GeneratedQuestion, "questions", FLAG  # the noncommittal flag is its verdict
    asks_reasons = False  # the questions are the judge's whole answer

    def steps(self, sample: Sample, language: str) -> Step:
        schema = schemas.question_list(self.settings)
        system, user = prompts.RESPONSE_QUESTIONS.messages(self.settings, response=sample.response.strip(),
                                                          language=language_line(language))
        (answer,) = yield [JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))]
        if answer.data is None:
            return judge_failure(answer)
        generated = answer.data["questions"]  # exactly as many as asked: the engine checked it against the schema
        questions = [g["question"] for g in generated]
        (vectors,) = yield [EmbedRequest((sample.user_input, *questions))]
        probabilities = recorded_probabilities(answer, FLAG, len(generated))
        return self.result([
            GeneratedQuestion(question, int(item[FLAG]), probability=probability, similarity=similarity)
            for question, item, probability, similarity in zip(questions, generated, probabilities,
                                                                cosine_to_first(vectors), strict=True)
        ])

    def formula(self, verdicts: list[Verdict]) -> float | None:
        if not verdicts:
            return None
        # A negative mean cosine says the questions are unrelated to the user input: no relevancy, 0,
        # so the score stays in 0-1 like every metric's (and -0.0 never reaches a results line).
        # No sample of the dev set's benches had one (docs/judges/), so agreement is unchanged.
        relevancy = max(0.0, mean([q.similarity for q in verdicts]))
        return relevancy * (1.0 - all_noncommittal(verdicts, self.settings.scoring))


def all_noncommittal(questions: list[Verdict], scoring: Scoring) -> float:
    """That every generated question is flagged noncommittal (the response is evasive): 0 or 1 from
    the flags, or under soft scoring the chance of it, were the flags independent."""
    return float(np.prod(scoring.values(questions)))


def noncommittal_probability(questions: list[Verdict]) -> float | None:
    """The probability a calibration threshold is compared with: all flags reach a threshold exactly
    when the least sure one does, so a threshold on this decides as one on every flag would."""
    flags = [q.probability for q in questions]
    return min(flags) if flags and None not in flags else None


def language_line(language: str) -> str:
    """For a response not in English, the line that names its language. Judges write English
    questions unless told otherwise, even for a Chinese response when asked to use its language,
    and an English question's similarity to a Chinese user input is near zero whatever it asks.
    English responses get no line: added to them, it changed the noncommittal flags for the worse."""
    return "" if language == DEFAULT_LANGUAGE else f"\n\nWrite the questions in {LANGUAGE_NAMES[language]}."


def cosine_to_first(vectors: np.ndarray) -> list[float]:
    """Cosine similarity of rows 1.. to row 0 (rows need not be normalised), within -1 and 1 as a cosine is:
    float32's rounding gave a question the same as the input 1.0000001, and a score above 1 (a probe)."""
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    return [float(x) for x in np.clip(unit[1:] @ unit[0], -1.0, 1.0)]

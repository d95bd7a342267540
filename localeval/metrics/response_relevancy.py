"""response_relevancy (seed 002): do questions reverse-engineered from the response match the input?

The judge writes N questions the response answers, each flagged noncommittal or not; the score
is the mean cosine similarity between their embeddings and the embedding of the user input,
and 0 when every generation is noncommittal (an evasive answer is not relevant).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..requests import EmbedRequest, JudgeRequest
from ..samples import Sample
from ..text import DEFAULT_LANGUAGE, LANGUAGE_NAMES
from . import prompts, schemas
from .base import Metric, Step, judge_failure
from .scoring import mean

FLAG = "noncommittal"


class ResponseRelevancy(Metric):
    name = "response_relevancy"
    requires = ("user_input", "response")
    description = "mean cosine similarity of questions generated from the response to the user input"
    uses_embedder = True
    asks_reasons = False  # the questions are the judge's whole answer

    def steps(self, sample: Sample, language: str) -> Step:
        schema = schemas.question_list(self.settings)
        system, user = prompts.RESPONSE_QUESTIONS.messages(self.settings, response=sample.response.strip(),
                                                          language=language_line(language))
        (answer,) = yield [JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))]
        if answer.data is None:
            return judge_failure(answer)
        generated = answer.data["questions"]
        if len(generated) != self.settings.questions:
            raise ValueError(f"judge gave {len(generated)} questions, {self.settings.questions} were asked for")
        questions = [g["question"] for g in generated]
        (vectors,) = yield [EmbedRequest((sample.user_input, *questions))]
        probabilities = answer.probabilities(FLAG) or [None] * len(generated)
        rows = []
        for question, item, probability, similarity in zip(questions, generated, probabilities,
                                                            cosine_to_first(vectors)):
            row = {"question": question, FLAG: int(item[FLAG]), "similarity": similarity}
            if probability is not None:
                row["probability"] = probability  # that the flag is 1
            rows.append(row)
        return self.result({"questions": rows})

    def score(self, evidence: dict[str, Any]) -> float | None:
        rows = evidence.get("questions")
        if not rows:
            return None
        every_flag = float(np.prod(self.settings.scoring.values(rows, FLAG)))
        return mean([row["similarity"] for row in rows]) * (1.0 - every_flag)


def language_line(language: str) -> str:
    """For a response not in English, the line that names its language. Judges write English
    questions unless told otherwise, even for a Chinese response when asked to use its language,
    and an English question's similarity to a Chinese user input is near zero whatever it asks.
    English responses get no line: added to them, it changed the noncommittal flags for the worse."""
    return "" if language == DEFAULT_LANGUAGE else f"\n\nWrite the questions in {LANGUAGE_NAMES[language]}."


def cosine_to_first(vectors: np.ndarray) -> list[float]:
    """Cosine similarity of rows 1.. to row 0 (rows need not be normalised)."""
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    return [float(x) for x in unit[1:] @ unit[0]]

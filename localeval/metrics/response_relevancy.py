"""response_relevancy (seed 002): do questions reverse-engineered from the response match the input?

The judge writes N questions the response answers, each flagged noncommittal or not; the score
is the mean cosine similarity between their embeddings and the embedding of the user input,
and 0 when every generation is noncommittal (an evasive answer is not relevant).
"""

from __future__ import annotations

import numpy as np

from ..requests import EmbedRequest, JudgeRequest
from ..samples import Sample
from . import prompts, schemas
from .base import Metric, MetricResult, Step, judge_failure


class ResponseRelevancy(Metric):
    name = "response_relevancy"
    requires = ("user_input", "response")
    description = "mean cosine similarity of questions generated from the response to the user input"
    uses_embedder = True
    asks_reasons = False  # the questions are the judge's whole answer

    def steps(self, sample: Sample, language: str) -> Step:
        schema = schemas.question_list(self.settings)
        system, user = prompts.RESPONSE_QUESTIONS.messages(self.settings, response=sample.response.strip())
        (answer,) = yield [JudgeRequest.build(system, user, schema, schemas.max_output_tokens(schema))]
        if answer.data is None:
            return judge_failure(answer)
        generated = answer.data["questions"]
        if len(generated) != self.settings.questions:
            raise ValueError(f"judge gave {len(generated)} questions, {self.settings.questions} were asked for")
        questions = [g["question"] for g in generated]
        (vectors,) = yield [EmbedRequest((sample.user_input, *questions))]
        similarities = cosine_to_first(vectors)
        noncommittal = [int(g["noncommittal"]) for g in generated]
        score = 0.0 if all(noncommittal) else float(np.mean(similarities))
        evidence = {
            "questions": [
                {"question": q, "noncommittal": n, "similarity": s}
                for q, n, s in zip(questions, noncommittal, similarities)
            ],
        }
        return MetricResult(score, evidence)


def cosine_to_first(vectors: np.ndarray) -> list[float]:
    """Cosine similarity of rows 1.. to row 0 (rows need not be normalised)."""
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    return [float(x) for x in unit[1:] @ unit[0]]

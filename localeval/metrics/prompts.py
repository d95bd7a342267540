"""The words the judge reads. Short and literal: small local models follow plain instructions best.

A prompt is a Task: instructions, the same for every request of a metric, go in the system
message; the sample goes in the user message. Every request of a metric then starts with the
same tokens, which the judge computes once and reuses (engine/decode.py), so instructions cost
almost nothing however many samples there are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .base import JudgeSettings

ROLE = (
    "You are a strict, careful evaluator of question-answering systems. "
    "You judge only from the texts you are given, never from your own knowledge. "
    "You answer with JSON only."
)


@dataclass(frozen=True)
class Example:
    """A worked case on another subject, shown after the instructions.

    A judge may apply a rule more reliably once it has seen it applied, or may copy the example:
    measured against people, which one happens depends on the judge and the metric
    (docs/judges.md), so each judge's settings choose it per metric (localeval/tuning.py). The
    answer is rendered in the exact JSON the grammar will produce, with reasons when the judge is
    asked for them.
    """

    sample: str  # the case, laid out like a request
    verdicts: tuple[int, ...]
    reasons: tuple[str, ...]  # one per verdict; shown only when reasons are on
    note: str  # why the hard cases go the way they do

    def render(self, key: str, settings: JudgeSettings) -> str:
        items = [{"sentence": number, **({"reason": reason} if settings.reasons else {}), key: verdict}
                 for number, (verdict, reason) in enumerate(zip(self.verdicts, self.reasons), 1)]
        answer = json.dumps({"verdicts": items}, ensure_ascii=False, separators=(",", ":"))
        return f"\n\nExample (a different subject):\n{self.sample}\nAnswer: {answer}\n{self.note}"


@dataclass(frozen=True)
class Task:
    instructions: str  # the system message; depends on the settings only ({reason}, {questions})
    sample: str  # the user message, filled from the sample's fields
    example: Example | None = None
    verdict: str = ""  # the verdict's key, named in the instructions: the schema and evidence use it too

    def messages(self, settings: JudgeSettings, **fields: object) -> tuple[str, str]:
        """(system, user) for one request."""
        reason = "First give a short reason, then the verdict. " if settings.reasons else ""
        instructions = self.instructions.format(reason=reason, questions=settings.questions)
        if self.example and settings.example:
            instructions += self.example.render(self.verdict, settings)
        return f"{ROLE}\n\n{instructions}", self.sample.format(**fields)


def numbered(sentences: list[str] | tuple[str, ...], start: int = 1) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, start))


def numbered_chunks(chunks: list[tuple[str, ...]]) -> str:
    """Context sentences numbered 1..N across chunks, each chunk under its own heading."""
    blocks, start = [], 1
    for index, sentences in enumerate(chunks, 1):
        if sentences:
            blocks.append(f"[Passage {index}]\n{numbered(sentences, start)}")
            start += len(sentences)
    return "\n\n".join(blocks)


def passages(chunks: tuple[str, ...]) -> str:
    return "\n\n".join(f"[Passage {i}]\n{chunk.strip()}" for i, chunk in enumerate(chunks, 1))


# Background on the right subject, and the same name for something else: the two ways a sentence
# looks relevant and is not.
RELEVANCE = Example(
    sample="""Question: When did the Harbor Bridge open?
Context sentences:
[Passage 1]
1. The Harbor Bridge opened in 1932.
2. It carries eight lanes of road traffic.

[Passage 2]
3. Harbor Bridge is also the title of a 1998 film.""",
    verdicts=(1, 0, 0),
    reasons=("It gives the opening year.", "It does not say when the bridge opened.",
             "It is about a film, not the bridge."),
    note="""Sentence 2 is about the bridge but does not say when it opened. Sentence 3 is about something else \
with the same name.""",
)

CONTEXT_RELEVANCE = Task(
    instructions="""You will read a question and numbered context sentences, grouped in passages. \
For each numbered context sentence, decide whether it is needed to answer the question: "relevant" \
is 1 only if the sentence states information that answers the question or part of it; 0 if it is \
about something else (even a similar name or topic) or is background that the question does not ask \
about. {reason}Give one verdict per sentence, in order.""",
    sample="""Question: {question}

Context sentences:
{sentences}""",
    example=RELEVANCE,
    verdict="relevant",
)

# Partly stated and true-but-absent are the two ways a sentence looks supported and is not.
AGAINST_CONTEXT = Example(
    sample="""Context:
[Passage 1]
The Harbor Bridge opened in 1932. It carries eight lanes of road traffic.
Sentences to judge:
1. The bridge opened in 1932.
2. It was designed by the engineer John Bradfield.
3. The bridge carries eight lanes of traffic and a railway line.""",
    verdicts=(1, 0, 0),
    reasons=("The context gives the opening year.", "The context names no designer.",
             "The context does not mention a railway line."),
    note="""Sentence 2 may be true, but the context does not say it. Sentence 3 is only partly in the \
context (the railway line is not), so it is 0.""",
)

CONTEXT_RECALL = Task(
    instructions="""You will read a context, a question and a reference answer split into numbered \
sentences. For each numbered sentence of the reference answer, decide whether it can be \
attributed to the context: "attributed" is 1 only if everything the sentence claims is stated in \
the context or follows directly from it, otherwise 0. {reason}Give one verdict per sentence, in order.""",
    sample="""Context:
{context}

Question: {question}

Reference answer, sentence by sentence:
{sentences}""",
    example=AGAINST_CONTEXT,
    verdict="attributed",
)

# No question, as in seed 004: whether the context states a sentence does not depend on what was
# asked, and shown the question, judges marked sentences the context states but the question
# did not ask about as unsupported (docs/judges.md).
ANSWER_SUPPORTED = Task(
    instructions="""You will read a context and a response split into numbered sentences. \
For each numbered sentence of the response, decide whether the context supports it: "supported" \
is 1 only if everything the sentence claims is stated in the context or follows directly from \
it; 0 if it is missing from the context, contradicts it, or only says that the information is \
not available. Facts that are true but absent from the context are 0. \
{reason}Give one verdict per sentence, in order.""",
    sample="""Context:
{context}

Response, sentence by sentence:
{sentences}""",
    example=AGAINST_CONTEXT,
    verdict="supported",
)

CONTEXT_SUPPORTED = Task(
    instructions="""You will read a response and one passage of retrieved context split into \
numbered sentences. For each numbered sentence of the passage, decide whether the response \
expresses its content, possibly in other words: "supported" is 1 if the response states what the \
sentence says, 0 if the response does not mention it. {reason}Give one verdict per sentence, in order.""",
    sample="""Response:
{response}

Passage {chunk} of the retrieved context, sentence by sentence:
{sentences}""",
    verdict="supported",
)

# ragas's context_precision: is each retrieved chunk useful for the answer (the reference, or
# without one the response)? One verdict per chunk, all chunks in one request.
CONTEXT_PRECISION = Task(
    instructions="""You will read a question, an answer to it and numbered passages of retrieved \
context. For each numbered passage, decide whether it was useful for arriving at the answer: \
"useful" is 1 only if the passage states information that the answer gives, or part of it; 0 if it \
is about something else (even a similar name or topic) or adds nothing the answer says. \
{reason}Give one verdict per passage, in order.""",
    sample="""Question: {question}

Answer: {answer}

Retrieved passages:
{passages}""",
    verdict="useful",
)

# ragas's faithfulness, first call: the response as atomic claims, each a standalone statement.
RESPONSE_CLAIMS = Task(
    instructions="""You will read a response. Break it into its claims: short standalone \
statements, each stating one fact that the response asserts, with pronouns replaced by what they \
refer to. Write only what the response says, in the response's own language. A sentence that \
only says that the information is not available is one claim.""",
    sample="""Response:
{response}""",
)

# ragas's faithfulness, second call: each claim against the context, as answer support is judged.
CLAIMS_SUPPORTED = Task(
    instructions="""You will read a context and numbered claims. For each numbered claim, decide \
whether the context supports it: "supported" is 1 only if everything the claim states is in the \
context or follows directly from it; 0 if it is missing from the context, contradicts it, or only \
says that the information is not available. Facts that are true but absent from the context are 0. \
{reason}Give one verdict per claim, in order.""",
    sample="""Context:
{context}

Claims:
{claims}""",
    verdict="supported",
)

RESPONSE_QUESTIONS = Task(
    instructions="""You will read a response. Write {questions} different questions that this \
response answers, each a question a user could have asked to get exactly this response. For each \
question, set "noncommittal" to 1 if the response is evasive or vague (such as "I don't know" or \
"the documents do not say"), otherwise 0.""",
    # {language}: for a sample not in English, a line naming its language (response_relevancy.py).
    sample="""Response:
{response}{language}""",
)

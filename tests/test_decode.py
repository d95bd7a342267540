"""The batched decoder against the plainest possible one, with the real embedded judge.

The engine's decoder shares instruction prefixes, pads rows in the middle, appends forced
tokens several at a time and drops finished rows. None of that may change an answer: each row
must get exactly the tokens that a one-request, one-token-at-a-time greedy loop over the full
prompt gives it (float32, so the arithmetic differences stay far below the logit gaps).
"""

from __future__ import annotations

import json

import pytest
import torch
from transformers.cache_utils import DynamicCache

from localeval import models
from localeval.engine.batching import Admission
from localeval.engine.judge import TransformersJudge
from localeval.engine.kv_cache import forward_over
from localeval.metrics import JudgeSettings, resolve_metrics
from localeval.samples import Sample
from localeval.text import DEFAULT_LANGUAGE

SAMPLES = [
    Sample(id="a", user_input="Where is the Eiffel Tower?",
           retrieved_contexts=("The Eiffel Tower is in Paris. It was finished in 1889.", "Lyon is a city in France."),
           response="It is in Paris. It is 330 metres tall.", reference="The tower stands in Paris, France."),
    Sample(id="b", user_input="长城有多长？", retrieved_contexts=("长城全长两万多公里。它始建于春秋战国时期。",),
           response="长城长两万多公里。", reference="长城全长超过两万公里。", language="zh"),
]


@pytest.fixture(scope="module")
def judge() -> TransformersJudge:
    resolved = models.resolve("smollm2-135m-instruct", "judge", log=lambda _: None)
    smollm = TransformersJudge(resolved.path, resolved.name, "cpu", torch.float32, resolved.fingerprint())
    smollm.load()
    return smollm


def first_requests(settings: JudgeSettings):
    """The first judge request of every metric for every sample."""
    requests = []
    for sample in SAMPLES:
        for metric in resolve_metrics(None, settings):
            steps = metric.steps(sample, sample.language or DEFAULT_LANGUAGE)
            requests.extend(next(steps))
    return requests


@torch.inference_mode()
def plain_greedy(judge: TransformersJudge, request) -> list[int]:
    """Full prompt, no padding, no shared prefix, one token per forward pass."""
    constraint = judge._grammar.constraint([request.schema], capacity=1)
    constraint.admit([0])
    cache = DynamicCache()
    logits = forward_over(judge._model, cache, input_ids=torch.tensor([judge.prompt_ids(request)])).logits[:, -1, :]
    tokens: list[int] = []
    while len(tokens) < request.max_new_tokens:
        masked, (few,) = constraint.mask(logits.float(), [0], few=8)
        allowed = torch.isfinite(masked[0]).nonzero().flatten().tolist()
        assert few == (allowed if len(allowed) <= 8 else None)  # the tokens read off the grammar's bits
        token = int(masked.argmax(-1))
        if token == judge._grammar.eos_token_id:
            break
        constraint.consume({0: token})
        tokens.append(token)
        if constraint.finished(0):
            break
        logits = forward_over(judge._model, cache, input_ids=torch.tensor([[token]])).logits[:, -1]
    return tokens


@pytest.mark.parametrize(("settings", "admission"), [
    (JudgeSettings(reasons=False), None),
    (JudgeSettings(reason_chars=40, question_chars=40), None),
    # rows join the batch as others finish: by row count, and by the prefill token budget
    (JudgeSettings(reason_chars=40, question_chars=40), Admission(rows=3, prompt_tokens=10**6)),
    (JudgeSettings(reasons=False), Admission(rows=8, prompt_tokens=250)),
], ids=["no-reasons", "short-reasons", "continuous-3-rows", "continuous-token-budget"])
def test_batched_decoding_gives_each_row_its_plain_greedy_answer(judge, settings, admission):
    requests = first_requests(settings)
    expected = [judge.tokenizer.decode(plain_greedy(judge, r)) for r in requests]
    forced_before, admissions_before = judge.stats.decoding.forced_tokens, judge.stats.decoding.admissions
    drafted_before = judge.stats.decoding.drafted_tokens
    heard = {}
    answers = judge.generate(requests, admission, on_answer=lambda index, answer: heard.setdefault(index, answer))
    assert [a.text for a in answers] == expected
    assert heard == dict(enumerate(answers))  # every answer announced once, as it finished
    if admission is not None:
        assert judge.stats.decoding.admissions - admissions_before > 1
        # several rows held guesses of different lengths while others joined and left (drafts.py)
        assert judge.stats.decoding.drafted_tokens > drafted_before
    assert all(a.data is not None for a in answers), [a.error for a in answers]
    # the shortcuts were taken: instructions shared, structure appended without the model
    assert judge.stats.decoding.forced_tokens > forced_before
    assert judge.stats.suffix_tokens < judge.stats.prompt_tokens


@torch.inference_mode()
def plain_verdict_probabilities(judge: TransformersJudge, request) -> list[float]:
    """P("1") at each 0/1 choice of the plain greedy answer: the softmax of the model's logits for the
    tokens "0" and "1", from one forward pass over the full prompt and the whole answer."""
    zero, one = judge.tokenizer.convert_tokens_to_ids(["0", "1"])
    answer = plain_greedy(judge, request)
    ids = torch.tensor([judge.prompt_ids(request) + answer])
    logits = judge._model(input_ids=ids).logits[0].float()
    start = len(judge.prompt_ids(request))
    found = []
    for position, token in enumerate(answer):
        before = judge.tokenizer.decode(answer[:position])
        if before.endswith(('"relevant":', '"attributed":', '"supported":', '"noncommittal":')):
            assert token in (zero, one)
            pair = logits[start + position - 1, [zero, one]]  # the logits that chose this token
            found.append(float(torch.softmax(pair, dim=-1)[1]))
    return found


def test_each_verdict_carries_the_probability_a_plain_forward_pass_gives_it(judge):
    """The probabilities the batched decoder records (shared prefixes, padding, several rows) are the
    plain softmax of the model's logits over the two allowed tokens, at each verdict."""
    requests = first_requests(JudgeSettings(reason_chars=40, question_chars=40))
    answers = judge.generate(requests, Admission(rows=4, prompt_tokens=10**6))
    checked = 0
    for request, answer in zip(requests, answers):
        recorded = [(c.key, c.probability("1")) for c in answer.choices]
        expected = plain_verdict_probabilities(judge, request)
        assert [p for _, p in recorded] == pytest.approx(expected, abs=1e-4)
        # one choice per verdict, under the verdict's own key, and greedy took the likelier value
        key = {"verdicts": None, "questions": "noncommittal"}[next(iter(answer.data))]
        items = answer.data.get("verdicts") or answer.data["questions"]
        for item, (choice_key, p_one) in zip(items, recorded):
            assert choice_key == (key or next(k for k in item if k not in ("sentence", "reason")))
            assert item[choice_key] == int(p_one > 0.5)
        assert len(recorded) == len(items)
        checked += len(recorded)
    assert checked >= 20
    assert all(sum(c.probabilities.values()) == pytest.approx(1.0) for a in answers for c in a.choices)


def test_one_request_at_a_time_matches_the_batch(judge):
    requests = first_requests(JudgeSettings(reasons=False))
    together = [a.text for a in judge.generate(requests)]
    alone = [judge.generate([r])[0].text for r in requests]
    assert alone == together
    assert all(json.loads(text) for text in alone)


def test_guessed_tokens_leave_every_answer_as_plain_greedy_gives_it_in_fewer_passes(judge):
    """Alone in the batch, each row is fed guesses of its next tokens (prompt lookup, drafts.py): the
    ones the model confirms are kept, the rest forgotten by the cache. Same answers as plain greedy
    decoding, and as decoding without guesses; fewer decoding passes."""
    requests = first_requests(JudgeSettings(reason_chars=40, question_chars=40))[:6]
    expected = [judge.tokenizer.decode(plain_greedy(judge, r)) for r in requests]
    runs = {}
    for draft_tokens in (0, 8):
        judge.draft_tokens = draft_tokens
        before = (judge.stats.decoding.decode_passes, judge.stats.decoding.drafted_tokens,
                  judge.stats.decoding.confirmed_tokens)
        texts = [judge.generate([r])[0].text for r in requests]
        after = (judge.stats.decoding.decode_passes, judge.stats.decoding.drafted_tokens,
                 judge.stats.decoding.confirmed_tokens)
        runs[draft_tokens] = texts, *(b - a for a, b in zip(before, after))
    judge.draft_tokens = 8
    (plain, passes_plain, drafted_plain, _), (guessed, passes, drafted, confirmed) = runs[0], runs[8]
    assert plain == expected and guessed == expected
    assert drafted_plain == 0 and drafted > confirmed > 0  # some guesses kept, some forgotten
    assert passes < passes_plain

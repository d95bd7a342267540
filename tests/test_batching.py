"""The batch limits, applied by the one admission loop every judge runs (engine/batching.py).

First the loop itself, with rows that finish after a chosen number of steps; then a stub model (a
two-layer Llama with random weights and SmolLM2's tokenizer) through the real judge, the engine
and the decoder, every forward pass it was given recorded: what the limits promise is what the
model saw.
"""

from __future__ import annotations

import shutil

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from localeval import models
from localeval.engine.batching import Admission, decode_continuously
from localeval.engine.judge import TransformersJudge
from localeval.engine.limits import BatchLimits
from localeval.engine.scheduler import JudgeEngine
from localeval.metrics import JudgeSettings, resolve_metrics
from localeval.samples import Sample


class StepRows:
    """Rows that each finish after the number of steps `steps[request]` says; records every step."""

    def __init__(self, steps: list[int]):
        self.steps, self.left = steps, {}
        self.admissions: list[list[int]] = []
        self.decoding_at_each_step: list[int] = []

    def decoding(self) -> int:
        return len(self.left)

    def admit(self, requests: list[int]) -> None:
        self.admissions.append(requests)
        self.left.update({request: self.steps[request] for request in requests})

    def step(self, on_done) -> None:
        self.decoding_at_each_step.append(len(self.left))
        for request in list(self.left):
            self.left[request] -= 1
            if self.left[request] == 0:
                del self.left[request]
                on_done(request, f"answer {request}")


def run(sizes: list[int], steps: list[int], admission: Admission) -> tuple[StepRows, dict[int, str]]:
    rows, heard = StepRows(steps), {}
    decode_continuously(sizes, admission, rows, lambda request, answer: heard.setdefault(request, answer))
    return rows, heard


def test_every_request_is_admitted_once_in_order_and_answered():
    rows, heard = run([5] * 10, [1, 3, 2, 5, 1, 1, 4, 2, 1, 1], Admission(rows=4, prompt_tokens=10**6))
    assert [r for admitted in rows.admissions for r in admitted] == list(range(10))
    assert heard == {r: f"answer {r}" for r in range(10)}
    assert max(rows.decoding_at_each_step) == 4  # the row limit is reached and never passed


def test_a_refill_waits_for_a_quarter_of_the_rows_to_be_free():
    # 8 rows: one request finishes every step, so refills come every second step, two rows at a time
    rows, _ = run([1] * 16, [1, 2, 3, 4, 5, 6, 7, 8] + [8] * 8, Admission(rows=8, prompt_tokens=10**6))
    assert [len(admitted) for admitted in rows.admissions[:3]] == [8, 2, 2]
    assert min(rows.decoding_at_each_step[1:6]) >= 8 - 2


def test_the_token_budget_counts_new_rows_padded_to_the_widest_prompt():
    # 60 tokens: 10 + 20 pad to 2 x 20 = 40, a third (30) would make 3 x 30 = 90; a 200-token prompt still gets a pass
    rows, heard = run([10, 20, 30, 200], [1, 1, 1, 1], Admission(rows=32, prompt_tokens=60))
    assert rows.admissions == [[0, 1], [2], [3]]
    assert len(heard) == 4


def test_a_batch_of_no_rows_is_refused_rather_than_looping_forever():
    with pytest.raises(ValueError, match="at least one row"):
        run([3], [1], Admission(rows=0, prompt_tokens=10**6))


def test_one_row_at_a_time():
    rows, heard = run([3, 1, 2], [2, 2, 2], Admission(rows=1, prompt_tokens=10**6))
    assert rows.admissions == [[0], [1], [2]]
    assert set(rows.decoding_at_each_step) == {1} and len(heard) == 3


# --- the stub model through the real judge --------------------------------------------------

SAMPLES = [
    Sample(id=f"s{i}", user_input=f"Where is landmark number {i}?" + " Please answer briefly." * (i % 3),
           retrieved_contexts=tuple(f"Landmark {i} stands in city {j}. It is {j * 10} metres tall." for j in range(1 + i % 3)),
           response=f"It is in city {i}. It is tall.", reference=f"Landmark {i} is in city {i}.")
    for i in range(6)
]


@pytest.fixture(scope="module")
def stub_model_dir(tmp_path_factory):
    """A two-layer Llama with random weights beside SmolLM2's tokenizer and chat template."""
    smollm = models.resolve("smollm2-135m-instruct", "judge", log=lambda _: None).path
    path = tmp_path_factory.mktemp("stub-judge")
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (smollm / name).is_file():
            shutil.copy(smollm / name, path / name)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=49152, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)
    LlamaForCausalLM(config).save_pretrained(path)
    return path


def first_requests():
    settings = JudgeSettings(reasons=False)  # answers the grammar bounds: a random model finishes them
    return [request for sample in SAMPLES for metric in resolve_metrics(None, settings)
            for request in next(metric.steps(sample, "en"))]


@pytest.mark.parametrize(("batch_size", "max_batch_tokens"), [(1, 10**6), (3, 10**6), (32, 400), (4, 250)])
def test_the_model_never_sees_a_pass_beyond_the_limits(stub_model_dir, batch_size, max_batch_tokens):
    judge = TransformersJudge(stub_model_dir, "stub", step_budget=1)  # decoding passes feed one token a row
    judge.load()
    passes: list[tuple[int, int]] = []  # rows x width of every pass over a batch (not the instructions' own)

    def record(module, args, kwargs):
        if "attention_mask" in kwargs:  # a pass computing shared instructions alone has none
            passes.append(tuple(kwargs["input_ids"].shape))

    judge.model.register_forward_pre_hook(record, with_kwargs=True)
    requests = first_requests()
    answers = JudgeEngine(judge, BatchLimits(batch_size, max_batch_tokens)).answer(requests)

    assert len(answers) == len(requests) and all(a.data is not None for a in answers)
    assert min(judge.prompt_tokens(r) for r in requests) > 1  # so a pass wider than one token is a prefill
    decoding = judge.stats.decoding
    prefills = [(rows, width) for rows, width in passes if width > 1]
    decodes = [rows for rows, width in passes if width == 1]
    assert sum(rows for rows, _ in prefills) == len(set(requests))  # each request prefilled once
    assert all(rows <= batch_size for rows, _ in passes)
    assert all(rows == 1 or rows * width <= max_batch_tokens for rows, width in prefills)
    if max_batch_tokens == 10**6:  # only rows limit: the limit is reached, not merely kept
        assert max(decodes) == min(batch_size, len(set(requests)))
    else:  # the budget binds: more refills than rows alone would need
        assert decoding.admissions > len(set(requests)) / batch_size + 1
    assert (len(prefills), len(decodes)) == (decoding.prefill_passes, decoding.decode_passes)

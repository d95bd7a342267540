"""Judges: requests in, JSON text out. The real one is a local instruct model under Outlines.

A judge sees only a list of requests and returns one answer per request, in order; batching
decisions (what goes together, how big) belong to the scheduler, not here.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import torch

from .. import models
from ..device import DTYPES, INT8
from ..errors import UserError
from ..requests import TOO_LONG, JudgeAnswer, JudgeRequest, chat
from . import attention
from .choices import keyed_choices
from .batching import Admission, decode_continuously
from .decode import CPU_DRAFT_BUDGET, DRAFT_TOKENS, DecodeCounters, Decoder, GreedyRows, PrefixCache, Prompt, RowOutput
from .grammar import GrammarTokenizer
from .int8 import quantize_linears
from .linears import pack_linears, packable

CPU_STEP_BUDGET = 32  # measured on 2 cores: a batch of 32 feeding 4 tokens a row ran 20% slower than 1
GPU_STEP_BUDGET = 4096
MIN_VOCABULARY = 1000  # a language model's tokenizer has tens of thousands of tokens
# Requests whose tokens are remembered: more than a window's (a few hundred), few enough that a judge
# serving a notebook for days does not grow (each holds its prompt's 1-2k token ids)
REMEMBERED_PROMPTS = 4096


class Judge(Protocol):
    identity: str  # names the model and everything about it that changes answers (cache key)
    # A judge may also say `cacheable = False`: its answers are then kept out of the user's answer
    # cache (ScriptedJudge: every script has the one identity "scripted").

    def prompt_tokens(self, request: JudgeRequest) -> int: ...  # the prompt tokens a batch row costs

    def prompt_length(self, request: JudgeRequest) -> int: ...  # the prompt's tokens, shared prefix included

    # Optional, and so not declared here: `answer_length(text)`, the positions `text` takes as an answer (its end read
    # off its last), by which a request whose shortest answer cannot fit is refused undecoded (scheduler._least_answer)

    # Most tokens the model reads, prompt and answer together (None: no limit known); longer requests
    # are refused by the engine.
    @property
    def context_tokens(self) -> int | None: ...

    # One answer per request, in order, decoded through batching.decode_continuously: admitted as rows
    # free up, within `admission` (default: all at once); `on_answer(index, answer)` hears of each
    # answer as soon as it is done.
    def generate(self, requests: list[JudgeRequest], admission: Admission | None = None,
                 on_answer: Callable[[int, JudgeAnswer], None] | None = None) -> list[JudgeAnswer]: ...


@dataclass
class JudgeStats:
    """Counters the benchmark and the summary report."""

    requests: int = 0
    batches: int = 0  # groups of requests prefilled together (joining the batch as rows free up)
    prompt_tokens: int = 0
    suffix_tokens: int = 0  # prompt tokens after the shared prefix: those the model had to process
    output_tokens: int = 0
    generate_seconds: float = 0.0
    decoding: DecodeCounters = field(default_factory=DecodeCounters)

    @property
    def decode_steps(self) -> int:
        return self.decoding.decode_passes

    @property
    def grammar_seconds(self) -> float:
        return self.decoding.grammar_seconds


def computed_as(dtype: torch.dtype, int8_weights: bool, prepacked: bool, torch_attention: bool = False) -> str:
    """How a judge computes, as its identity says it: "torch.float32+prepacked", "torch.bfloat16+int8-weights".
    Prepacked float32 differs from torch's kernel in the last bits, and so does torch's own attention kernel:
    the cached answers must not mix."""
    weights = "+int8-weights" if int8_weights else "+prepacked" if prepacked else ""
    return f"{dtype}{weights}{'+torch-attention' if torch_attention else ''}"


def computed_as_asked(device: str, name: str, torch_attention: bool = False) -> str:
    """computed_as for `--dtype name` on `device`, as a judge loaded so would compute (its weights prepacked
    where they can be; torch's attention kernel taken on CUDA only)."""
    dtype, on = DTYPES[name], torch.device(device)
    return computed_as(dtype, name == INT8, name != INT8 and packable(on, dtype), torch_attention and on.type == "cuda")


class TransformersJudge:
    """A causal LM from a local directory, decoding greedily, every row under its own grammar."""

    def __init__(self, path: str, name: str | None = None, device: str = "cpu", dtype: torch.dtype = torch.float32,
                 fingerprint: str = "", step_budget: int | None = None, int8_weights: bool = False,
                 prepack: bool = True, draft_tokens: int = DRAFT_TOKENS, torch_attention: bool = False):
        self.path, self.device, self.dtype, self.int8_weights = str(path), torch.device(device), dtype, int8_weights
        self.fingerprint = fingerprint
        # oneDNN's prepacked weights on a CPU (linears.py)
        self.prepacked = prepack and not int8_weights and packable(self.device, dtype)
        # torch's own choice of attention kernel on CUDA (cuDNN's on Hopper): not taken, since cuDNN plans
        # every new shape (attention.kernels); only to measure against (scripts/bench_speed.py --cuda-attention)
        self.torch_attention = torch_attention and self.device.type == "cuda"
        # Most tokens one decoding forward pass feeds (rows x width): on a GPU extra tokens in a pass
        # are nearly free, on a CPU each costs compute (see decode.py).
        self.step_budget = step_budget or (GPU_STEP_BUDGET if self.device.type == "cuda" else CPU_STEP_BUDGET)
        # Most guessed tokens a row is fed in a pass (decode.py); 0 feeds none. Guesses change how many
        # passes an answer takes, not the answer, so they are not part of the identity.
        self.draft_tokens = draft_tokens
        # Everything that changes the answers; the cache keys on it, so it must not need the model.
        self.identity = f"{name or path}|{fingerprint}|{computed_as(dtype, int8_weights, self.prepacked, self.torch_attention)}|greedy"
        self.name = name or str(path)  # where its measured settings are looked up (models.judge_name)
        self.load_seconds = 0.0
        self.stats = JudgeStats()
        self._tokenizer = self._model = self._grammar = None
        self._instructions_in_user_message = False  # for a chat template without a system role
        # Tokens of requests met lately: a judge loaded once (api.load_judge) meets requests without end
        self._prompt_ids: OrderedDict[JudgeRequest, list[int]] = OrderedDict()
        # One caller at a time: threads sharing a loaded judge would interleave its caches and counters
        self._in_use = threading.RLock()
        self._prefixes: dict[tuple, tuple[int, ...]] = {}

    def __repr__(self) -> str:
        """What a notebook shows of load_judge()'s judge: which model, where, in what dtype."""
        weights = ", int8 weights" if self.int8_weights else ""
        loaded = "loaded" if self._model is not None else "not loaded yet"
        return f"<TransformersJudge {self.name} on {self.device}, {str(self.dtype).removeprefix('torch.')}{weights}; {loaded}>"

    @property
    def draft_budget(self) -> int:
        """Most tokens a pass that carries guesses feeds: on a GPU the step budget, since a pass is bound by
        reading the weights far beyond the rows x 9 tokens guesses add; on a CPU, CPU_DRAFT_BUDGET. Derived,
        so a step budget changed after construction (bench_speed.py --step-budget) carries over."""
        return self.step_budget if self.device.type == "cuda" else CPU_DRAFT_BUDGET

    @property
    def model(self):
        """The loaded model (None before `load`): what the benchmark measures the shape of."""
        return self._model

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from .. import hf
            from ..interrupts import held

            with held():  # whole, whenever Ctrl-C comes (interrupts.py)
                from transformers import AutoTokenizer

            tokenizer = hf.load(AutoTokenizer.from_pretrained, self.path)
            if tokenizer.chat_template is None:
                raise UserError(f"{self.path} has no chat template: a judge must be an instruct (chat) model")
            if tokenizer.eos_token_id is None:  # an answer could not end: decoding failed on it, with a TypeError
                raise UserError(models.no_end_of_text(self.path))
            if len(tokenizer) < MIN_VOCABULARY:  # transformers builds one of a few tokens where its file is missing
                raise UserError(f"{self.path}: its tokenizer has {len(tokenizer)} tokens, where a language model's has "
                                "tens of thousands; its tokenizer files (tokenizer.json) are missing or broken")
            self._instructions_in_user_message = not _renders(tokenizer, [("system", "s"), ("user", "u")])
            if self._instructions_in_user_message and not _renders(tokenizer, [("user", "u")]):
                raise UserError(f"{self.path}: its chat template cannot render a chat of one user message")
            self._tokenizer = tokenizer
        return self._tokenizer

    def load(self) -> None:
        """Load the weights; deferred so that a run answered from the cache never pays for it."""
        if self._model is not None:
            return
        from .. import hf
        from ..interrupts import held

        with held():  # whole, whenever Ctrl-C comes (interrupts.py)
            from transformers import AutoModelForCausalLM

        started = time.perf_counter()
        model, found = hf.load(AutoModelForCausalLM.from_pretrained, self.path, dtype=self._reading_dtype(),
                               attn_implementation=attention.register(), output_loading_info=True,
                               ignore_mismatched_sizes=True)  # else a RuntimeError: told by _check_weights
        _check_weights(self.path, found)
        self._model = model.to(self.device, self.dtype).eval()
        self._model.config.dtype = self.dtype
        n_logits = model.get_output_embeddings().weight.shape[0]
        if self.int8_weights:
            quantize_linears(self._model)
        elif self.prepacked:
            pack_linears(self._model)
        self._grammar = GrammarTokenizer(self.tokenizer, n_logits)
        eos = self._grammar.eos_token_id
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        self._decoder = Decoder(self._model, self.device, pad_id, eos, PrefixCache(self._model, self.device))
        self.load_seconds = time.perf_counter() - started

    def _reading_dtype(self) -> torch.dtype:
        """The dtype the weights are read in: the file's own where it is narrower than the judge's, then
        widened by torch in one pass (the same values: a bfloat16 file read for a float32 judge, 2.6x
        faster than transformers' tensor-by-tensor conversion for Qwen-0.5B), else the judge's."""
        from transformers import AutoConfig

        from .. import hf

        stored = getattr(hf.load(AutoConfig.from_pretrained, self.path), "dtype", None)
        narrower = isinstance(stored, torch.dtype) and stored.is_floating_point and stored.itemsize < self.dtype.itemsize
        return stored if narrower else self.dtype

    def forget_prefixes(self) -> None:
        """Drop the computed instructions, so the next call computes them again (a benchmark's configs
        each pay for their own)."""
        if self._model is not None:
            self._decoder.prefixes.clear()

    def prompt_ids(self, request: JudgeRequest) -> list[int]:
        with self._in_use:
            if request in self._prompt_ids:
                self._prompt_ids.move_to_end(request)
                return self._prompt_ids[request]
            self._prompt_ids[request] = ids = self._ids(request.messages)
            if len(self._prompt_ids) > REMEMBERED_PROMPTS:
                self._prompt_ids.popitem(last=False)
            return ids

    def prompt_tokens(self, request: JudgeRequest) -> int:
        """The tokens the model must compute for the request: its shared prefix is computed once."""
        return len(self.prompt(request).suffix)

    def prompt_length(self, request: JudgeRequest) -> int:
        return len(self.prompt_ids(request))

    def answer_length(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)  # its end is read off its last token

    @functools.cached_property
    def context_tokens(self) -> int | None:
        """The positions the model was trained on, from its config (read without the weights)."""
        from transformers import AutoConfig

        from .. import hf

        config = hf.load(AutoConfig.from_pretrained, self.path)
        return getattr(config.get_text_config(), "max_position_embeddings", None)

    @torch.inference_mode()
    def generate(self, requests: list[JudgeRequest], admission: Admission | None = None,
                 on_answer: Callable[[int, JudgeAnswer], None] | None = None) -> list[JudgeAnswer]:
        """One answer per request, in order. Rows are admitted as others finish, within `admission`
        (default: all at once); `on_answer(index, answer)` hears of each answer as soon as it is done."""
        with self._in_use, attention.kernels(self.device, self.torch_attention):
            return self._generate(requests, admission, on_answer)

    def _generate(self, requests: list[JudgeRequest], admission: Admission | None,
                  on_answer: Callable[[int, JudgeAnswer], None] | None) -> list[JudgeAnswer]:
        self.load()
        started = time.perf_counter()
        admission = admission or Admission.all_at_once(len(requests))
        prompts = [self.prompt(r) for r in requests]
        limits = [self._answer_limit(r) for r in requests]
        answers: list[JudgeAnswer | None] = [None] * len(requests)

        def finished(index: int, output: RowOutput) -> None:
            choices = keyed_choices(output.tokens, output.choices, self.tokenizer.decode)
            answers[index] = self._cut_off_said(requests[index], limits[index], JudgeAnswer.parse(
                self.tokenizer.decode(output.tokens), len(output.tokens), choices))
            if on_answer is not None:
                on_answer(index, answers[index])

        admissions = self.stats.decoding.admissions
        constraint = self._grammar.constraint([r.schema for r in requests], admission.rows)
        rows = GreedyRows(self._decoder, constraint, prompts, limits,
                          self.step_budget, self.stats.decoding, self.draft_tokens, self.draft_budget)
        decode_continuously([len(p.suffix) for p in prompts], admission, rows, finished)
        self.stats.requests += len(requests)
        self.stats.batches += self.stats.decoding.admissions - admissions
        self.stats.prompt_tokens += sum(len(p.prefix) + len(p.suffix) for p in prompts)
        self.stats.suffix_tokens += sum(len(p.suffix) for p in prompts)
        self.stats.output_tokens += sum(answer.output_tokens for answer in answers)
        self.stats.generate_seconds += time.perf_counter() - started
        return answers

    def _cut_off_said(self, request: JudgeRequest, limit: int, answer: JudgeAnswer) -> JudgeAnswer:
        """An answer stopped unfinished at its limit says which: where the judge's trained positions end (`limit`,
        its _answer_limit: a response of hundreds of sentences, a verdict each), or at the request's own budget.
        "not valid JSON" blamed the judge for the sample's length, or for a metric's budget (probes)."""
        if answer.data is not None or answer.output_tokens < limit:
            return answer
        if limit >= request.max_new_tokens:  # the request's own budget: a metric of a user's own set it too low (a probe)
            return replace(answer, error=f"cut off at the request's max_new_tokens ({request.max_new_tokens:,}) before "
                                         f"its JSON closed ({answer.error})")
        return replace(answer, error=f"{TOO_LONG}: its answer did not fit in the {self.context_tokens:,} "
                                     "tokens the judge reads and was cut off (shorten the sample's texts, or use a "
                                     "judge that reads more)")

    def _answer_limit(self, request: JudgeRequest) -> int:
        """The request's token budget, stopped where the model's trained positions end."""
        room = None if self.context_tokens is None else self.context_tokens - self.prompt_length(request)
        return request.max_new_tokens if room is None else max(1, min(request.max_new_tokens, room))

    def prompt(self, request: JudgeRequest) -> Prompt:
        """The request's tokens, split where its own content starts: what comes before is shared."""
        ids = self.prompt_ids(request)
        prefix = self._shared_prefix(request.messages[:-1])
        if len(prefix) < len(ids) and tuple(ids[:len(prefix)]) == prefix:
            return Prompt(prefix, tuple(ids[len(prefix):]))
        return Prompt((), tuple(ids))  # the tokenizer merged across the boundary: nothing to share

    def _shared_prefix(self, leading: tuple[tuple[str, str], ...]) -> tuple[int, ...]:
        """The tokens every prompt with these leading messages (the instructions) starts with."""
        if leading not in self._prefixes:
            renders = [self._ids([*leading, ("user", probe)]) for probe in ("A", "B")]
            common = 0
            while common < min(map(len, renders)) and renders[0][common] == renders[1][common]:
                common += 1
            self._prefixes[leading] = tuple(renders[0][:common])
        return self._prefixes[leading]

    def _ids(self, messages) -> list[int]:
        tokenizer = self.tokenizer  # loading it finds whether its template takes a system message
        if self._instructions_in_user_message:
            messages = _instructions_in_user_message(messages)
        text = tokenizer.apply_chat_template(chat(messages), add_generation_prompt=True, tokenize=False)
        return tokenizer(text, add_special_tokens=False)["input_ids"]


def _check_weights(path: str, found: dict[str, Any]) -> None:
    """The file's tensors are the ones config.json describes. transformers fills a missing one with
    random numbers and drops an unused one, and only warns (a config of 34 layers for 30 layers of
    weights ran, and scored); a tensor of another shape it raised on, a traceback."""
    missing, unused = sorted(found.get("missing_keys") or []), sorted(found.get("unexpected_keys") or [])
    resized = sorted(f"{name} is {tuple(stored)} where config.json makes it {tuple(expected)}"
                     for name, stored, expected in found.get("mismatched_keys") or [])
    said = [f"{len(names)} {what}, such as {names[0]}" for what, names in
            (("missing", missing), ("unused", unused), ("of another shape", resized)) if names]
    if said:
        raise UserError(f"{path}: its weights do not match its config.json ({'; '.join(said)}); the model would "
                        "run with random or missing layers")


def _renders(tokenizer, messages) -> bool:
    """Whether the model's chat template renders these messages: Gemma's and Mistral's refuse a
    system message (their template raises)."""
    from jinja2.exceptions import TemplateError

    try:
        tokenizer.apply_chat_template(chat(messages), add_generation_prompt=True, tokenize=False)
    except TemplateError:
        return False
    return True


def _instructions_in_user_message(messages) -> tuple[tuple[str, str], ...]:
    """The system message's instructions before the user message's text, for a model without a system role."""
    instructions = [content for role, content in messages if role == "system"]
    rest = [(role, content) for role, content in messages if role != "system"]
    if not instructions or not rest:
        return tuple(rest)
    (role, content), *after = rest
    return (role, "\n\n".join([*instructions, content])), *after

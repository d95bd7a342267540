"""Judges: requests in, JSON text out. The real one is a local instruct model under Outlines.

A judge sees only a list of requests and returns one answer per request, in order; batching
decisions (what goes together, how big) belong to the scheduler, not here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import torch

from ..requests import JudgeAnswer, JudgeRequest
from .grammar import GrammarTokenizer


class Judge(Protocol):
    identity: str  # names the model and everything about it that changes answers (cache key)

    def prompt_tokens(self, request: JudgeRequest) -> int: ...

    def generate(self, requests: list[JudgeRequest]) -> list[JudgeAnswer]: ...


@dataclass
class JudgeStats:
    """Counters the benchmark and the summary report."""

    requests: int = 0
    batches: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    decode_steps: int = 0
    generate_seconds: float = 0.0
    grammar_seconds: float = 0.0
    batch_sizes: list[int] = field(default_factory=list)


class TransformersJudge:
    """A causal LM from a local directory, decoding greedily, every row under its own grammar."""

    def __init__(self, path: str, name: str | None = None, device: str = "cpu", dtype: torch.dtype = torch.bfloat16,
                 fingerprint: str = ""):
        self.path, self.device, self.dtype = str(path), torch.device(device), dtype
        # Everything that changes the answers; the cache keys on it, so it must not need the model.
        self.identity = f"{name or path}|{fingerprint}|{dtype}|greedy"
        self.load_seconds = 0.0
        self.stats = JudgeStats()
        self._tokenizer = self._model = self._grammar = None
        self._prompt_ids: dict[JudgeRequest, list[int]] = {}

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            from ..hf import quiet

            quiet()

            self._tokenizer = AutoTokenizer.from_pretrained(self.path)
            if self._tokenizer.chat_template is None:
                raise ValueError(f"{self.path} has no chat template: a judge must be an instruct (chat) model")
        return self._tokenizer

    def load(self) -> None:
        """Load the weights; deferred so that a run answered from the cache never pays for it."""
        if self._model is not None:
            return
        from transformers import AutoModelForCausalLM

        from ..hf import quiet

        quiet()

        started = time.perf_counter()
        model = AutoModelForCausalLM.from_pretrained(self.path, dtype=self.dtype, attn_implementation="sdpa")
        self._model = model.to(self.device).eval()
        n_logits = model.get_output_embeddings().weight.shape[0]
        self._grammar = GrammarTokenizer(self.tokenizer, n_logits)
        eos = self._grammar.eos_token_id
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        self.load_seconds = time.perf_counter() - started

    def prompt_ids(self, request: JudgeRequest) -> list[int]:
        if request not in self._prompt_ids:
            text = self.tokenizer.apply_chat_template(request.chat(), add_generation_prompt=True, tokenize=False)
            self._prompt_ids[request] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return self._prompt_ids[request]

    def prompt_tokens(self, request: JudgeRequest) -> int:
        return len(self.prompt_ids(request))

    @torch.inference_mode()
    def generate(self, requests: list[JudgeRequest]) -> list[JudgeAnswer]:
        self.load()
        started = time.perf_counter()
        prompts = [self.prompt_ids(r) for r in requests]
        outputs = self._decode(prompts, [r.schema for r in requests], [r.max_new_tokens for r in requests])
        answers = [JudgeAnswer.parse(self.tokenizer.decode(ids), len(ids)) for ids in outputs]
        self.stats.requests += len(requests)
        self.stats.batches += 1
        self.stats.batch_sizes.append(len(requests))
        self.stats.prompt_tokens += sum(map(len, prompts))
        self.stats.generate_seconds += time.perf_counter() - started
        return answers

    def _decode(self, prompts: list[list[int]], schemas: list[str], limits: list[int]) -> list[list[int]]:
        """Greedy decoding of a left-padded batch, every row under its own grammar.

        A row leaves the batch as soon as its JSON is complete: the rows still decoding are
        compacted (cache included), so short answers stop costing compute when they are done.
        """
        constraint = self._grammar.constraint(schemas)
        input_ids, attention = self._left_pad(prompts)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        out = self._model(input_ids=input_ids, attention_mask=attention, position_ids=positions,
                          use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        outputs: list[list[int]] = [[] for _ in prompts]
        rows = list(range(len(prompts)))  # the request each batch slot still decodes
        while rows:
            chosen = self._choose(constraint, out.logits[:, -1, :])
            self.stats.decode_steps += 1
            emitted = {slot: token for slot, token in enumerate(chosen) if token != self._grammar.eos_token_id}
            self._timed_grammar(constraint.consume, emitted)
            decoding = []
            for slot, token in emitted.items():
                outputs[rows[slot]].append(token)
                if not constraint.finished(slot) and len(outputs[rows[slot]]) < limits[rows[slot]]:
                    decoding.append(slot)
            if not decoding:
                break
            if len(decoding) < len(rows):
                keep = torch.tensor(decoding, device=self.device)
                cache.batch_select_indices(keep)
                attention, positions = attention[keep], positions[keep]
                constraint.keep(decoding)
                rows, chosen = [rows[s] for s in decoding], [chosen[s] for s in decoding]
            attention = torch.cat([attention, attention.new_ones((len(rows), 1))], dim=1)
            positions = positions[:, -1:] + 1
            out = self._model(input_ids=torch.tensor(chosen, device=self.device)[:, None], attention_mask=attention,
                              position_ids=positions, past_key_values=cache, use_cache=True)
        self.stats.output_tokens += sum(map(len, outputs))
        return outputs

    def _choose(self, constraint, logits: torch.Tensor) -> list[int]:
        """The most likely token each row's grammar allows."""
        return self._timed_grammar(constraint.mask, logits.float()).argmax(-1).tolist()

    def _timed_grammar(self, work, *args):
        """Run grammar work, counting its time apart from the model's (the benchmark reports it)."""
        tick = time.perf_counter()
        result = work(*args)
        self.stats.grammar_seconds += time.perf_counter() - tick
        return result

    def _left_pad(self, prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(map(len, prompts))
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt):] = torch.tensor(prompt)
            mask[row, width - len(prompt):] = 1
        return ids.to(self.device), mask.to(self.device)

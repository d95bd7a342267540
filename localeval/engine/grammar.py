"""Outlines-constrained JSON for a batch whose rows each follow their own schema.

Each JSON Schema is compiled by llguidance, one of Outlines' grammar backends, the way Outlines'
own llguidance backend compiles one (`grammar_from("json_schema")`), with llguidance's options for
compact JSON, which Outlines' wrapper does not expose. Outlines' other route, a regular expression
for the whole answer (outlines_core's `build_regex_from_schema`), accepts the same answers but for
a few ways to write a character (a control character's escape, an escaped slash; tests/test_metrics.py); it was
the route here until it was measured: the whole answer is then one lexeme, so at every free-text
position the matcher walks the whole vocabulary through that expression (about 1 ms a row), where
the JSON compiler's string lexemes take precomputed token sets (about 0.2 ms a row,
docs/benchmarks.md). llguidance builds its automata lazily, so a new schema costs about a
millisecond rather than the seconds a full vocabulary index takes; that matters because schemas
differ by sentence count. The masks of all rows are filled in one parallel call. A row the grammar
leaves a few tokens (a verdict) keeps just those, read off its bitmask; only free-text rows unpack
their bits over the whole vocabulary. (llguidance's own masking kernel is not used: it is built
with torch.compile, which would need a C++ compiler at run time; nor is the module that holds it,
llguidance.torch, whose import of torch.compile's machinery cost about 0.65 s of every run's start:
its helpers are thin wrappers over the executor's calls, made here directly.)
"""

from __future__ import annotations

from functools import lru_cache

import llguidance
import llguidance.hf
import numpy as np
import torch

# Compact JSON, no whitespace between tokens: the structure (keys, punctuation, constant
# sentence numbers) is then fully determined, so the decoder appends it without asking the model,
# and the model cannot pad its output with whitespace until it runs out of tokens. (Objects must
# also be closed, "additionalProperties": false, for their ends to be forced: schemas.py.)
COMPACT_JSON = {"whitespace_flexible": False, "whitespace_pattern": "", "item_separator": ",", "key_separator": ":"}
BIT_POSITIONS = torch.arange(32, dtype=torch.int32)  # bit b of a bitmask word w is token 32w + b


@lru_cache(maxsize=None)
def schema_grammar(schema: str) -> str:
    """The llguidance grammar for a JSON Schema, compiled once per process."""
    return llguidance.LLMatcher.grammar_from_json_schema(schema, defaults=COMPACT_JSON)


@lru_cache(maxsize=None)
def schema_error(schema: str) -> str | None:
    """Why the grammar cannot hold an answer to this JSON Schema (a look-ahead in a pattern, say); None where it
    can. Asked of every request, by every judge, before any is decoded: a metric of a user's own whose schema
    failed to compile lost the whole call mid-batch, and passed under the scripted judge (a probe)."""
    try:
        error = llguidance.LLMatcher.validate_grammar(schema_grammar(schema), None)
    except (ValueError, TypeError, RuntimeError) as failed:  # not JSON Schema at all
        error = str(failed)
    return error.strip().splitlines()[-1].removeprefix("error: ") if error else None


class GrammarTokenizer:
    """The judge's tokenizer as llguidance sees it, made once per model."""

    def __init__(self, hf_tokenizer, n_logits: int):
        self.ll_tokenizer = llguidance.hf.from_tokenizer(hf_tokenizer, n_vocab=n_logits)
        self.eos_token_id = hf_tokenizer.eos_token_id
        self.executor = llguidance.LLExecutor()

    def constraint(self, schemas: list[str], capacity: int) -> "BatchConstraint":
        """Matchers for these schemas (one per request), at most `capacity` rows at a time."""
        return BatchConstraint(self, schemas, capacity)


class BatchConstraint:
    """One grammar matcher per row; masks logits so each row can only continue its own JSON.

    Rows come and go with the batch: `admit` adds matchers for new rows, `keep` drops finished ones.
    """

    def __init__(self, tokenizer: GrammarTokenizer, schemas: list[str], capacity: int):
        self.tokenizer, self.schemas = tokenizer, schemas
        self.matchers: list[llguidance.LLMatcher] = []
        # one row of int32 words per batch slot, bit b of word w for token 32w + b (as llguidance lays it out)
        self.bitmask = torch.full((capacity, (tokenizer.ll_tokenizer.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def admit(self, requests: list[int]) -> None:
        """New rows, after the current ones, for the schemas of these requests."""
        for index in requests:
            matcher = llguidance.LLMatcher(self.tokenizer.ll_tokenizer, schema_grammar(self.schemas[index]))
            if matcher.is_error():
                raise ValueError(f"invalid judge schema: {matcher.get_error()}")
            self.matchers.append(matcher)

    def consume(self, chosen: dict[int, int]) -> None:
        """Advance each listed row's matcher (slot -> token), all rows in one parallel call."""
        pairs = [(self.matchers[slot], token) for slot, token in chosen.items()]
        if not pairs:
            return
        accepted = self.tokenizer.executor.consume_token_par(pairs)
        for (matcher, token), ok in zip(pairs, accepted):
            if not ok:
                raise RuntimeError(f"grammar rejected token {token}: {matcher.get_error()}")

    def keep(self, slots: list[int]) -> None:
        """Drop the rows that finished; the rest move up, as the batch does."""
        self.matchers = [self.matchers[s] for s in slots]

    def finished(self, slot: int) -> bool:
        """The row's JSON is complete: its grammar allows nothing but the end."""
        return self.matchers[slot].is_stopped()

    def valid(self, slot: int, tokens: list[int]) -> int:
        """How many of `tokens` the row's grammar would take next, in order (none are consumed)."""
        return self.matchers[slot].validate_tokens(tokens) if tokens else 0

    def forced(self, slot: int) -> list[int]:
        """Consume and return the tokens the row's grammar now allows no alternative to."""
        matcher = self.matchers[slot]
        tokens = matcher.compute_ff_tokens()
        if tokens and not matcher.consume_tokens(tokens):
            raise RuntimeError(f"grammar rejected its own forced tokens: {matcher.get_error()}")
        return tokens

    def mask(self, logits: torch.Tensor, slots: list[int], few: int) -> tuple[torch.Tensor, list[list[int] | None]]:
        """Set the logits of every token the grammar of row `slots[i]` forbids to -inf (in place); the
        masked logits, and per row the tokens it allows where they are `few` or fewer (else None).

        A row with few allowed tokens (a verdict, a flag) keeps just those logits, read off the few
        nonzero words of its bitmask; only rows with many (free text) unpack their whole bitmask. Each
        kind is masked for all its rows at once: per row, a GPU would pay a copy, kernels and a wait."""
        pairs = [(self.matchers[slot], i) for i, slot in enumerate(slots)]
        words = self.bitmask.shape[1]  # the executor writes each row's mask at the pointer, row after row
        self.tokenizer.executor.unsafe_compute_mask_ptr(pairs, self.bitmask.data_ptr(), words * 4, len(slots))
        bitmask = self.bitmask[: len(slots)]
        allowed = _tokens_allowed(bitmask, few)
        wide = [row for row, tokens in enumerate(allowed) if tokens is None]
        if wide:
            _forbid(logits, wide, bitmask[wide])
        narrow = [row for row, tokens in enumerate(allowed) if tokens is not None]
        if narrow:
            _keep_only(logits, narrow, [allowed[row] for row in narrow])
        return logits, allowed


def _forbid(logits: torch.Tensor, rows: list[int], bitmask: torch.Tensor) -> None:
    """Every logit of these rows whose token the row's bitmask words (`bitmask[i]` for `rows[i]`)
    leave out to -inf, in place."""
    forbidden = _forbidden_tokens(bitmask, logits.shape[-1], logits.device)
    if rows == list(range(logits.shape[0])):  # every row, in order: in place
        logits.masked_fill_(forbidden, float("-inf"))
    else:
        index = torch.tensor(rows, device=logits.device)
        logits[index] = logits[index].masked_fill_(forbidden, float("-inf"))


def _forbidden_tokens(bitmask: torch.Tensor, vocab: int, device: torch.device) -> torch.Tensor:
    """Rows x vocab booleans on `device`: True where a row's bitmask words leave the token out, and for
    ids past the tokenizer's (padding of the output layer). For a CPU numpy unpacks the bits (masking 32
    rows of Qwen's vocabulary took 13.8 ms, against 22.8 with torch's shifts, on 2 AVX2 cores); to a GPU
    the words travel, 32x fewer bytes than the booleans, and are unpacked there."""
    forbidden = _left_out_by_numpy(bitmask) if device.type == "cpu" else _left_out_by_torch(bitmask.to(device))
    if forbidden.shape[1] < vocab:
        forbidden = torch.nn.functional.pad(forbidden, (0, vocab - forbidden.shape[1]), value=True)
    return forbidden[:, :vocab]


def _left_out_by_numpy(bitmask: torch.Tensor) -> torch.Tensor:
    """Per row of int32 words, a boolean per bit: True where the bit is 0 (bit b of word w: token 32w + b)."""
    octets = bitmask.numpy().astype("<i4", copy=False).view(np.uint8)  # the words' bytes, lowest first
    return torch.from_numpy(np.unpackbits(~octets, axis=-1, bitorder="little").view(np.bool_))


def _left_out_by_torch(bitmask: torch.Tensor) -> torch.Tensor:
    """_left_out_by_numpy on the words' own device."""
    bits = (bitmask.unsqueeze(-1) >> BIT_POSITIONS.to(bitmask.device)) & 1
    return (bits == 0).reshape(bitmask.shape[0], -1)


def _tokens_allowed(bitmask: torch.Tensor, few: int) -> list[list[int] | None]:
    """Per row of int32 bitmask words (bit b of word w is token 32w + b): the token ids it allows
    where they are `few` or fewer, read from the few nonzero words of those rows; else None."""
    counts = np.bitwise_count(bitmask.numpy().view(np.uint32)).sum(axis=-1)  # set bits per row
    narrow = np.flatnonzero(counts <= few)
    allowed: list[list[int] | None] = [None] * len(counts)
    for row in narrow:
        allowed[row] = []
    words = bitmask[torch.from_numpy(narrow)]
    rows, columns = words.nonzero(as_tuple=True)
    which, bits = ((words[rows, columns, None] >> BIT_POSITIONS) & 1).nonzero(as_tuple=True)
    # in row order, and in token order within a row, as nonzero reads them
    for row, token in zip(narrow[rows[which].numpy()].tolist(), (columns[which] * 32 + bits).tolist()):
        allowed[row].append(token)
    return allowed


def _keep_only(logits: torch.Tensor, rows: list[int], tokens: list[list[int]]) -> None:
    """Every logit of these rows to -inf but those of its tokens (`tokens[i]` for `rows[i]`), in place:
    one read and two writes for all the rows together."""
    at = torch.tensor([[row for row, kept in zip(rows, tokens) for _ in kept],
                       [token for kept in tokens for token in kept]], dtype=torch.long, device=logits.device)
    kept = logits[at[0], at[1]]
    logits[torch.tensor(rows, device=logits.device)] = float("-inf")
    logits[at[0], at[1]] = kept

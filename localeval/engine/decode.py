"""Greedy decoding of one batch, every row under its own grammar: the judge's inner loop.

Three things keep the work per answer small:
- **Shared prefixes.** A prompt is a prefix (the instructions, the same for every request of a
  metric) and a suffix (the sample). The prefix's keys and values are computed once per
  process and copied into every batch that uses it, so only suffixes go through the model.
- **Forced tokens.** Where the grammar allows a single continuation (keys, punctuation,
  constant sentence numbers) the tokens are appended without asking the model, and fed to it
  several per row in one forward pass. Every row of the pass is padded to the widest, so the
  width is bounded by `step_budget` tokens per pass: a small batch takes forced runs whole,
  while a large batch on a CPU, where each padded token costs compute, feeds one at a time.
- **Finished rows leave.** A row whose JSON is complete is dropped from the batch, cache included.

Where the grammar leaves a row only a few tokens to choose from (a 0/1 verdict, a flag), the
model's probability of each is kept (`ChoicePoint`): a judge's uncertainty is worth as much as
its greedy pick, and it costs no extra forward pass, only a softmax over the allowed tokens.

The cache grows in place (kv_cache.py) instead of being copied on every step.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .grammar import BatchConstraint
from .kv_cache import growing_cache


@dataclass(frozen=True)
class Prompt:
    prefix: tuple[int, ...]  # shared instructions: computed once per process, then reused
    suffix: tuple[int, ...]  # this request's own tokens; never empty, its last token gives the first logits


# A choice among at most this many allowed tokens is a choice between values (a 0/1 verdict, a
# flag), not free text: its probabilities are kept. Free text leaves thousands of tokens open.
MAX_CHOICE_TOKENS = 8
# Most padding a prefill pass may compute, as a share of its real prompt tokens (_similar_lengths).
PREFILL_PADDING = 0.25


@dataclass(frozen=True)
class ChoicePoint:
    """Where the grammar left a row a few tokens to choose from, and what the model made of them."""

    position: int  # index, in the row's output, of the token chosen here
    probabilities: dict[int, float]  # each allowed token's probability, renormalised over the allowed ones


@dataclass
class RowOutput:
    """What one row emits: its tokens, and the probabilities at its choice points."""

    tokens: list[int] = field(default_factory=list)
    choices: list[ChoicePoint] = field(default_factory=list)


@dataclass
class DecodeCounters:
    forward_passes: int = 0
    admissions: int = 0  # prefills: groups of requests that joined the batch
    forced_tokens: int = 0
    prefill_seconds: float = 0.0
    grammar_seconds: float = 0.0
    # What the model computed and read, padding included, for the roofline (scripts/bench_speed.py):
    prefix_tokens: int = 0  # shared instructions computed (once per process each)
    prefill_tokens: int = 0  # suffix tokens of prefill passes, rows x widest suffix of each pass
    decode_tokens: int = 0  # tokens fed by decoding passes, rows x width of each pass
    cache_tokens_read: int = 0  # keys and values each decoding pass attends to, rows x cache width, summed


class PrefixCache:
    """Keys and values of shared prompt prefixes, one batch row each, least recently used dropped."""

    def __init__(self, model, device: torch.device, capacity: int = 32):
        self.model, self.device, self.capacity = model, device, capacity
        self._entries: OrderedDict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = OrderedDict()

    def __contains__(self, prefix: tuple[int, ...]) -> bool:
        return prefix in self._entries

    def get(self, prefix: tuple[int, ...]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        if prefix in self._entries:
            self._entries.move_to_end(prefix)
            return self._entries[prefix]
        cache = growing_cache()
        self.model(input_ids=torch.tensor([prefix], device=self.device), past_key_values=cache, use_cache=True,
                   logits_to_keep=1)
        self._entries[prefix] = [(layer.keys.clone(), layer.values.clone()) for layer in cache.layers]
        if len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return self._entries[prefix]


class Batch:
    """The rows still decoding: cache, attention mask and next positions, kept in step."""

    def __init__(self, model, device: torch.device, pad_id: int):
        self.model, self.device, self.pad_id = model, device, pad_id
        self.cache = growing_cache()
        self.rows = 0

    def admit(self, groups: list[list[Prompt]], prefixes: PrefixCache) -> torch.Tensor:
        """Add rows for the prompts after the current ones, each group prefilled in a pass of its own;
        the logits of their last prompt tokens. The groups are stacked among themselves first, so the
        rows already decoding are copied once, however many groups join them."""
        newcomers, logits = Batch(self.model, self.device, self.pad_id), []
        for group in groups:
            joining = Batch(self.model, self.device, self.pad_id)
            logits.append(joining.prefill(group, prefixes))
            newcomers._join(joining)
        self._join(newcomers)
        return torch.cat(logits)

    def _join(self, other: "Batch") -> None:
        """Take `other`'s rows after ours: its state as it is when we have none, else stacked."""
        if self.rows == 0:
            self.cache, self.attention, self.next_position, self.rows = (
                other.cache, other.attention, other.next_position, other.rows)
        else:
            self._append(other)

    def _append(self, other: "Batch") -> None:
        """Stack `other`'s rows under ours, the shorter side's columns left-padded and masked out.

        Leading columns no remaining row attends to (those of rows that have left) are dropped
        on the way, so the cache does not keep growing while requests keep joining.
        """
        unused = int(self.attention.any(dim=0).long().argmax())
        width = max(self.attention.shape[1] - unused, other.attention.shape[1])
        self.attention = torch.cat([_left_pad(self.attention[:, unused:], width), _left_pad(other.attention, width)])
        self.next_position = torch.cat([self.next_position, other.next_position])
        for mine, theirs in zip(self.cache.layers, other.cache.layers):
            mine.append_rows(theirs, width, unused)
        self.rows += other.rows

    def prefill(self, prompts: list[Prompt], prefixes: PrefixCache) -> torch.Tensor:
        """Seed the cache with each row's prefix, run the suffixes; the logits of each row's last token.

        Row layout: [pad][prefix][pad][suffix]. Padding is masked out of attention and positions
        run on across it, so a row computes what it would alone.
        """
        width_prefix = max(len(p.prefix) for p in prompts)
        width_suffix = max(len(p.suffix) for p in prompts)
        if width_prefix:
            self._seed_prefixes(prompts, prefixes, width_prefix)
        self.attention = torch.zeros((len(prompts), width_prefix + width_suffix), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            self.attention[row, width_prefix - len(prompt.prefix):width_prefix] = 1
        self.attention = self.attention.to(self.device)
        self.next_position = torch.tensor([len(p.prefix) for p in prompts], device=self.device)
        self.rows = len(prompts)
        return self.step([list(p.suffix) for p in prompts], appended=False)

    def step(self, tokens: list[list[int]], appended: bool = True) -> torch.Tensor:
        """Feed each row its tokens (left-padded to the longest); the logits after each row's last one."""
        width = max(map(len, tokens))
        ids = torch.full((len(tokens), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(tokens), width), dtype=torch.long)
        offsets = torch.zeros((len(tokens), width), dtype=torch.long)
        for row, row_tokens in enumerate(tokens):
            n = len(row_tokens)
            ids[row, width - n:] = torch.tensor(row_tokens)
            mask[row, width - n:] = 1
            offsets[row, width - n:] = torch.arange(n)
        mask, offsets = mask.to(self.device), offsets.to(self.device)
        if appended:
            self.attention = torch.cat([self.attention, mask], dim=1)
        else:  # prefill: the suffix columns are already part of the attention mask's width
            self.attention[:, -width:] = mask
        positions = self.next_position[:, None] + offsets
        out = self.model(input_ids=ids.to(self.device), attention_mask=self.attention, position_ids=positions,
                         past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        self.next_position = self.next_position + mask.sum(dim=1)
        return out.logits[:, -1, :]

    def keep(self, slots: list[int]) -> None:
        self.rows = len(slots)
        if not slots:  # the next admission starts a fresh cache
            return
        index = torch.tensor(slots, device=self.device)
        self.cache.batch_select_indices(index)
        self.attention, self.next_position = self.attention[index], self.next_position[index]

    def _seed_prefixes(self, prompts: list[Prompt], prefixes: PrefixCache, width: int) -> None:
        """Each row's prefix keys and values, right-aligned in `width` columns, as the cache's start."""
        entries = {p.prefix: prefixes.get(p.prefix) for p in prompts if p.prefix}
        any_entry = next(iter(entries.values()))
        for index, (layer_keys, layer_values) in enumerate(any_entry):  # shapes may differ per layer
            keys = layer_keys.new_zeros((len(prompts), layer_keys.shape[1], width, layer_keys.shape[3]))
            values = layer_values.new_zeros((len(prompts), layer_values.shape[1], width, layer_values.shape[3]))
            for row, prompt in enumerate(prompts):
                if prompt.prefix:
                    prefix_keys, prefix_values = entries[prompt.prefix][index]
                    keys[row, :, width - len(prompt.prefix):] = prefix_keys[0]
                    values[row, :, width - len(prompt.prefix):] = prefix_values[0]
            self.cache.update(keys, values, index)


@dataclass(frozen=True)
class Admission:
    """How many requests decode together: the scheduler's limits, applied as rows free up."""

    rows: int  # most rows decoding at once; 1 decodes one request at a time
    prompt_tokens: int  # most rows x longest prompt suffix prefilled in one pass

    def fits(self, rows: int, prefilling: int, widest: int) -> bool:
        """Whether `rows` rows in all, `prefilling` of them new prompts padded to `widest` tokens, fit."""
        return rows <= self.rows and prefilling * widest <= self.prompt_tokens

    def refill_at(self) -> int:
        """Free rows worth a refill: a prefill and a cache merge cost about a few decoding passes."""
        return max(1, self.rows // 4)


def _left_pad(mask: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(mask, (width - mask.shape[1], 0))


def greedy_decode(model, device: torch.device, pad_id: int, eos_id: int, constraint: BatchConstraint,
                  prompts: list[Prompt], limits: list[int], admission: Admission, prefixes: PrefixCache,
                  step_budget: int, counters: DecodeCounters,
                  on_done: Callable[[int, RowOutput], None] = lambda index, output: None) -> list[RowOutput]:
    """What each prompt's row emits, its JSON complete (or cut at its limit).

    Prompts are admitted in the order given, as rows free up (continuous batching): a batch
    keeps decoding while finished rows are replaced, instead of waiting for its longest row.
    """
    queue = deque(range(len(prompts)))
    outputs = [RowOutput() for _ in prompts]
    batch, logits = Batch(model, device, pad_id), None
    rows: list[int] = []  # the prompt each batch slot decodes
    pending: list[list[int]] = []  # per slot: tokens chosen or forced, not yet fed to the model
    while queue or rows:
        if queue and admission.rows - len(rows) >= min(admission.refill_at(), len(queue)):
            admitted = _admit(queue, prompts, admission, len(rows))
            new_logits = _prefill(batch, [prompts[i] for i in admitted], prefixes, counters)
            constraint.admit(admitted)
            logits = new_logits if logits is None else torch.cat([logits, new_logits])
            rows, pending = rows + admitted, pending + [[] for _ in admitted]
        choosing = [slot for slot in range(len(rows)) if not pending[slot]]
        done = _choose(constraint, logits, choosing, eos_id, outputs, rows, pending, limits, counters)
        for slot in sorted(done):
            on_done(rows[slot], outputs[rows[slot]])
        if done:
            survivors = [slot for slot in range(len(rows)) if slot not in done]
            batch.keep(survivors)
            constraint.keep(survivors)
            rows, pending = [rows[s] for s in survivors], [pending[s] for s in survivors]
            logits = logits[survivors] if survivors else None
        if not rows:
            continue
        width = max(1, step_budget // len(rows))
        feed = [tokens[:width] for tokens in pending]
        pending = [tokens[width:] for tokens in pending]
        logits = batch.step(feed)
        counters.forward_passes += 1
        counters.decode_tokens += len(feed) * max(map(len, feed))
        counters.cache_tokens_read += batch.attention.numel()
    return outputs


def _admit(queue: deque, prompts: list[Prompt], admission: Admission, decoding: int) -> list[int]:
    """The next prompts that fit beside the `decoding` rows, by row count and prefill token budget."""
    admitted = [queue.popleft()]
    longest = len(prompts[admitted[0]].suffix)
    while queue:
        widest = max(longest, len(prompts[queue[0]].suffix))
        if not admission.fits(decoding + len(admitted) + 1, len(admitted) + 1, widest):
            break
        admitted.append(queue.popleft())
        longest = widest
    return admitted


def _prefill(batch: Batch, admitted: list[Prompt], prefixes: PrefixCache, counters: DecodeCounters) -> torch.Tensor:
    """Add the admitted prompts' rows to the batch, group by group; the logits of their last tokens."""
    started = time.perf_counter()
    groups = _similar_lengths(admitted)
    counters.prefix_tokens += sum(map(len, {p.prefix for p in admitted if p.prefix and p.prefix not in prefixes}))
    counters.prefill_tokens += sum(len(group) * max(len(p.suffix) for p in group) for group in groups)
    logits = batch.admit(groups, prefixes)
    counters.prefill_seconds += time.perf_counter() - started
    counters.forward_passes += 1
    counters.admissions += 1
    return logits


def _similar_lengths(admitted: list[Prompt]) -> list[list[Prompt]]:
    """The admitted prompts (shortest first) in groups that are each prefilled in one pass, cut where
    padding a group to its longest suffix would compute more than PREFILL_PADDING of extra tokens:
    padding costs what real tokens cost, while an extra pass costs only a merge of the caches."""
    groups: list[list[Prompt]] = []
    for prompt in admitted:
        if groups:
            joined = [*groups[-1], prompt]
            if len(joined) * max(len(p.suffix) for p in joined) <= (1 + PREFILL_PADDING) * sum(len(p.suffix) for p in joined):
                groups[-1] = joined
                continue
        groups.append([prompt])
    return groups


def _choose(constraint: BatchConstraint, logits: torch.Tensor, choosing: list[int], eos_id: int,
            outputs: list[RowOutput], rows: list[int], pending: list[list[int]], limits: list[int],
            counters: DecodeCounters) -> set[int]:
    """Pick each choosing row's token, append what the grammar then forces; the slots that finished."""
    tick = time.perf_counter()
    masked = constraint.mask(logits[choosing], choosing) if choosing else logits[:0]
    chosen = masked.argmax(-1).tolist()
    for slot, probabilities in zip(choosing, choice_probabilities(masked)):
        if probabilities is not None:
            output = outputs[rows[slot]]
            output.choices.append(ChoicePoint(len(output.tokens), probabilities))
    emitted = {slot: token for slot, token in zip(choosing, chosen) if token != eos_id}
    constraint.consume(emitted)
    done = set(choosing) - set(emitted)
    for slot, token in emitted.items():
        forced = constraint.forced(slot)
        counters.forced_tokens += len(forced)
        tokens = outputs[rows[slot]].tokens
        tokens.extend([token, *forced])
        if constraint.finished(slot) or len(tokens) >= limits[rows[slot]]:
            del tokens[limits[rows[slot]]:]
            done.add(slot)
        else:
            pending[slot] = [token, *forced]
    counters.grammar_seconds += time.perf_counter() - tick
    return done


def choice_probabilities(masked: torch.Tensor) -> list[dict[int, float] | None]:
    """Per row of grammar-masked logits: {token: probability} over the allowed tokens where only a
    few are allowed (a choice between values), else None (free text, or a single forced token)."""
    allowed = torch.isfinite(masked)
    counts = allowed.sum(-1).tolist()
    found: list[dict[int, float] | None] = [None] * len(counts)
    for row, count in enumerate(counts):
        if 1 < count <= MAX_CHOICE_TOKENS:
            tokens = allowed[row].nonzero().flatten()
            # float32 whatever the model's dtype: probabilities near 0 or 1 need the precision
            probabilities = torch.softmax(masked[row, tokens].float(), dim=-1)
            found[row] = dict(zip(tokens.tolist(), probabilities.tolist()))
    return found

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
- **Guessed tokens, confirmed in the same pass.** Where a pass has room (few rows), a row's next
  tokens are guessed from its own text (drafts.py) and fed after its real ones; the model's greedy
  choices at those positions keep the guesses they agree with, and the rest are masked out of the
  cache. The answer is the plain greedy one; a row that copies its prompt writes it in fewer passes.
  That matters most where one long answer decodes alone after the others are done.
- **Finished rows leave.** A row whose JSON is complete is dropped from the batch, cache included.

Where the grammar leaves a row only a few tokens to choose from (a 0/1 verdict, a flag), the
model's probability of each is kept (`ChoicePoint`): a judge's uncertainty is worth as much as
its greedy pick, and it costs no extra forward pass, only a softmax over the allowed tokens.

The cache grows in place (kv_cache.py) instead of being copied on every step. Which requests
join the batch, and when, is batching.py's: `GreedyRows` is what it admits them into.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ..errors import ScoringStopped
from ..options import given
from .drafts import PromptLookup
from .grammar import BatchConstraint
from .kv_cache import forward_over, growing_cache


@dataclass(frozen=True)
class Prompt:
    prefix: tuple[int, ...]  # shared instructions: computed once per process, then reused
    suffix: tuple[int, ...]  # this request's own tokens; never empty, its last token gives the first logits


# A choice among at most this many allowed tokens is a choice between values (a 0/1 verdict, a
# flag), not free text: its probabilities are kept. Free text leaves thousands of tokens open.
MAX_CHOICE_TOKENS = 8
# Most padding a prefill pass may compute, as a share of its real prompt tokens (_similar_lengths).
PREFILL_PADDING = 0.25
# Most guessed tokens a row is fed in one pass (drafts.py): beyond about this many, the guesses of
# a judge's answers are rarely all right, and each one costs a row of the output head's product.
DRAFT_TOKENS = 8
# Most tokens, guesses included, a pass that carries guesses may feed on a CPU. A pass is bound by
# reading the weights up to about 16 tokens (the weights' bytes at the memory's speed against 2
# flops a weight a token at the matmul peak: ~17 tokens for bfloat16 and float32 alike on the
# CPUs measured); beyond, each guess costs compute, and about 6 in 10 guesses are wrong.
CPU_DRAFT_BUDGET = 16


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
    decode_passes: int = 0  # forward passes that fed chosen and forced tokens
    prefill_passes: int = 0  # forward passes over prompts: one per group of similar length (_similar_lengths)
    admissions: int = 0  # refills: requests that joined the batch together, in one or more prefill passes
    forced_tokens: int = 0
    drafted_tokens: int = 0  # guessed tokens fed after rows' real ones (drafts.py)
    confirmed_tokens: int = 0  # of those, the ones the model's own choices agreed with
    prefill_seconds: float = 0.0
    grammar_seconds: float = 0.0
    # What the model computed and read, padding included, for the roofline (scripts/bench_speed.py):
    prefix_tokens: int = 0  # shared instructions computed (once per process each)
    prefill_tokens: int = 0  # suffix tokens of prefill passes, rows x widest suffix of each pass
    decode_tokens: int = 0  # tokens fed by decoding passes, rows x width of each pass
    cache_tokens_read: int = 0  # keys and values each decoding pass attends to, rows x cache width, summed

    @property
    def forward_passes(self) -> int:
        return self.prefill_passes + self.decode_passes


class PrefixCache:
    """Keys and values of shared prompt prefixes, one batch row each, least recently used dropped."""

    def __init__(self, model, device: torch.device, capacity: int = 32):
        self.model, self.device, self.capacity = model, device, capacity
        self._entries: OrderedDict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = OrderedDict()

    def clear(self) -> None:
        self._entries.clear()

    def __contains__(self, prefix: tuple[int, ...]) -> bool:
        return prefix in self._entries

    def get(self, prefix: tuple[int, ...]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        if prefix in self._entries:
            self._entries.move_to_end(prefix)
            return self._entries[prefix]
        cache = growing_cache()
        forward_over(self.model, cache, input_ids=torch.tensor([prefix], device=self.device), logits_to_keep=1)
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

    def step(self, tokens: list[list[int]], appended: bool = True, keep: int = 1) -> torch.Tensor:
        """Feed each row its tokens (left-padded to the longest); per row, the logits after each of
        its last `keep` positions (rows x keep x vocabulary)."""
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
        out = forward_over(self.model, self.cache, input_ids=ids.to(self.device), attention_mask=self.attention,
                           position_ids=positions, logits_to_keep=keep)
        self.next_position = self.next_position + mask.sum(dim=1)
        return out.logits[:, -keep:, :]

    def retract(self, tokens: list[int]) -> None:
        """Forget the last `tokens[row]` tokens fed to each row (guesses the model did not confirm):
        masked out of attention and their positions reused, as if they had never been fed. They are
        a row's last columns, since each pass right-aligns the rows' tokens."""
        counts = torch.tensor(tokens, device=self.device)
        columns = torch.arange(self.attention.shape[1], device=self.device)
        self.attention = self.attention.masked_fill(columns >= self.attention.shape[1] - counts[:, None], 0)
        self.next_position = self.next_position - counts

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


def _left_pad(mask: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(mask, (width - mask.shape[1], 0))


@dataclass
class Row:
    """One request decoding in a batch slot: what it emitted, what the model has yet to be fed, and
    the guesses fed after that in the last pass, of which the model's choices have confirmed some."""

    request: int  # its index among the requests decoded
    limit: int  # most tokens it may emit
    lookup: PromptLookup  # its prompt and output, for guessing what comes next
    output: RowOutput = field(default_factory=RowOutput)
    pending: list[int] = field(default_factory=list)  # tokens chosen or forced, not yet fed to the model
    draft: list[int] = field(default_factory=list)  # guesses fed in the last pass after its real tokens
    confirmed: int = 0  # how many of `draft` its choices since that pass have matched

    def emit(self, tokens: list[int], complete: bool) -> bool:
        """Append a chosen token and those the grammar forced after it; whether the row is done
        (its JSON `complete`, or its limit reached: the output is then cut there). Tokens that match
        the guesses already fed need no feeding; the first that does not ends the guesses' use."""
        guessed = self.draft[self.confirmed:]
        matched = 0
        while matched < min(len(tokens), len(guessed)) and tokens[matched] == guessed[matched]:
            matched += 1
        self.confirmed += matched
        self.output.tokens.extend(tokens)
        if complete or len(self.output.tokens) >= self.limit:
            del self.output.tokens[self.limit:]
            return True
        self.lookup.extend(tokens)
        self.pending = tokens[matched:]
        return False

    def unconfirmed(self) -> int:
        """Guesses fed that the model did not confirm: to be forgotten by the cache."""
        return len(self.draft) - self.confirmed


@dataclass
class Decoder:
    """A loaded model and what greedy decoding needs of it: made once per judge, used by every batch."""

    model: object
    device: torch.device
    pad_id: int
    eos_id: int
    prefixes: PrefixCache


class GreedyRows:
    """The rows of a batch decoded greedily by a model, each under its own grammar: the `Rows` that
    batching.decode_continuously admits real requests into."""

    def __init__(self, decoder: Decoder, constraint: BatchConstraint, prompts: list[Prompt], limits: list[int],
                 step_budget: int, counters: DecodeCounters, draft_tokens: int = DRAFT_TOKENS,
                 draft_budget: int = CPU_DRAFT_BUDGET):
        self.decoder, self.constraint, self.prompts, self.limits = decoder, constraint, prompts, limits
        self.step_budget = step_budget  # most tokens one decoding pass feeds, rows x width (judge.py)
        self.draft_tokens = draft_tokens  # most guesses a row is fed in a pass; 0: none
        self.draft_budget = min(draft_budget, step_budget)  # most tokens a pass with guesses feeds, rows x width
        self.counters = counters
        self.batch = Batch(decoder.model, decoder.device, decoder.pad_id)
        self.rows: list[Row] = []  # one per batch slot, in slot order
        # per slot, the logits after each of the last positions fed (slots x positions x vocabulary):
        # a row's guesses are its last positions, its real tokens end just before them
        self.logits: torch.Tensor | None = None

    def decoding(self) -> int:
        return len(self.rows)

    def admit(self, requests: list[int]) -> None:
        prompts = [self.prompts[i] for i in requests]
        logits = _prefill(self.batch, prompts, self.decoder.prefixes, self.counters)
        self.constraint.admit(requests)
        if self.logits is not None:  # the rows decoding may have been fed guesses: as many positions
            logits = logits.expand(-1, self.logits.shape[1], -1)
        self.logits = logits if self.logits is None else torch.cat([self.logits, logits])
        self.rows += [Row(i, self.limits[i], PromptLookup(p.prefix + p.suffix)) for i, p in zip(requests, prompts)]

    def step(self, on_done: Callable[[int, RowOutput], None]) -> None:
        """Choose where rows wait for the model, announce and drop the rows that finished, feed the rest."""
        done = self._choose()
        for slot in sorted(done):
            on_done(self.rows[slot].request, self.rows[slot].output)
        self._forget_guesses()
        if done:
            self._keep([slot for slot in range(len(self.rows)) if slot not in done])
        if self.rows:
            self._feed()

    def _choose(self) -> set[int]:
        """Pick the token of each row that waits for the model, append what the grammar then forces,
        and again while the tokens picked are the guesses fed after them; the slots that finished."""
        tick = time.perf_counter()
        done: set[int] = set()
        choosing = [slot for slot, row in enumerate(self.rows) if not row.pending]
        while choosing:
            done |= self._choose_once(choosing)
            choosing = [slot for slot in choosing if slot not in done and not self.rows[slot].pending]
        self.counters.grammar_seconds += time.perf_counter() - tick
        return done

    def _choose_once(self, choosing: list[int]) -> set[int]:
        """One token for each of these rows, from the logits after its last confirmed position."""
        last = self.logits.shape[1] - 1
        positions = [last - len(self.rows[slot].draft) + self.rows[slot].confirmed for slot in choosing]
        logits = self.logits[choosing, positions]
        masked, few = self.constraint.mask(logits, choosing, MAX_CHOICE_TOKENS)
        chosen = masked.argmax(-1).tolist()
        for slot, probabilities in zip(choosing, choice_probabilities(masked, few)):
            if probabilities is not None:
                output = self.rows[slot].output
                output.choices.append(ChoicePoint(len(output.tokens), probabilities))
        emitted = {slot: token for slot, token in zip(choosing, chosen) if token != self.decoder.eos_id}
        self.constraint.consume(emitted)
        done = set(choosing) - set(emitted)
        for slot, token in emitted.items():
            forced = self.constraint.forced(slot)
            self.counters.forced_tokens += len(forced)
            if self.rows[slot].emit([token, *forced], self.constraint.finished(slot)):
                done.add(slot)
        return done

    def _forget_guesses(self) -> None:
        """Mask out of the cache the guesses the rows were fed and did not confirm."""
        unconfirmed = [row.unconfirmed() for row in self.rows]
        self.counters.confirmed_tokens += sum(row.confirmed for row in self.rows)
        if any(unconfirmed):
            self.batch.retract(unconfirmed)
        for row in self.rows:
            row.draft, row.confirmed = [], 0

    def _keep(self, survivors: list[int]) -> None:
        self.batch.keep(survivors)
        self.constraint.keep(survivors)
        self.rows = [self.rows[slot] for slot in survivors]
        self.logits = self.logits[survivors] if survivors else None

    def _feed(self) -> None:
        """One decoding pass: each row's pending tokens, as many as the step budget leaves each row,
        and, where that leaves room, guesses of what follows them."""
        width = max(1, self.step_budget // len(self.rows))
        guessing_width = max(1, self.draft_budget // len(self.rows))
        feed = []
        for slot, row in enumerate(self.rows):
            tokens, row.pending = row.pending[:width], row.pending[width:]
            row.draft = [] if row.pending else self._guess(slot, row, guessing_width - len(tokens))
            feed.append(tokens + row.draft)
        self.logits = self.batch.step(feed, keep=1 + max(len(row.draft) for row in self.rows))
        self.counters.decode_passes += 1
        self.counters.decode_tokens += len(feed) * max(map(len, feed))
        self.counters.drafted_tokens += sum(len(row.draft) for row in self.rows)
        self.counters.cache_tokens_read += self.batch.attention.numel()

    def _guess(self, slot: int, row: Row, room: int) -> list[int]:
        """What the row will likely write next, at most `room` tokens, cut where its grammar would
        refuse one (the model could not pick it) and before the end of its answer."""
        room = min(room, self.draft_tokens, row.limit - len(row.output.tokens))
        if room < 1:
            return []
        guess = row.lookup.propose(room)
        if self.decoder.eos_id in guess:
            guess = guess[:guess.index(self.decoder.eos_id)]
        return guess[:self.constraint.valid(slot, guess)]


def _prefill(batch: Batch, admitted: list[Prompt], prefixes: PrefixCache, counters: DecodeCounters) -> torch.Tensor:
    """Add the admitted prompts' rows to the batch, group by group; the logits of their last tokens."""
    started = time.perf_counter()
    groups = _similar_lengths(admitted)
    counters.prefix_tokens += sum(map(len, {p.prefix for p in admitted if p.prefix and p.prefix not in prefixes}))
    counters.prefill_tokens += sum(len(group) * max(len(p.suffix) for p in group) for group in groups)
    logits = batch.admit(groups, prefixes)
    counters.prefill_seconds += time.perf_counter() - started
    counters.prefill_passes += len(groups)
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


def choice_probabilities(masked: torch.Tensor, few: list[list[int] | None]) -> list[dict[int, float] | None]:
    """Per row of grammar-masked logits: {token: probability} over the allowed tokens where the row
    allows a few (`few[row]`, as the grammar gives them: a choice between values), else None (free
    text, or a single forced token). Rows with as many allowed tokens go through one softmax, each row
    normalised on its own as it would be alone (no padding joins its sum)."""
    found: list[dict[int, float] | None] = [None] * len(few)
    by_count: dict[int, list[int]] = {}
    for row, tokens in enumerate(few):
        if tokens is not None and len(tokens) > 1:
            by_count.setdefault(len(tokens), []).append(row)
    for rows in by_count.values():
        tokens = torch.tensor([few[row] for row in rows], device=masked.device)
        # float32 whatever the model's dtype: probabilities near 0 or 1 need the precision
        chosen = masked[torch.tensor(rows, device=masked.device)[:, None], tokens].float()
        for row, probabilities in zip(rows, torch.softmax(chosen, dim=-1).tolist()):
            if any(math.isnan(probability) for probability in probabilities):  # read here anyway: costs nothing
                raise ScoringStopped(_not_numbers())
            found[row] = dict(zip(few[row], probabilities))
    return found


def _not_numbers() -> str:
    """Said where the judge's logits at a verdict are NaN: its scores were 0 with NaN probabilities, unsaid, or
    a traceback when written (a probe's weights with 256 KB overwritten, which the store's check cannot see)."""
    return ("the judge's outputs are not numbers (NaN) where it gives a verdict: its weights are damaged (bytes "
            "changed inside a file: copy the model folder again, or install it again) or overflow in its dtype "
            f"(try {given('dtype', 'float32')})")

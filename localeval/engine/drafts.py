"""Draft tokens by prompt lookup: what a row is likely to write next, guessed from its own text.

A judge copies. Its claims restate the response, its questions reuse the response's words, its
reasons quote the passages. So where a row's last few tokens occurred before, in its prompt or in
its own answer, the tokens that followed them then are a good guess of what it writes next.
The decoder feeds such guesses after a row's real tokens in the same forward pass and keeps the
longest run the model's own greedy choices confirm (decode.py): the answer is the one plain greedy
decoding gives, in fewer passes. Guessing costs a dictionary lookup; a wrong guess costs only the
compute of the tokens fed for nothing, which is why the decoder drafts only where a pass has room.
"""

from __future__ import annotations

from collections.abc import Sequence

LONGEST_MATCH = 3  # n-grams looked up, longest first: a longer match guesses better


class PromptLookup:
    """One row's tokens so far (prompt, then answer), indexed by n-gram for the next guess."""

    def __init__(self, prompt: Sequence[int], longest: int = LONGEST_MATCH):
        self.tokens: list[int] = []
        self.longest = longest
        # n-gram -> where the tokens after its latest occurrence start (always a real position)
        self._after: dict[tuple[int, ...], int] = {}
        self.extend(prompt)

    def extend(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            # Index the n-grams that end just before the new token: it is what followed them.
            end = len(self.tokens)
            for n in range(1, min(self.longest, end) + 1):
                self._after[tuple(self.tokens[end - n:end])] = end
            self.tokens.append(token)

    def propose(self, most: int) -> list[int]:
        """Up to `most` tokens that followed the latest earlier occurrence of the longest n-gram the
        row ends with; none where no n-gram recurs."""
        if most < 1:
            return []
        for n in range(min(self.longest, len(self.tokens)), 0, -1):
            start = self._after.get(tuple(self.tokens[-n:]))
            if start is not None:
                return self.tokens[start:start + most]
        return []

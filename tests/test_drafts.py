"""Prompt lookup: the guesses the decoder feeds come from where the row's last tokens occurred before."""

from localeval.engine.drafts import PromptLookup


def test_the_tokens_after_the_latest_earlier_occurrence_of_the_longest_match_are_guessed():
    lookup = PromptLookup([1, 2, 3, 4, 9, 2, 3, 5, 6, 7])
    lookup.extend([2, 3])  # (2, 3) occurred twice before: the latest, followed by 5, 6, 7, wins
    assert lookup.propose(2) == [5, 6]
    assert lookup.propose(8) == [5, 6, 7, 2, 3]  # as far as the row's tokens go
    lookup.extend([4])  # (2, 3, 4) occurred once, followed by 9
    assert lookup.propose(3) == [9, 2, 3]


def test_a_shorter_match_is_used_where_no_longer_one_recurs_and_none_where_nothing_does():
    lookup = PromptLookup([7, 8, 1, 9])
    lookup.extend([5, 8])  # (5, 8) never occurred; (8,) did, followed by 1
    assert lookup.propose(2) == [1, 9]
    lookup.extend([6])
    assert lookup.propose(4) == []
    assert PromptLookup([]).propose(4) == []
    assert PromptLookup([1, 1, 1]).propose(0) == []


def test_a_guess_may_run_into_tokens_the_row_itself_wrote():
    lookup = PromptLookup([3, 4])
    lookup.extend([3, 4, 3])  # a repeating answer: (4, 3) occurred, followed by 4, 3
    assert lookup.propose(4) == [4, 3]

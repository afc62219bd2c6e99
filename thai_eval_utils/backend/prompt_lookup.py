"""Prompt-lookup drafts for greedy decoding (Saxena, "Prompt Lookup Decoding", 2023; transformers'
``generate(prompt_lookup_num_tokens=...)``): when the last few tokens of a row occurred earlier in its prompt or its
own output, the tokens that followed them then are a guess of what comes next. The engine feeds the guess with the
row's last token in one forward call and keeps the guessed tokens only while they equal the model's own greedy
choice, so the text is the greedy text; a right guess turns several one-token decode steps into one wider step.

Written here because transformers' prompt lookup runs only at batch size 1 (assisted generation), while the engine
decodes many rows in one batch. The index is incremental: each new token updates a dictionary from every n-gram
(n = 1..``max_ngram``) to where it last ended, so a lookup costs O(``max_ngram``) whatever the row's length.
"""

from __future__ import annotations

from collections.abc import Sequence


class PromptLookup:
    """The n-gram index of one row (its prompt then its generated tokens) and its drafts.

    Example: after the tokens ``[5, 6, 7, 8, 5, 6]``, ``draft(3)`` finds the bigram ``(5, 6)`` ending at index 1 and
    proposes what followed it: ``[7, 8, 5]``.
    """

    def __init__(self, tokens: Sequence[int], max_ngram: int = 3) -> None:
        self.max_ngram = max_ngram
        self.tokens: list[int] = []
        self.last_end: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        """Append ``tokens``; every n-gram ending before the newest token is indexed by its last end position."""
        for token in tokens:
            self.tokens.append(token)
            end = len(self.tokens) - 2  # index the n-grams ending at the token before: the newest has no follower
            for n in range(1, self.max_ngram + 1):
                if end - n + 1 < 0:
                    break
                self.last_end[tuple(self.tokens[end - n + 1 : end + 1])] = end

    def draft(self, k: int) -> list[int]:
        """Up to ``k`` tokens that followed the latest earlier occurrence of the longest matching suffix n-gram
        (n from ``max_ngram`` down to 1); empty when the last token never occurred before."""
        if k < 1:
            return []
        for n in range(min(self.max_ngram, len(self.tokens)), 0, -1):
            end = self.last_end.get(tuple(self.tokens[-n:]))
            if end is not None:
                return self.tokens[end + 1 : end + 1 + k]
        return []

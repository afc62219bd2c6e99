"""benchmarks/attention_bench.py: the packed row it times is laid out as the engine lays one out (a shared trunk,
each document's context, then one child segment per answer choice), on real Thai ARC requests."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import attention_bench as ab

from thai_eval_utils.backend.encoding import encode_pairs


def test_packed_row_layout(tiny_tokenizer):
    tok = tiny_tokenizer
    pairs = [
        ("คำถาม: ท้องฟ้าสีอะไร\nคำตอบ:", " สีฟ้า"),
        ("คำถาม: ท้องฟ้าสีอะไร\nคำตอบ:", " สีแดงเข้ม"),
        ("คำถาม: น้ำแข็งเย็นไหม\nคำตอบ:", " เย็น"),
        ("คำถาม: น้ำแข็งเย็นไหม\nคำตอบ:", " ร้อน"),
    ]
    enc = encode_pairs(tok, pairs, False)
    ids, pos, seg, anc, n_docs = ab.packed_row(tok, pairs, budget=10_000)
    assert n_docs == 2
    ctx = [enc[0][0], enc[2][0]]
    trunk = next(i for i, (a, b) in enumerate(zip(*ctx)) if a != b)  # the tokens both contexts share
    assert ids[:trunk] == ctx[0][:trunk] and set(seg[:trunk]) == {0}
    # document 1: its context after the trunk, then each choice's fed tokens (all but the last)
    choices = [enc[0][1][:-1], enc[1][1][:-1]]
    n1 = len(ctx[0]) - trunk + sum(len(c) for c in choices)
    assert ids[trunk : trunk + n1] == ctx[0][trunk:] + choices[0] + choices[1]
    assert pos[trunk : trunk + len(ctx[0]) - trunk] == list(range(trunk, len(ctx[0])))
    c1 = trunk + len(ctx[0]) - trunk
    assert pos[c1 : c1 + len(choices[0])] == list(range(len(ctx[0]), len(ctx[0]) + len(choices[0])))
    # segments: trunk 0, context 1, its two choices 2 and 3, the next document 4 ...; choices see their context
    # and the trunk, never each other or the other document
    assert all(len(c) > 1 for _, c in enc)  # every choice has fed tokens, so every choice is a segment
    assert anc.shape == (1 + 2 * (1 + 2), 1 + 2 * (1 + 2))
    assert anc[2].tolist()[:4] == [True, True, True, False] and anc[3].tolist()[:4] == [True, True, False, True]
    assert not anc[4][1:4].any() and anc[4][0]
    # a budget below the second document keeps only the first
    assert ab.packed_row(tok, pairs, budget=trunk + n1)[4] == 1
    assert isinstance(anc, np.ndarray) and anc.dtype == bool

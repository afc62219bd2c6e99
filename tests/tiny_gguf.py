"""A tiny Llama-architecture GGUF with a small Thai vocabulary, written with gguf-py for tests and benchmarks.

Why it exists: llama-cpp-python's server sorts the whole vocabulary in Python for every echoed prompt token
(``Llama._create_completion``, ``sorted(zip(logprobs_token, ...))``). With Gemma 3's 262,144 entries that is about
0.3 s per token on two cores, so a 5-shot MMLU or TruthfulQA request (hundreds of tokens) takes minutes, whatever
the client. A vocabulary of about a thousand pieces makes the same server answer the same requests in
milliseconds, so every Thai-H6 task can go through a real server in the test suite.

The tokenizer is a sentencepiece-style ("llama") vocabulary that llama.cpp tokenizes itself: byte-fallback tokens
``<0x00>``..``<0xFF>``, every character of the given texts, and their most frequent 2- and 3-character pieces
(scores by frequency, so llama.cpp's bigram merges make multi-character tokens, some of which straddle a
context/continuation boundary). No space prefix (as Gemma). The weights are random (seeded): the test compares the
server with llama.cpp run in-process on the same file, so their values do not matter.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable

import numpy as np

#: sentencepiece's whitespace symbol: llama.cpp's SPM tokenizer writes spaces as this character.
SPACE = "\u2581"


def thai_vocabulary(texts: Iterable[str], n_pieces: int = 700) -> tuple[list[str], list[float], list[int]]:
    """(pieces, scores, token types) for llama.cpp's SPM tokenizer: <unk>, <s>, </s>, 256 bytes, characters, pieces."""
    import gguf

    T = gguf.TokenType
    chars: Counter[str] = Counter()
    grams: Counter[str] = Counter()
    for text in texts:
        s = text.replace(" ", SPACE)
        chars.update(s)
        for n in (2, 3):
            grams.update(s[i : i + n] for i in range(len(s) - n + 1) if "\n" not in s[i : i + n])
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [T.UNKNOWN, T.CONTROL, T.CONTROL] + [T.BYTE] * 256
    scores = [0.0] * len(pieces)
    for c, n in chars.most_common():
        if c != "\n":  # newlines go through the byte tokens
            pieces.append(c), types.append(T.NORMAL), scores.append(-100.0 + np.log(n))
    for g, n in grams.most_common(n_pieces):
        if n < 3:
            break
        pieces.append(g), types.append(T.NORMAL), scores.append(float(np.log(n)))
    return pieces, scores, [int(t) for t in types]


def write_tiny_gguf(
    path: str | Path,
    texts: Iterable[str],
    *,
    seed: int = 0,
    n_embd: int = 64,
    n_layer: int = 2,
    n_head: int = 4,
    n_ff: int = 128,
    n_ctx: int = 4096,
    add_bos: bool = True,
) -> Path:
    """Write a random-weight Llama GGUF (float32 tensors) with :func:`thai_vocabulary` of ``texts``; return its path.
    ``add_bos``: whether llama.cpp (and so llama-cpp-python's server) prepends BOS to a text prompt."""
    import gguf

    path = Path(path)
    pieces, scores, types = thai_vocabulary(texts)
    rng = np.random.default_rng(seed)

    def weight(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("thai-eval tiny Thai test model (random weights)")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(add_bos)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)
    w.add_tensor("token_embd.weight", weight(len(pieces), n_embd, scale=1.0))
    w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor("output.weight", weight(len(pieces), n_embd, scale=1.0))
    for i in range(n_layer):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", np.ones(n_embd, np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(b + name + ".weight", weight(n_embd, n_embd))
        w.add_tensor(b + "ffn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(b + "ffn_gate.weight", weight(n_ff, n_embd))
        w.add_tensor(b + "ffn_up.weight", weight(n_ff, n_embd))
        w.add_tensor(b + "ffn_down.weight", weight(n_embd, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_tokenizer_folder(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """The GGUF's vocabulary as a Hugging Face tokenizer folder (what ``--tokenizer`` takes): converted by transformers,
    then told not to prepend the space symbol (the GGUF says ``add_space_prefix`` false, which the conversion drops),
    so that it splits the probe text as llama.cpp does (its BPE merges can still differ from llama.cpp's
    score-ordered merges on a few rarer strings; the served path sends text prompts and never uses its ids)."""
    import json

    from transformers import AutoTokenizer

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name).save_pretrained(out_dir)
    spec = json.loads((out_dir / "tokenizer.json").read_text(encoding="utf-8"))
    spec["pre_tokenizer"]["prepend_scheme"] = "never"
    spec["decoder"]["decoders"] = [d for d in spec["decoder"]["decoders"] if d["type"] != "Strip"]
    (out_dir / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    return out_dir


def h6_sample_texts(root: str | Path = "data/thai_h6/h6") -> list[str]:
    """Every string field of the repo's Thai-H6 samples (the vocabulary's source)."""
    import json

    out: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for f in sorted(Path(root).rglob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                walk(json.loads(line))
    return out

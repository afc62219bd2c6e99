"""The local generation engine: continuous batching over a transformers causal LM, with lm-eval's
``generate_until`` semantics (prompt left-truncated to ``max_length - max_new_tokens``, greedy by default, text cut
before the first stop string, the model's EOS tokens end a row).

How it runs: every prompt is prefilled alone (the same shapes as lm-eval at batch size 1, and no padding), then
joins the decode batch, one padded ``DynamicCache`` whose rows are right-aligned on a common frame of columns
(left padding, masked). A row that reaches EOS, a stop string or ``max_new_tokens`` leaves the batch at once and the
next prompt is prefilled into its slot, so no step computes a finished row and no prefill computes padding. The
frame's leading all-padding columns are cut whenever rows leave. A KV-memory budget bounds the rows admitted.

Prompts that share a prefix of at least ``min_shared`` tokens (a few-shot block, a task instruction) compute it
once (:mod:`.prefill_plan`): the prefix's cache is kept while the prompts under it are prefilled, each on a copy,
one after another; only the current chain of shared prefixes is held (outside the KV budget: at most one prompt's
cache). ``min_shared=0`` prefills every prompt whole, exactly as lm-eval at batch size 1.

With ``draft_tokens`` > 0 (off by default), greedy rows verify prompt-lookup drafts (:mod:`.prompt_lookup`): a
step feeds each row's last token and up to ``draft_tokens`` tokens that followed the latest earlier occurrence of
its last n-gram, and keeps the drafted tokens while they equal the greedy choice, so a right guess gives several
tokens for one forward call. The rows' caches are then re-aligned (a row that kept fewer shifts right), so every
row stays contiguous on the frame and a sliding-window layer still holds each row's own last tokens. Sampled rows
never draft.

Why not transformers' own continuous batching (``generate_batch`` / ``ContinuousBatchingManager``, paged attention):
tried with transformers 5.24 on this CPU and the embedded Gemma 3 270M (4 Thai prompts, 40 greedy tokens), one of
the four texts differed from ``hf_model.generate`` at batch size 1, it took 64 s against 88 s for batch-1
``generate`` (a 1.4x gain under load), and it has no per-request seeded sampler, which the benchmarks need (a seeded
item must give the same text whatever shares its batch). This loop uses the model's own forward and ``DynamicCache``
and HF's logits warpers; only the scheduling is written here.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm
from transformers import DynamicCache, LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from thai_eval_utils.backend.prefill_plan import MIN_SHARED_TOKENS, plan_prefill
from thai_eval_utils.backend.prefix_tree import Node
from thai_eval_utils.backend.prompt_lookup import PromptLookup
from thai_eval_utils.backend.stops import StopScanner, cut_at_stop

#: KV-cache budget on a CPU (bytes): the cache of the rows in flight, worst case (every row reaching max_new_tokens)
CPU_KV_BUDGET = 2 * 1024**3
#: share of the free accelerator memory the KV cache may take when no budget is given
GPU_KV_SHARE = 0.5
#: rows decoded together at most. CPU: a decode step reads every weight once whatever its rows (2 cores, embedded
#: model, `benchmarks/generation_speed.py --parts rows` in docs/benchmarks.md: 1 row 112 ms a step, 16 rows 231 ms,
#: 48 rows 454 ms, i.e. 9.5 ms a row against 14.4 at 16). 64 rows measured 8.3 and 9.1 ms a row in two runs: 48 keeps
#: most of the gain with a smaller KV cache and fewer items per store flush (the run loops' batch is this many)
CPU_MAX_ROWS, GPU_MAX_ROWS = 48, 128
#: draft tokens a greedy row verifies per decode step (prompt lookup); off by default: on the CPU with the embedded
#: model a step of 16 rows x 4 positions costs about as much as the steps it saves (docs/benchmarks.md)
DRAFT_TOKENS = 0
#: top_k transformers applies when sampling and the model's generation config sets none (its documented default)
HF_DEFAULT_TOP_K = 50


@dataclass
class GenerationStats:
    """Work one engine call did, in tokens: ``prompt_tokens`` prefilled (a shared prefix once), ``shared_tokens``
    prompt tokens taken from a shared prefix's cache instead, ``generated_tokens`` kept (EOS included),
    ``decode_row_steps`` rows computed by decode steps (each a token fed), ``steps`` decode forward calls,
    ``peak_rows`` the widest decode batch, ``peak_kv_bytes`` the largest KV cache held; with prompt-lookup drafts,
    ``draft_positions`` the positions decode steps fed beyond each row's last token (drafts and their padding) and
    ``draft_accepted`` the drafted tokens that equalled the greedy choice."""

    prompt_tokens: int = 0
    shared_tokens: int = 0
    generated_tokens: int = 0
    decode_row_steps: int = 0
    draft_positions: int = 0
    draft_accepted: int = 0
    steps: int = 0
    peak_rows: int = 0
    peak_kv_bytes: int = 0


@dataclass
class _Row:
    """One prompt in flight: its index in the caller's list, generated tokens, sampler state and stop scanner."""

    index: int
    tokens: list[int] = field(default_factory=list)
    generator: torch.Generator | None = None
    lookup: PromptLookup | None = None


def encode_prompts(tokenizer: Any, prompts: Sequence[str], *, add_special_tokens: bool, room: int,
                   max_length: int) -> list[list[int]]:
    """Token ids of each prompt, left-truncated to ``room`` tokens with a warning (lm-eval's ``generate_until``
    keeps the last ``max_length - max_gen_toks`` context tokens)."""
    encoded = []
    for p in prompts:
        ids = tokenizer(p, add_special_tokens=add_special_tokens).input_ids
        if len(ids) > room:
            warnings.warn(f"prompt of {len(ids)} tokens left-truncated to {room} (max_length {max_length})", stacklevel=3)
            ids = ids[-room:]
        encoded.append(ids)
    return encoded


def default_budget(device: torch.device) -> tuple[int, int]:
    """(KV budget in bytes, most rows) for ``device``: a fixed 2 GiB and 48 rows on a CPU; half the free memory
    and 128 rows on an accelerator."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free * GPU_KV_SHARE), GPU_MAX_ROWS
    return CPU_KV_BUDGET, CPU_MAX_ROWS


def _fit(t: torch.Tensor, length: int) -> torch.Tensor:
    """``t`` (rows, heads, columns, dim) left-padded with zeros or left-cropped to ``length`` columns."""
    have = t.shape[-2]
    return t[..., have - length :, :] if have >= length else F.pad(t, (0, 0, length - have, 0))


def _sliding(layer: Any) -> bool:
    """Whether a cache layer keeps only a sliding window of columns."""
    return bool(getattr(layer, "is_sliding", False))


def _span(layer: Any, frame: int) -> int:
    """Columns a cache layer holds for a frame of ``frame`` columns (a sliding layer keeps its window - 1)."""
    return min(frame, layer.sliding_window - 1) if _sliding(layer) else frame


def _reframe(cache: DynamicCache, frame: int, other: DynamicCache | None = None) -> None:
    """Set every layer of ``cache`` to ``frame`` columns (padding or cropping on the left), appending the rows of
    ``other`` (fitted the same way) when given; sliding layers' lengths follow the frame."""
    for i, layer in enumerate(cache.layers):
        span = _span(layer, frame)
        keys, values = _fit(layer.keys, span), _fit(layer.values, span)
        if other is not None:
            keys = torch.cat([keys, _fit(other.layers[i].keys, span)])
            values = torch.cat([values, _fit(other.layers[i].values, span)])
        layer.keys, layer.values = keys, values
        if hasattr(layer, "cumulative_length"):
            layer.cumulative_length = frame


def _kv_bytes(cache: DynamicCache, rows: int, frame: int) -> int:
    """Bytes the KV cache of ``rows`` rows takes at a frame of ``frame`` columns."""
    total = 0
    for layer in cache.layers:
        k = layer.keys
        total += 2 * k.shape[1] * k.shape[3] * k.element_size() * _span(layer, frame)
    return rows * total


def _sampler(hf_model: Any, temperature: float, top_p: float) -> LogitsProcessorList | None:
    """HF's warpers for sampling as ``generate(do_sample=True, temperature, top_p)`` applies them (top_k from the
    model's generation config, else transformers' default 50); None for greedy decoding."""
    if not temperature or temperature <= 0:
        return None
    top_k = getattr(hf_model.generation_config, "top_k", None) or HF_DEFAULT_TOP_K
    warpers = LogitsProcessorList()
    if temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(float(temperature)))
    warpers.append(TopKLogitsWarper(top_k=int(top_k)))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=float(top_p)))
    return warpers


def eos_ids(hf_model: Any, tokenizer: Any) -> set[int]:
    """The token ids that end a row: the model's generation config's EOS ids, else the tokenizer's."""
    eos = getattr(hf_model.generation_config, "eos_token_id", None)
    eos = tokenizer.eos_token_id if eos is None else eos
    return set(eos if isinstance(eos, list) else [eos]) - {None}


class Engine:
    """One call's continuous-batching run (see the module docstring); :meth:`run` returns the texts."""

    def __init__(self, hf_model: Any, tokenizer: Any, *, max_new_tokens: int, stop: Sequence[str] | None,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
                 kv_budget: int | None = None, max_rows: int | None = None,
                 draft_tokens: int = DRAFT_TOKENS, min_shared: int = MIN_SHARED_TOKENS) -> None:
        self.model, self.tokenizer = hf_model, tokenizer
        self.device = next(hf_model.parameters()).device
        budget, rows = default_budget(self.device)
        self.kv_budget, self.max_rows = kv_budget or budget, max_rows or rows
        self.max_new_tokens, self.stop = int(max_new_tokens), stop
        self.sampler, self.seed = _sampler(hf_model, temperature, top_p), seed
        self.draft_tokens = int(draft_tokens) if self.sampler is None else 0  # drafts keep greedy text only
        # a step's 1 + draft positions must fit the window - 1 columns a sliding layer keeps (_realign rebuilds
        # the layer from them), so drafts are at most window - 2 tokens
        window = getattr(self.model.config, "sliding_window", None)
        if window:
            self.draft_tokens = max(0, min(self.draft_tokens, window - 2))
        self.eos = eos_ids(hf_model, tokenizer)
        decode: Callable[[list[int]], str] = lambda ids: tokenizer.decode(ids, skip_special_tokens=True)  # noqa: E731
        self.scanner = StopScanner(decode, stop)
        self.stats = GenerationStats()
        self.min_shared = int(min_shared)
        self.prefixes: list[tuple[Node, DynamicCache]] = []  # the shared prefixes' caches of the current chain
        # the decode batch: cache (rows right-aligned on `frame` columns), mask (rows, frame), next positions
        self.cache: DynamicCache | None = None
        self.mask = torch.zeros((0, 0), dtype=torch.long, device=self.device)
        self.pos = torch.zeros(0, dtype=torch.long, device=self.device)
        self.rows: list[_Row] = []

    @property
    def frame(self) -> int:
        return self.mask.shape[1]

    def _choose(self, logits: torch.Tensor, rows: list[_Row]) -> list[int]:
        """The next token of each row from its own logits (float32): argmax, or a draw with the row's generator
        (so a seeded row's text does not depend on the rows beside it)."""
        if self.sampler is None:
            return logits.argmax(-1).tolist()
        out = []
        for i, row in enumerate(rows):
            probs = torch.softmax(self.sampler(None, logits[i : i + 1]), dim=-1)
            out.append(int(torch.multinomial(probs, 1, generator=row.generator)))
        return out

    def _accept(self, row: _Row, tokens: Sequence[int]) -> bool:
        """Append ``tokens`` to ``row`` one at a time until it ends (EOS, ``max_new_tokens``, or a stop string:
        the tokens after that are dropped, as one-token steps would never have made them); whether it ended."""
        for token in tokens:
            row.tokens.append(token)
            if token in self.eos or len(row.tokens) >= self.max_new_tokens or self.scanner.hit(row.tokens):
                return True
        if row.lookup is not None:
            row.lookup.extend(tokens)
        return False

    def _forward(self, tokens: Sequence[int], cache: DynamicCache) -> torch.Tensor:
        """Prefill ``tokens`` after what ``cache`` holds (one row); the last position's logits."""
        out = self.model(input_ids=torch.tensor([list(tokens)], device=self.device), cache=cache, use_cache=True,
                         logits_to_keep=1)  # fmt: skip
        self.stats.prompt_tokens += len(tokens)
        return out.logits[:, -1, :]

    def _after_prefixes(self, chain: list[Node]) -> tuple[DynamicCache, int]:
        """A cache of its own holding the deepest prefix of ``chain`` and that prefix's length: the held chain is
        cut back to the part ``chain`` shares, and its missing prefixes are computed, each after its parent."""
        while self.prefixes and not any(self.prefixes[-1][0] is node for node in chain):
            self.prefixes.pop()
        for node in chain[len(self.prefixes) :]:
            cache, done = self._copy_of_last_prefix()
            self._forward(node.seq[done : node.end], cache)
            self.prefixes.append((node, cache))
        return self._copy_of_last_prefix()

    def _copy_of_last_prefix(self) -> tuple[DynamicCache, int]:
        """A copy of the deepest held prefix's cache and its length (an empty cache and 0 when none is held)."""
        if not self.prefixes:
            return DynamicCache(config=self.model.config), 0
        node, cache = self.prefixes[-1]
        return copy.deepcopy(cache), node.end

    def _prefill(self, index: int, ids: list[int], chain: list[Node]) -> tuple[_Row, DynamicCache, bool]:
        """Prefill one prompt alone, after the shared prefixes in ``chain``; its row holds the first generated
        token (and whether that ended it)."""
        row = _Row(index)
        if self.sampler is not None and self.seed is not None:
            row.generator = torch.Generator(device=self.device).manual_seed(int(self.seed))
        if self.draft_tokens:
            row.lookup = PromptLookup(ids)
        cache, done = self._after_prefixes(chain)
        self.stats.shared_tokens += done
        logits = self._forward(ids[done:], cache)
        return row, cache, self._accept(row, self._choose(logits.float(), [row]))

    def _admit(self, row: _Row, cache: DynamicCache, length: int) -> None:
        """Add a prefilled row to the decode batch (the frame widens when the row is longer than it)."""
        frame = max(self.frame, length)
        ones = torch.ones((1, length), dtype=torch.long, device=self.device)
        if self.cache is None:
            self.cache = cache
        else:
            _reframe(self.cache, frame, cache)
        self.mask = torch.cat([F.pad(self.mask, (frame - self.frame, 0)), F.pad(ones, (frame - length, 0))])
        self.pos = torch.cat([self.pos, torch.tensor([length], device=self.device)])
        self.rows.append(row)

    def _drop(self, keep: list[int]) -> None:
        """Keep only the rows at ``keep``; cut the frame's leading columns that are padding in every row."""
        if not keep:
            self.cache, self.rows = None, []
            self.mask, self.pos = self.mask[:0, :0], self.pos[:0]
            return
        index = torch.tensor(keep, device=self.device)
        self.rows = [self.rows[i] for i in keep]
        self.mask, self.pos = self.mask[index], self.pos[index]
        for layer in self.cache.layers:
            layer.keys, layer.values = layer.keys[index], layer.values[index]
        self._cut_lead()

    def _cut_lead(self) -> None:
        """Cut the frame's leading columns that are padding in every row."""
        lead = int(self.mask.any(0).long().argmax())
        if lead:
            self.mask = self.mask[:, lead:]
            _reframe(self.cache, self.frame)

    def _fits(self, length: int) -> bool:
        """Whether one more row of ``length`` prompt tokens fits the row limit and the KV budget, every row
        growing to ``max_new_tokens`` (the first row always fits)."""
        if not self.rows:
            return True
        worst = max(self.frame, length) + self.max_new_tokens
        return len(self.rows) < self.max_rows and _kv_bytes(self.cache, len(self.rows) + 1, worst) <= self.kv_budget

    def _drafts(self) -> list[list[int]]:
        """Each row's prompt-lookup draft, no longer than its remaining new tokens allow."""
        if not self.draft_tokens:
            return [[] for _ in self.rows]
        return [r.lookup.draft(min(self.draft_tokens, self.max_new_tokens - len(r.tokens) - 1)) for r in self.rows]

    def _step(self) -> list[bool]:
        """One decode step of every row: its last token and its draft (padded to the widest draft) in one forward
        call; a row keeps the greedy token after its last one and, while the draft equals the greedy choice, the
        tokens after those. Whether each row ended."""
        drafts = self._drafts()
        width = 1 + max(map(len, drafts))  # positions fed per row
        fed = [[r.tokens[-1], *d, *[r.tokens[-1]] * (width - 1 - len(d))] for r, d in zip(self.rows, drafts)]
        real = torch.tensor([[1] * (1 + len(d)) + [0] * (width - 1 - len(d)) for d in drafts], device=self.device)
        self.mask = torch.cat([self.mask, real], dim=1)  # (rows, frame + width); a row's padding positions masked
        before = [(layer.keys, layer.values) for layer in self.cache.layers] if width > 1 else []
        out = self.model(input_ids=torch.tensor(fed, device=self.device), attention_mask=self.mask,
                         position_ids=self.pos[:, None] + torch.arange(width, device=self.device),
                         cache=self.cache, use_cache=True, logits_to_keep=width)  # fmt: skip
        self.stats.steps += 1
        self.stats.decode_row_steps += len(self.rows)
        self.stats.draft_positions += len(self.rows) * (width - 1)
        if width == 1:
            self.pos = self.pos + 1
            chosen = self._choose(out.logits[:, -1, :].float(), self.rows)
            return [self._accept(row, [token]) for row, token in zip(self.rows, chosen)]
        greedy = out.logits.argmax(-1).tolist()  # (rows, width): the greedy token after each fed position
        ended, kept = [], []
        for row, draft, choice in zip(self.rows, drafts, greedy):
            n = 0  # draft tokens that equal the greedy choice before them
            while n < len(draft) and draft[n] == choice[n]:
                n += 1
            self.stats.draft_accepted += n
            kept.append(n)
            ended.append(self._accept(row, choice[: n + 1]))
        self._realign(before, width, kept)
        return ended

    def _realign(self, before: list[tuple[torch.Tensor, torch.Tensor]], width: int, kept: list[int]) -> None:
        """After a step that fed ``width`` positions per row, keep each row's last token and its ``kept`` right
        draft tokens in the cache, right-aligned again: a row shifts right by the positions it drops (the frame's
        new leading columns are padding), so every row stays contiguous and sliding windows stay exact."""
        shift = torch.tensor([width - 1 - n for n in kept], device=self.device)
        self.pos = self.pos + 1 + torch.tensor(kept, device=self.device)
        columns = self.mask.shape[1]
        source = torch.arange(columns, device=self.device)[None, :] - shift[:, None]  # (rows, columns)
        self.mask = torch.where(source >= 0, self.mask.gather(1, source.clamp(min=0)), 0)
        for layer, (keys, values) in zip(self.cache.layers, before):
            # the layer's states over the whole frame: a sliding layer kept only its window, so rebuild from before
            full_k = torch.cat([keys, layer.keys[..., -width:, :]], dim=-2) if _sliding(layer) else layer.keys
            full_v = torch.cat([values, layer.values[..., -width:, :]], dim=-2) if _sliding(layer) else layer.values
            index = (source.clamp(min=0) - (columns - full_k.shape[-2])).clamp(min=0)  # frame column -> tensor column
            index = index[:, None, :, None].expand(-1, full_k.shape[1], -1, full_k.shape[-1])
            layer.keys, layer.values = full_k.gather(2, index), full_v.gather(2, index)
        _reframe(self.cache, columns)
        self._cut_lead()

    @torch.inference_mode()
    def run(self, prompts: Sequence[list[int]], *, progress: bool = True, desc: str = "generate") -> list[str]:
        """Generate from every prompt (token ids); the texts, in order, decoded without special tokens and cut
        before the first stop string."""
        texts: list[str] = [""] * len(prompts)
        if self.max_new_tokens < 1 or not prompts:
            return texts
        plan = plan_prefill(prompts, self.min_shared)
        queue = plan.order
        bar = tqdm(total=len(prompts), desc=desc, unit="prompt", disable=not progress or len(prompts) < 2)

        def finish(row: _Row) -> None:
            self.stats.generated_tokens += len(row.tokens)
            texts[row.index] = cut_at_stop(self.tokenizer.decode(row.tokens, skip_special_tokens=True), self.stop)
            bar.update(1)

        while queue or self.rows:
            while queue and self._fits(len(prompts[queue[0]])):
                i = queue.pop(0)
                row, cache, ended = self._prefill(i, prompts[i], plan.chains[i])
                if ended:
                    finish(row)
                else:
                    self._admit(row, cache, len(prompts[i]))
            if not self.rows:
                continue
            self.stats.peak_rows = max(self.stats.peak_rows, len(self.rows))
            self.stats.peak_kv_bytes = max(self.stats.peak_kv_bytes, _kv_bytes(self.cache, len(self.rows), self.frame))
            keep = []
            for i, (row, ended) in enumerate(zip(self.rows, self._step())):
                if ended:
                    finish(row)
                else:
                    keep.append(i)
            if len(keep) < len(self.rows):
                self._drop(keep)
        self.prefixes = []
        bar.close()
        return texts


def generate(hf_model: Any, tokenizer: Any, prompts: Sequence[list[int]], *, max_new_tokens: int,
             stop: Sequence[str] | None = None, temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
             kv_budget: int | None = None, max_rows: int | None = None, draft_tokens: int = DRAFT_TOKENS,
             min_shared: int = MIN_SHARED_TOKENS, progress: bool = True,
             desc: str = "generate") -> tuple[list[str], GenerationStats]:
    """Generate from token-id prompts with :class:`Engine`; (texts in order, the work done)."""
    engine = Engine(hf_model, tokenizer, max_new_tokens=max_new_tokens, stop=stop, temperature=temperature,
                    top_p=top_p, seed=seed, kv_budget=kv_budget, max_rows=max_rows, draft_tokens=draft_tokens,
                    min_shared=min_shared)  # fmt: skip
    return engine.run(prompts, progress=progress, desc=desc), engine.stats

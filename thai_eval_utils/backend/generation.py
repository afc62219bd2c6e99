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

Prompt lookup (greedy decoding only; ``lookup=0`` turns it off): when a row's last 3 (else 2) tokens occurred earlier
in its prompt or reply, the tokens that followed them there are proposed as its next ones and fed after its last
token, so one forward call checks them: the row keeps the longest run of proposals equal to the model's own argmax
at each position, plus the model's token after that run, which is the text one-token steps give (the same argmax;
logits computed in a call of several positions can differ in the last bits, as a change of batch size makes them
differ). This is the n-gram ("prompt lookup") speculative decoding of transformers' ``prompt_lookup_num_tokens``
and vLLM's ``ngram`` method, inside the continuous batch, with two bounds that the earlier draft verification
(since removed) lacked (it fed 16 rows x 5 positions and cost on this CPU about what it saved): a step feeds at most
``step_positions`` positions, so proposals are made only when few rows are in flight (the long tail of a call whose
budgets differ, where a step costs about one read of the weights whatever its positions), and each row proposes
``reach`` tokens, adapted as transformers' "heuristic" assistant schedule adapts them (+2 after a step that kept
all, -1 after one that did not). Rejected proposals' cache columns are cut out and the row shifted right
(:func:`.decode_cache.settle`); to keep a sliding-window layer's window exact across that cut, the cache then keeps
every column on every layer (``DynamicCache()`` without a config) and the window is applied by the mask, as in the
log-likelihood engine.

The output layer runs on the decoder body's hidden states (:class:`.decoder.Head`, as in the log-likelihood
engine); on a CPU 4 to 15 rows are padded to 16: this CPU's float32 GEMM takes longer for 8 or 12 rows of the
262,144-token Gemma 3 vocabulary (75 and 105 ms) than for 16 (50 ms).

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

from thai_eval_utils.backend.decode_cache import kv_bytes, reframe, settle
from thai_eval_utils.backend.decoder import Decoder, Head
from thai_eval_utils.backend.prefill_plan import MIN_SHARED_TOKENS, plan_prefill
from thai_eval_utils.backend.prefix_tree import Node
from thai_eval_utils.backend.stops import StopScanner, ThinkTags, cut_at_stop
from thai_eval_utils.core.protocols import stop_strings

#: KV-cache budget on a CPU (bytes): the cache of the rows in flight, worst case (every row reaching max_new_tokens)
CPU_KV_BUDGET = 2 * 1024**3
#: share of the free accelerator memory the KV cache may take when no budget is given
GPU_KV_SHARE = 0.5
#: rows decoded together at most. CPU: a decode step reads every weight once whatever its rows (2 cores, embedded
#: model, `benchmarks/generation_speed.py --parts rows` in docs/benchmarks.md: 1 row 112 ms a step, 16 rows 231 ms,
#: 48 rows 454 ms, i.e. 9.5 ms a row against 14.4 at 16). 64 rows measured 8.3 and 9.1 ms a row in two runs: 48 keeps
#: most of the gain with a smaller KV cache and fewer items per store flush (the run loops' batch is this many)
CPU_MAX_ROWS, GPU_MAX_ROWS = 48, 128
#: top_k transformers applies when sampling and the model's generation config sets none (its documented default)
HF_DEFAULT_TOP_K = 50
#: prompt lookup (module docstring): tokens proposed per row at most, the n-gram lengths matched (longest first), and
#: the positions a decode step feeds at most (rows x (1 + proposals)). On the 2-core CPU and the embedded model, 28
#: SEA-HELM prompts of budgets 16-512 (greedy): off 56.9 s, 511 steps; 8 proposals within 16 / 32 / 48 / 64
#: positions 45.7 / 40.7 / 35.6 / 34.6 s, 277 / 209 / 191 / 177 steps, texts equal 28 of 28 each time. A step of 2
#: rows costs about 50 ms, one of 18 positions about 120 ms: proposals pay when about two are kept per step
LOOKUP_TOKENS, LOOKUP_NGRAMS, STEP_POSITIONS = 8, (3, 2), 48
#: output-layer rows on a CPU: 4 to 15 rows are padded to 16 (module docstring)
HEAD_PAD_FROM, HEAD_PAD_TO = 4, 16


@dataclass
class GenerationStats:
    """Work one engine call did, in tokens: ``prompt_tokens`` prefilled (a shared prefix once), ``shared_tokens``
    prompt tokens taken from a shared prefix's cache instead, ``generated_tokens`` kept (EOS included),
    ``decode_row_steps`` positions computed by decode steps (a row's last token, and its proposals under prompt
    lookup), ``steps`` decode forward calls, ``proposed`` / ``accepted`` prompt-lookup tokens fed and kept,
    ``peak_rows`` the widest decode batch, ``peak_kv_bytes`` the largest KV cache held."""

    prompt_tokens: int = 0
    shared_tokens: int = 0
    generated_tokens: int = 0
    decode_row_steps: int = 0
    steps: int = 0
    proposed: int = 0
    accepted: int = 0
    peak_rows: int = 0
    peak_kv_bytes: int = 0


@dataclass
class _Row:
    """One prompt in flight: its index in the caller's list, its new-token budget, generated tokens and sampler
    state; for prompt lookup its prompt and tokens (``context``) and where each n-gram of it last continued."""

    index: int
    budget: int
    tokens: list[int] = field(default_factory=list)
    generator: torch.Generator | None = None
    context: list[int] = field(default_factory=list)
    grams: dict[tuple[int, ...], int] = field(default_factory=dict)
    indexed: int = 1
    reach: int = 2  # proposals this row makes next (transformers' "heuristic" schedule: +2 all kept, else -1)

    def adapt(self, proposed: int, kept: int, most: int) -> None:
        """After a step that checked ``proposed`` of this row's tokens and kept ``kept``: propose 2 more next time
        when all were kept (at most ``most``), 1 fewer when one was not (at least 1)."""
        if proposed:
            self.reach = min(most, self.reach + 2) if kept == proposed else max(1, self.reach - 1)

    def index_grams(self) -> None:
        """Record, for each n-gram of ``context`` followed by a token not yet recorded, where that token is (the
        latest occurrence wins)."""
        ctx = self.context
        for end in range(self.indexed, len(ctx)):
            for n in LOOKUP_NGRAMS:
                if end >= n:
                    self.grams[tuple(ctx[end - n : end])] = end
        self.indexed = max(self.indexed, len(ctx))

    def proposal(self, most: int) -> list[int]:
        """Up to ``most`` tokens that followed the latest earlier occurrence of the row's last 3 (else 2) tokens."""
        if most < 1:
            return []
        for n in LOOKUP_NGRAMS:
            start = self.grams.get(tuple(self.context[-n:])) if len(self.context) > n else None
            if start is not None:
                return self.context[start : start + most]
        return []


def encode_prompts(
    tokenizer: Any, prompts: Sequence[str], *, add_special_tokens: bool, room: int, max_length: int
) -> list[list[int]]:
    """Token ids of each prompt, left-truncated to ``room`` tokens with a warning (lm-eval's ``generate_until``
    keeps the last ``max_length - max_gen_toks`` context tokens)."""
    encoded = []
    for p in prompts:
        ids = tokenizer(p, add_special_tokens=add_special_tokens).input_ids
        if len(ids) > room:
            warnings.warn(
                f"prompt of {len(ids)} tokens left-truncated to {room} (max_length {max_length})", stacklevel=3
            )
            ids = ids[-room:]
        encoded.append(ids)
    return encoded


def generation_budget(device: torch.device) -> tuple[int, int]:
    """(KV budget in bytes, most rows) for ``device``: a fixed 2 GiB and 48 rows on a CPU; half the free memory
    and 128 rows on an accelerator."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free * GPU_KV_SHARE), GPU_MAX_ROWS
    return CPU_KV_BUDGET, CPU_MAX_ROWS


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

    def __init__(
        self,
        hf_model: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int | Sequence[int],
        stop: Sequence[str] | str | None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        kv_budget: int | None = None,
        max_rows: int | None = None,
        min_shared: int = MIN_SHARED_TOKENS,
        lookup: int = LOOKUP_TOKENS,
        step_positions: int = STEP_POSITIONS,
        think_tags: ThinkTags | None = None,
        starts_open: Sequence[bool] | None = None,
    ) -> None:
        self.model, self.tokenizer = hf_model, tokenizer
        self.decoder, self.head = Decoder(hf_model), Head(hf_model)
        self.device = next(hf_model.parameters()).device
        budget, rows = generation_budget(self.device)
        self.kv_budget, self.max_rows = kv_budget or budget, max_rows or rows
        # one budget for every prompt, or one per prompt (prompts of several tasks in one call, each task's budget:
        # a row's text does not depend on the rows beside it, so it is the text a call of its own gives)
        self.budgets = [int(n) for n in max_new_tokens] if isinstance(max_new_tokens, Sequence) else None
        self.max_new_tokens = max(self.budgets, default=0) if self.budgets is not None else int(max_new_tokens)
        self.stop = stop_strings(stop)  # one string is one stop string
        self.sampler, self.seed = _sampler(hf_model, temperature, top_p), seed
        # prompt lookup checks proposals against the argmax: greedy decoding only
        self.lookup = int(lookup) if self.sampler is None else 0
        self.step_positions = int(step_positions)
        self.eos = eos_ids(hf_model, tokenizer)
        decode: Callable[[list[int]], str] = lambda ids: tokenizer.decode(ids, skip_special_tokens=True)  # noqa: E731
        # a model that thinks: stop strings count only outside its thinking block (``backend.stops``); a prompt
        # that opened the block (``starts_open``, per prompt) makes its row start inside it
        self.think_tags, self.starts_open = think_tags, list(starts_open) if starts_open is not None else None
        self.scanner = StopScanner(decode, stop, think_tags)
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

    def _accept(self, row: _Row, token: int) -> bool:
        """Append ``token`` to ``row``; whether the row ends there (EOS, its budget, or a stop string)."""
        row.tokens.append(token)
        if self.lookup:
            row.context.append(token)
        return (
            token in self.eos
            or len(row.tokens) >= row.budget
            or self.scanner.hit(row.tokens, starts_open=self._opens(row))
        )

    def _opens(self, row: _Row) -> bool:
        """Whether the row's text starts inside a thinking block (its prompt opened one)."""
        return bool(self.starts_open and self.starts_open[row.index])

    def _body(self, ids: torch.Tensor, cache: DynamicCache, **kwargs: torch.Tensor) -> torch.Tensor:
        """The decoder body's last hidden states [rows, length, hidden] of ``ids`` after what ``cache`` holds."""
        return self.decoder.net(
            input_ids=ids, use_cache=True, **{self.decoder.cache_kw: cache}, **kwargs
        ).last_hidden_state

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits [rows, vocab] of ``hidden`` [rows, hidden] (the model's output layer and soft-capping), the rows
        padded to ``HEAD_PAD_TO`` on a CPU when there are ``HEAD_PAD_FROM`` or more but fewer."""
        n = len(hidden)
        if self.device.type == "cpu" and HEAD_PAD_FROM <= n < HEAD_PAD_TO:
            hidden = F.pad(hidden, (0, 0, 0, HEAD_PAD_TO - n))
        return self.head.logits(hidden)[:n]

    def _forward(self, tokens: Sequence[int], cache: DynamicCache) -> torch.Tensor:
        """Prefill ``tokens`` after what ``cache`` holds (one row); the last position's logits."""
        hidden = self._body(torch.tensor([list(tokens)], device=self.device), cache)
        self.stats.prompt_tokens += len(tokens)
        return self._logits(hidden[:, -1, :])

    def _new_cache(self) -> DynamicCache:
        """An empty cache: every column on every layer under prompt lookup (its cut keeps sliding windows exact),
        else the model's own layers (a sliding-window layer keeps its window)."""
        return DynamicCache() if self.lookup else DynamicCache(config=self.model.config)

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
            return self._new_cache(), 0
        node, cache = self.prefixes[-1]
        return copy.deepcopy(cache), node.end

    def _prefill(self, index: int, ids: list[int], chain: list[Node]) -> tuple[_Row, DynamicCache, bool]:
        """Prefill one prompt alone, after the shared prefixes in ``chain``; its row holds the first generated
        token (and whether that ended it)."""
        row = _Row(index, self.max_new_tokens if self.budgets is None else self.budgets[index])
        if self.lookup:
            row.context = list(ids)
        if self.sampler is not None and self.seed is not None:
            row.generator = torch.Generator(device=self.device).manual_seed(int(self.seed))
        cache, done = self._after_prefixes(chain)
        self.stats.shared_tokens += done
        logits = self._forward(ids[done:], cache)
        return row, cache, self._accept(row, self._choose(logits.float(), [row])[0])

    def _admit(self, row: _Row, cache: DynamicCache, length: int) -> None:
        """Add a prefilled row to the decode batch (the frame widens when the row is longer than it)."""
        frame = max(self.frame, length)
        ones = torch.ones((1, length), dtype=torch.long, device=self.device)
        if self.cache is None:
            self.cache = cache
        else:
            reframe(self.cache, frame, cache)
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
            reframe(self.cache, self.frame)

    def _fits(self, length: int) -> bool:
        """Whether one more row of ``length`` prompt tokens fits the row limit and the KV budget, every row
        growing to ``max_new_tokens`` (the first row always fits)."""
        if not self.rows:
            return True
        worst = max(self.frame, length) + self.max_new_tokens
        return len(self.rows) < self.max_rows and kv_bytes(self.cache, len(self.rows) + 1, worst) <= self.kv_budget

    def _proposals(self) -> list[list[int]]:
        """Each row's prompt-lookup proposals for this step (none when lookup is off or too many rows are in
        flight: a step feeds at most ``step_positions`` positions), each within its row's remaining budget."""
        width = min(1 + self.lookup, self.step_positions // len(self.rows)) if self.lookup else 1
        if width < 2:
            return [[] for _ in self.rows]
        out = []
        for row in self.rows:
            row.index_grams()
            out.append(row.proposal(min(width - 1, row.reach, row.budget - len(row.tokens) - 1)))
        return out

    def _step(self) -> list[bool]:
        """One decode step of every row in the batch (its last token and its proposals, one forward call); whether
        each row ended."""
        proposals = self._proposals()
        width = 1 + max(map(len, proposals))
        last = [r.tokens[-1] for r in self.rows]
        ids = torch.tensor([[t, *p] + [t] * (width - 1 - len(p)) for t, p in zip(last, proposals)], device=self.device)
        fed = torch.tensor([[1] * (1 + len(p)) + [0] * (width - 1 - len(p)) for p in proposals], device=self.device)
        self.mask = torch.cat([self.mask, fed], dim=1)
        positions = self.pos[:, None] + torch.arange(width, device=self.device)
        hidden = self._body(ids, self.cache, attention_mask=self.mask, position_ids=positions)
        at = [(i, j) for i, p in enumerate(proposals) for j in range(1 + len(p))]
        if width == 1:  # no proposals: every row's one position, in row order
            fed_hidden = hidden[:, 0]
        else:
            rows, cols = (torch.tensor(x, device=self.device) for x in zip(*at))
            fed_hidden = hidden[rows, cols]
        logits = self._logits(fed_hidden).float()
        chosen = logits.argmax(-1).tolist() if self.sampler is None else self._choose(logits, self.rows)
        self.stats.steps += 1
        self.stats.decode_row_steps += len(at)
        ended, kept, k = [], [], 0
        for row, proposal in zip(self.rows, proposals):
            used, end = 0, False
            for j, token in enumerate(chosen[k : k + 1 + len(proposal)]):
                end = self._accept(row, token)
                if end or j == len(proposal) or proposal[j] != token:
                    break
                used += 1  # the proposal fed at j + 1 was the row's token: its column and next logits stand
            k += 1 + len(proposal)
            self.stats.proposed += len(proposal)
            self.stats.accepted += used
            row.adapt(len(proposal), used, self.lookup)
            ended.append(end)
            kept.append(1 + used)
        self.pos = self.pos + torch.tensor(kept, device=self.device)
        if width > 1:
            self.mask = settle(self.cache, self.mask, kept, width)
        return ended

    @torch.inference_mode()
    def run(self, prompts: Sequence[list[int]], *, progress: bool = True, desc: str = "generate") -> list[str]:
        """Generate from every prompt (token ids); the texts, in order, decoded without special tokens and cut
        before the first stop string."""
        texts: list[str] = [""] * len(prompts)
        if self.budgets is not None and len(self.budgets) != len(prompts):
            raise ValueError(f"{len(self.budgets)} max_new_tokens for {len(prompts)} prompts")
        if self.max_new_tokens < 1 or not prompts:
            return texts
        plan = plan_prefill(prompts, self.min_shared)
        queue = [i for i in plan.order if self.budgets is None or self.budgets[i] >= 1]  # a budget of 0 gives ""
        bar = tqdm(total=len(prompts), desc=desc, unit="prompt", disable=not progress or len(prompts) < 2)

        def finish(row: _Row) -> None:
            self.stats.generated_tokens += len(row.tokens)
            texts[row.index] = cut_at_stop(
                self.tokenizer.decode(row.tokens, skip_special_tokens=True),
                self.stop,
                think_tags=self.think_tags,
                starts_open=self._opens(row),
            )
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
            self.stats.peak_kv_bytes = max(self.stats.peak_kv_bytes, kv_bytes(self.cache, len(self.rows), self.frame))
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


def generate(
    hf_model: Any,
    tokenizer: Any,
    prompts: Sequence[list[int]],
    *,
    max_new_tokens: int | Sequence[int],
    stop: Sequence[str] | str | None = None,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int | None = None,
    kv_budget: int | None = None,
    max_rows: int | None = None,
    min_shared: int = MIN_SHARED_TOKENS,
    lookup: int = LOOKUP_TOKENS,
    progress: bool = True,
    desc: str = "generate",
    think_tags: ThinkTags | None = None,
    starts_open: Sequence[bool] | None = None,
) -> tuple[list[str], GenerationStats]:
    """Generate from token-id prompts with :class:`Engine`; (texts in order, the work done). ``max_new_tokens``:
    one budget, or one per prompt; ``lookup``: prompt-lookup proposals per row (greedy only; 0: off);
    ``think_tags``: stop strings count only outside the model's thinking (``starts_open``: per prompt, whether
    its row starts inside a block)."""
    engine = Engine(
        hf_model,
        tokenizer,
        max_new_tokens=max_new_tokens,
        stop=stop,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        kv_budget=kv_budget,
        max_rows=max_rows,
        min_shared=min_shared,
        lookup=lookup,
        think_tags=think_tags,
        starts_open=starts_open,
    )
    return engine.run(prompts, progress=progress, desc=desc), engine.stats

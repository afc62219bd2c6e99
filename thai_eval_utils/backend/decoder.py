"""The model side of the log-likelihood engine: the decoder body on one call's tokens
(:meth:`Decoder.model_call`, like lm-evaluation-harness's ``HFLM._model_call``), the output layer on the scored
rows only (:class:`Head`) and the buffer of scores it fills (:class:`Scores`).

Devices and dtypes: inputs and masks go to the input embeddings' device (with a ``device_map`` the model's
hooks move activations between devices); the output layer runs on its own device in the model's dtype, at most
``HEAD_BYTES`` of float32 logits at a time, and its float32 ``log_softmax`` results are gathered on the CPU.
Peak memory beyond the weights: the KV cache of one root-to-leaf path (at most ``max_length`` tokens) and of
one packed call, the activations of ``budget`` tokens, one mask of ``budget`` x (cached + ``budget``) entries
per layer type (at most ``prefix_tree.MASK_ELEMENTS``) and ``HEAD_BYTES``.

Both runner modes keep every key in the cache (``DynamicCache()`` without a config), so sliding-window layers
stay exact: the window is applied by the mask over absolute positions.
"""

from __future__ import annotations

import inspect

import numpy as np
import torch
from transformers import DynamicCache

from thai_eval_utils.backend.packed_attention import new_call, packed_masks

__all__ = ["Decoder", "Head", "Scores", "repeat_cache", "tree_supported"]

HEAD_BYTES = 1 << 27  # at most 128 MiB of float32 logits per output-layer call (a bound independent of length)


def tree_supported(model) -> bool:
    """Whether packed (tree) forwards can be expressed for this model: sdpa/eager attention and layer types
    that are all full or sliding-window attention (or no sliding window at all)."""
    cfg = model.config.get_text_config()
    types = set(getattr(cfg, "layer_types", None) or [])
    if getattr(model.config, "_attn_implementation", None) not in ("sdpa", "eager"):
        return False
    if types:
        return types <= {"full_attention", "sliding_attention"}
    return getattr(cfg, "sliding_window", None) is None


def repeat_cache(cache: DynamicCache, rows: int) -> DynamicCache:
    """A new cache holding ``cache``'s keys and values repeated over ``rows`` batch rows (``cache`` unchanged)."""
    out = DynamicCache()
    for i, layer in enumerate(cache.layers):
        k, v = layer.keys, layer.values
        out.update(k.expand(rows, *k.shape[1:]), v.expand(rows, *v.shape[1:]), i)
    return out


class Decoder:
    """The decoder body (final norm included) of a causal LM, called on token ids with a KV cache and, for a
    packed row of tree segments, position ids and segment masks (built on the input embeddings' device once
    per call and shared by every layer of a type)."""

    def __init__(self, model):
        self.net = model.base_model
        params = inspect.signature(self.net.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5
        self.device = model.get_input_embeddings().weight.device
        self.dtype = model.dtype
        cfg = model.config.get_text_config()
        self.kinds = sorted(set(getattr(cfg, "layer_types", None) or [])) or ["full_attention"]
        self.window = getattr(cfg, "sliding_window", None)
        self.eager = getattr(model.config, "_attn_implementation", None) == "eager"

    def model_call(
        self,
        ids: list[list[int]],
        cache: DynamicCache | None,
        positions: list[int] | None = None,
        segment: list[int] | None = None,
        ancestors: np.ndarray | None = None,
    ) -> torch.Tensor:
        """Hidden states [rows, length, hidden] of ``ids`` [rows, length] after the keys in ``cache`` (None: no
        cache), which the call extends. With ``positions``/``segment`` [tokens] and ``ancestors`` [segments,
        segments] (one packed row): query i sees key j iff pos[j] <= pos[i] and j's segment is i's or one of its
        ancestors, within the window on sliding-window layers; every query sees the cache
        (:func:`thai_eval_utils.backend.packed_attention.packed_masks`)."""
        dev = self.device
        new_call()
        x = torch.tensor(ids, dtype=torch.long, device=dev)  # [rows, length]
        if positions is None:
            kwargs = {self.cache_kw: cache, "use_cache": True} if cache is not None else {"use_cache": False}
            return self.net(input_ids=x, **kwargs).last_hidden_state
        past = cache.get_seq_length()
        pos = torch.tensor(positions, dtype=torch.long, device=dev)  # [tokens] query positions
        seg = torch.tensor(segment, dtype=torch.long, device=dev)  # [tokens] segment of each token
        anc = torch.tensor(ancestors, dtype=torch.bool, device=dev)  # [segments, segments]
        mask = packed_masks(pos, seg, anc, past, self.kinds, self.window, self.dtype if self.eager else None)
        return self.net(
            input_ids=x, attention_mask=mask, position_ids=pos[None], use_cache=True, **{self.cache_kw: cache}
        ).last_hidden_state


class Head:
    """The output layer on selected hidden states: lm_head, final logit soft-capping, float32 log_softmax.

    One output-layer matmul and one ``log_softmax`` per ``self.rows`` scored rows, written into two buffers
    allocated once per engine call: on the CPU a fresh 128 MiB tensor per chunk costs as much as the
    ``log_softmax`` itself (its pages are mapped and zeroed anew; measured: docs/benchmarks.md, "Short contexts,
    long answers").
    """

    def __init__(self, model):
        self.proj = model.get_output_embeddings()
        self.softcap = getattr(model.config.get_text_config(), "final_logit_softcapping", None)
        self.rows = max(1, HEAD_BYTES // (4 * self.proj.weight.shape[0]))
        # a plain bias-free Linear without accelerate hooks can write its logits into a reused buffer
        self.plain = (
            type(self.proj) is torch.nn.Linear and self.proj.bias is None and not hasattr(self.proj, "_hf_hook")
        )
        self.buffers: dict[str, torch.Tensor] = {}

    def _buffer(self, name: str, rows: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """A [rows, vocab] view of a buffer kept for the next chunks (grown when a call needs more rows)."""
        buf = self.buffers.get(name)
        if buf is None or buf.shape[0] < rows or buf.dtype != dtype or buf.device != device:
            buf = self.buffers[name] = torch.empty(rows, self.proj.weight.shape[0], dtype=dtype, device=device)
        return buf[:rows]

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Soft-capped logits [rows, vocab] of ``hidden`` [rows, hidden] in the model's dtype (a view of a buffer
        the next call overwrites)."""
        w = self.proj.weight
        hooked = self.proj._forward_hooks or self.proj._forward_pre_hooks  # e.g. tests counting its rows
        if self.plain and not hooked:
            logits = torch.mm(hidden.to(w.device), w.t(), out=self._buffer("logits", len(hidden), w.dtype, w.device))
        else:
            logits = self.proj(hidden.to(w.device))
        if self.softcap:  # in place: the same operations as tanh(logits / cap) * cap
            logits.div_(self.softcap).tanh_().mul_(self.softcap)
        return logits

    def __call__(self, hidden: torch.Tensor, rows: torch.Tensor, targets: torch.Tensor):
        """Log-probability of ``targets[k]`` and whether it is the argmax, at ``hidden[rows[k]]``; each row of
        ``hidden`` goes through the output layer once, ``self.rows`` at a time."""
        lp = torch.empty(len(rows), dtype=torch.float32)
        greedy = torch.empty(len(rows), dtype=torch.bool)
        for s in range(0, len(hidden), self.rows):
            logits = self.logits(hidden[s : s + self.rows])
            out = self._buffer("logp", len(logits), torch.float32, logits.device)
            logp = torch.log_softmax(logits.float(), dim=-1, out=out)
            sel = ((rows >= s) & (rows < s + self.rows)).nonzero()[:, 0]
            r, t = (rows[sel] - s).to(logp.device), targets[sel].to(logp.device)
            lp[sel] = logp[r, t].cpu()
            greedy[sel] = (logp.argmax(dim=-1)[r] == t).cpu()
        return lp, greedy


class Scores:
    """Each scored token's log-probability and greedy flag (``lp``, ``greedy``: [slots], on the CPU), filled by
    the output layer from queued hidden rows: it runs when ``head.rows`` rows are queued, so that its weights
    are read once per that many rows whichever calls they came from."""

    def __init__(self, head: Head, n_slots: int):
        self.head = head
        self.lp = torch.zeros(n_slots, dtype=torch.float32)
        self.greedy = torch.zeros(n_slots, dtype=torch.bool)
        self.queue: list[tuple[torch.Tensor, np.ndarray, list[tuple[int, int, int]]]] = []
        self.queued = 0

    def add(self, hidden: torch.Tensor, entries: list[tuple[int, int, int]], rows: list[int]) -> None:
        """Queue ``entries`` (position, target, slot) whose hidden states are ``hidden[rows[k]]`` (``hidden``:
        [tokens, hidden]); one output-layer row per distinct row."""
        if not entries:
            return
        uniq, inv = np.unique(rows, return_inverse=True)
        self.queue.append((hidden[torch.from_numpy(uniq).to(hidden.device)].clone(), inv.reshape(-1), entries))
        self.queued += len(uniq)
        if self.queued >= self.head.rows:
            self.flush()

    def flush(self) -> None:
        """Run the output layer on every queued row and store the log-probabilities and greedy flags."""
        if not self.queue:
            return
        base, inv, targets, slots = 0, [], [], []
        for h, i, entries in self.queue:
            inv.append(torch.from_numpy(i + base))
            targets += [t for _, t, _ in entries]
            slots += [s for _, _, s in entries]
            base += len(h)
        lp, greedy = self.head(torch.cat([h for h, _, _ in self.queue]), torch.cat(inv), torch.tensor(targets))
        slots = torch.tensor(slots)
        self.lp[slots], self.greedy[slots] = lp, greedy
        self.queue, self.queued = [], 0

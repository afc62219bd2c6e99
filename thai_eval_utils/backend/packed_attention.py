"""How one packed forward call attends (Thai-H6 spec, "Where the reference implementation wastes compute"): the
masks that let each token of a packed row see the cache, its own tree segment and its ancestors' segments
(:func:`packed_masks`), and the block-sparse sdpa attention that, while the engine runs, computes masked
attention in blocks of query rows, each against the keys its rows can see (:func:`_block_sdpa`).

Hand-written: torch's CPU sdpa scores every key, and a packed call holds many documents; no maintained library
builds tree-segment masks for transformers' attention interface.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

__all__ = ["block_attention", "new_call", "packed_masks"]

BLOCK_ROWS = 256  # query rows per attention call when an sdpa model gets an explicit mask on the CPU
CUDA_BLOCK_ROWS = 1024  # the same on a GPU (fewer, larger kernels; see _block_sdpa)
GATHER_FILL = 0.75  # a block's keys are gathered when fewer than this share of its key span is visible
_BLOCK_IMPL = "thai_eval_block_sdpa"
#: Per mask (data pointer, shape): the keys each block of query rows can see, ``(q0, keys)``; computed on the
#: first layer of a call (one device sync per mask) and reused by the others; cleared before each call.
_SPANS: dict[tuple, list[tuple[int, slice | torch.Tensor]]] = {}


def packed_masks(
    pos: torch.Tensor,
    seg: torch.Tensor,
    anc: torch.Tensor,
    past: int,
    kinds: list[str],
    window: int | None,
    additive: torch.dtype | None,
) -> torch.Tensor | dict[str, torch.Tensor]:
    """The attention mask of one packed row: query i sees key j iff pos[j] <= pos[i] and j's segment is i's or
    one of its ancestors (``anc[a, b]``), within ``window`` on sliding-window layers; every query sees the
    ``past`` cached keys (the common ancestors). ``pos``, ``seg``: [tokens]; ``anc``: [segments, segments].

    Returns [1, 1, tokens, past + tokens] per layer kind (a dict only for mixed kinds), bool, or additive
    (0 / the dtype's minimum) in the dtype ``additive`` for eager attention.
    """
    dev = pos.device
    kpos = torch.cat([torch.arange(past, device=dev), pos])  # [keys] = [past + tokens]
    packed = anc[seg][:, seg] & (pos[None, :] <= pos[:, None])  # [tokens, tokens]
    allowed = torch.cat([torch.ones(len(pos), past, dtype=torch.bool, device=dev), packed], 1)  # [tokens, keys]
    masks = {}
    for kind in kinds:
        m = allowed if kind == "full_attention" else allowed & (pos[:, None] - kpos[None, :] < window)
        if additive is not None:  # eager attention adds the mask to the scores
            m = torch.zeros(m.shape, dtype=additive, device=dev).masked_fill(~m, torch.finfo(additive).min)
        masks[kind] = m[None, None]  # [1, 1, tokens, keys]
    return masks if len(masks) > 1 else next(iter(masks.values()))


def new_call() -> None:
    """Forget the key spans of earlier calls' masks (their memory may be reused); called before each call."""
    _SPANS.clear()


def _spans(mask: torch.Tensor, rows: int) -> list[tuple[int, slice | torch.Tensor]]:
    """``(q0, keys)`` per block of ``rows`` query rows of ``mask`` [..., queries, keys]: the keys some row of the
    block can see, as a slice when they (nearly) fill their span, else as an index tensor. A packed call's rows
    all see the common ancestors at its start, and each document's rows its own keys: a span from the first to
    the last visible key would also hold every document in between."""
    key = (mask.data_ptr(), tuple(mask.shape), rows)
    if key not in _SPANS:
        q = mask.shape[-2]
        seen = mask.reshape(-1, q, mask.shape[-1]).any(0)  # [queries, keys]
        blocks = torch.nn.functional.pad(seen, (0, 0, 0, (-q) % rows)).reshape(-1, rows, seen.shape[-1]).any(1)
        out = []
        for b, visible in enumerate(blocks.cpu().numpy()):  # [keys] per block
            idx = np.flatnonzero(visible)
            k0, k1 = (int(idx[0]), int(idx[-1]) + 1) if idx.size else (0, 0)
            if idx.size >= GATHER_FILL * (k1 - k0):
                out.append((b * rows, slice(k0, k1)))
            else:
                out.append((b * rows, torch.from_numpy(idx).to(mask.device)))
        _SPANS[key] = out
    return _SPANS[key]


def _block_sdpa(module, query, key, value, attention_mask, **kwargs):
    """transformers' sdpa attention over blocks of query rows (``BLOCK_ROWS`` on the CPU, ``CUDA_BLOCK_ROWS`` on
    a GPU), each block against only the keys that its mask rows can see (see :func:`_spans`). Same result as one
    call (up to float32 summation order: masked keys add exactly zero), without the scores of keys every row of
    the block masks: the far past on sliding-window layers, the future of causal ones, the other documents and
    answer choices of a packed call. Hand-written: torch's CPU sdpa scores every key, and a packed call holds
    many documents."""
    rows = query.shape[2]
    block = CUDA_BLOCK_ROWS if query.device.type == "cuda" else BLOCK_ROWS
    if attention_mask is None or attention_mask.dtype != torch.bool or rows < 2 * block:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    mask = attention_mask[..., : key.shape[2]]  # [batch or 1, 1, queries, keys]
    out = []
    for q0, keys in _spans(mask, block):
        m = mask[..., q0 : q0 + block, :]
        if isinstance(keys, slice):
            k, v, m = key[:, :, keys], value[:, :, keys], m[..., keys]
        else:  # gathered keys: [batch, kv heads, visible keys, head_dim]
            k, v, m = key.index_select(2, keys), value.index_select(2, keys), m.index_select(-1, keys)
        o, _ = sdpa_attention_forward(module, query[:, :, q0 : q0 + block], k, v, m, **kwargs)
        out.append(o)  # [batch, rows, heads, head_dim]
    return torch.cat(out, dim=1), None


@contextmanager
def block_attention(model):
    """While the engine runs, an sdpa model uses :func:`_block_sdpa` (registered with transformers)."""
    before = model.config._attn_implementation
    if before != "sdpa":
        yield
        return
    AttentionInterface.register(_BLOCK_IMPL, _block_sdpa)
    AttentionMaskInterface.register(_BLOCK_IMPL, sdpa_mask)
    model.config._attn_implementation = _BLOCK_IMPL
    try:
        yield
    finally:
        model.config._attn_implementation = before

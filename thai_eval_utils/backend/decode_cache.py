"""The decode batch's KV cache on a common frame of columns (:mod:`.generation`): every row right-aligned, left
padding masked; a sliding-window layer (Gemma 2/3) keeps only its window - 1 newest columns of the frame.
Hand-written: continuous batching adds rows of other lengths to a running ``DynamicCache``, which transformers
does only inside its own paged-attention manager (:mod:`.generation`'s docstring says why that is not used)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from transformers import DynamicCache

__all__ = ["fit", "kv_bytes", "reframe", "settle", "sliding", "span"]


def fit(t: torch.Tensor, length: int) -> torch.Tensor:
    """``t`` (rows, heads, columns, dim) left-padded with zeros or left-cropped to ``length`` columns."""
    have = t.shape[-2]
    return t[..., have - length :, :] if have >= length else F.pad(t, (0, 0, length - have, 0))


def sliding(layer: Any) -> bool:
    """Whether a cache layer keeps only a sliding window of columns."""
    return bool(getattr(layer, "is_sliding", False))


def span(layer: Any, frame: int) -> int:
    """Columns a cache layer holds for a frame of ``frame`` columns (a sliding layer keeps its window - 1)."""
    return min(frame, layer.sliding_window - 1) if sliding(layer) else frame


def reframe(cache: DynamicCache, frame: int, other: DynamicCache | None = None) -> None:
    """Set every layer of ``cache`` to ``frame`` columns (padding or cropping on the left), appending the rows of
    ``other`` (fitted the same way) when given; sliding layers' lengths follow the frame."""
    for i, layer in enumerate(cache.layers):
        columns = span(layer, frame)
        keys, values = fit(layer.keys, columns), fit(layer.values, columns)
        if other is not None:
            keys = torch.cat([keys, fit(other.layers[i].keys, columns)])
            values = torch.cat([values, fit(other.layers[i].values, columns)])
        layer.keys, layer.values = keys, values
        if hasattr(layer, "cumulative_length"):
            layer.cumulative_length = frame


def kv_bytes(cache: DynamicCache, rows: int, frame: int) -> int:
    """Bytes the KV cache of ``rows`` rows takes at a frame of ``frame`` columns."""
    total = 0
    for layer in cache.layers:
        k = layer.keys
        total += 2 * k.shape[1] * k.shape[3] * k.element_size() * span(layer, frame)
    return rows * total


def settle(cache: DynamicCache, mask: torch.Tensor, kept: list[int], fed: int) -> torch.Tensor:
    """After a decode step that fed ``fed`` columns to every row, of which row r keeps its first ``kept[r]`` (its
    last token and the prompt-lookup proposals the model confirmed): cut the other columns out and shift each row
    right so that the rows stay right-aligned on a frame ``max(kept)`` wider than before the step. The cache's layers
    are changed in place; the new mask [rows, frame] is returned. Every layer must hold every column (no sliding
    layer: the cut would lose columns of its window)."""
    if all(k == fed for k in kept):
        return mask
    before, top = mask.shape[1] - fed, max(kept)
    shift = torch.tensor([top - k for k in kept], device=mask.device)
    source = torch.arange(before + top, device=mask.device)[None, :] - shift[:, None]  # [rows, frame]
    real = source >= 0
    source = source.clamp(min=0)
    for layer in cache.layers:
        if sliding(layer):
            raise ValueError("settle needs every column of every layer; the cache has a sliding-window layer")
        at = source[:, None, :, None].expand(-1, layer.keys.shape[1], -1, layer.keys.shape[3])
        layer.keys, layer.values = layer.keys.gather(2, at), layer.values.gather(2, at)
    return mask.gather(1, source) * real

"""Shared figure helpers: one seaborn theme and saving every figure as PNG and SVG."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns


def set_theme() -> None:
    """The project's seaborn theme (white grid, paper context)."""
    sns.set_theme(style="whitegrid", context="paper")


def save_figure(
    fig: plt.Figure, path_without_suffix: str | Path, formats: tuple[str, ...] = ("png", "svg")
) -> list[Path]:
    """Save ``fig`` as ``<path>.png`` and ``<path>.svg`` (parents created); returns the paths."""
    base = Path(path_without_suffix)
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = base.with_suffix(f".{fmt}")
        fig.savefig(path, dpi=150, bbox_inches="tight")
        paths.append(path)
    return paths

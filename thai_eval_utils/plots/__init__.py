"""Figures for the three benchmarks (seaborn), one submodule per benchmark."""

from thai_eval_utils.plots._style import save_figure, set_theme

__all__ = ["save_figure", "set_theme"]

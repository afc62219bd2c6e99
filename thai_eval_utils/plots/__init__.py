"""Figures across benchmarks (seaborn): a comparison's forest plot (``compare``), the papers' tables (``paper``) and
``save_figure``; each benchmark's own figures live in its package (``h6.plots``, ``thaicli.plots``, ``dialect.plots``)."""

from thai_eval_utils.plots._style import save_figure, set_theme

__all__ = ["save_figure", "set_theme"]

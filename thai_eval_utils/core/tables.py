"""Save result tables as CSV, Markdown and LaTeX side by side (pandas writers; tabulate and jinja2 behind them)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pandas as pd


def round_half_up(value: Decimal | str | int | float, decimals: int) -> Decimal:
    """Round to ``decimals`` places, ties away from zero, as the papers print (``7.305`` -> ``7.31``;
    Python's ``round`` gives 7.3).

    A float is taken through its shortest repr (``7.305`` -> ``"7.305"``), not its binary value
    (``7.30499999...``); pass strings or Decimals where exactness matters.
    """
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    return exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


#: The formats :func:`save_table` writes, with their file suffixes.
TABLE_FORMATS = {"csv": ".csv", "markdown": ".md", "latex": ".tex"}


def save_table(
    df: pd.DataFrame,
    path_without_suffix: str | Path,
    *,
    index: bool = False,
    caption: str | None = None,
    formats: tuple[str, ...] = ("csv", "markdown", "latex"),
) -> list[Path]:
    """Write ``df`` as ``<path>.csv``, ``<path>.md`` and ``<path>.tex`` (parent folders created).

    Cells are written as they are: format numbers before saving when a fixed precision matters
    (the published tables are kept as strings, so ``"7.30"`` stays ``"7.30"``). Missing values are
    written as empty CSV cells and as ``""`` in Markdown and LaTeX.

    Args:
        df: the table.
        path_without_suffix: e.g. ``outputs/tables/thai_h6``; any suffix of the last part is kept
            (``qwen2.5`` stays ``qwen2.5.csv``), never replaced.
        index: write the index as a column too.
        caption: a LaTeX caption (the ``.tex`` file is then a ``table`` float) and a Markdown heading line.
        formats: a subset of :data:`TABLE_FORMATS`.

    Returns:
        The written paths, in the order of ``formats``.

    Example:
        >>> save_table(df, "outputs/tables/thai_h6_table4")  # doctest: +SKIP
    """
    unknown = set(formats) - set(TABLE_FORMATS)
    if unknown:
        raise ValueError(f"unknown table format(s) {sorted(unknown)}; choose from {sorted(TABLE_FORMATS)}")
    base = Path(path_without_suffix)
    base.parent.mkdir(parents=True, exist_ok=True)
    shown = df.map(_cell_text)
    paths = []
    for fmt in formats:
        path = base.with_name(base.name + TABLE_FORMATS[fmt])
        if fmt == "csv":
            df.to_csv(path, index=index)
        elif fmt == "markdown":
            # disable_numparse: tabulate would otherwise reprint "7.30" as "7.3"
            text = shown.map(lambda t: t.replace("|", "\\|")).to_markdown(index=index, disable_numparse=True)
            if caption:
                text = f"**{caption}**\n\n{text}"
            path.write_text(text + "\n", encoding="utf-8")
        else:
            text = shown.to_latex(index=index, caption=caption, escape=True)
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def _cell_text(value: object) -> str:
    """One cell as text: missing -> ``""``, floats in their shortest round-tripping form, the rest ``str``."""
    if value is None or (isinstance(value, float) and value != value) or value is pd.NA or value is pd.NaT:
        return ""
    return str(value)


def read_table_csv(path: str | Path) -> pd.DataFrame:
    """Read a table written by :func:`save_table` back with every cell as a string (``""`` for missing)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)

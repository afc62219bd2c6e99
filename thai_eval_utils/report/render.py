"""The report's one self-contained HTML file, rendered with jinja2 from ``report/templates/``: the
DataTables bundle that itables ships (loaded offline, as itables' own offline mode does), the figures as inline
SVG, and the items as gzip-compressed JSON that the page decompresses with the browser's ``DecompressionStream``
(a full run's ~40k Thai-H6 items stay a few MB). Nothing is fetched when the file is opened.
"""

from __future__ import annotations

import base64
import gzip
import re
from pathlib import Path
from typing import Any

import itables.options
import jinja2
import pandas as pd
from markupsafe import Markup

from thai_eval_utils import __version__
from thai_eval_utils.core.provenance import now_utc, scrub
from thai_eval_utils.report import csp
from thai_eval_utils.report.items import to_json
from thai_eval_utils.report.leaderboard import PUBLISHED, tables
from thai_eval_utils.report.side_by_side import SideBySide

TEMPLATES = Path(__file__).parent / "templates"


def raw_text(text: str, element: str) -> Markup:
    """The report's own CSS or JavaScript, as the text of a ``<style>`` or ``<script>`` element: verbatim, not
    HTML-escaped (the browser does not decode entities there, so an escaped ``a > b`` selector or ``"font"`` would
    break), after checking it cannot end its element early.

    Raises:
        ValueError: ``text`` holds ``</element`` (or, for a script, ``<!--``, which changes how it ends).
    """
    ends = [f"</{element}"] + (["<!--"] if element == "script" else [])
    found = next((e for e in ends if re.search(re.escape(e), text, re.I)), None)
    if found is not None:
        raise ValueError(f"the report's own {element} text holds {found!r}, which would end its element early")
    return Markup(text)


def script_json(value: Any) -> Markup:
    """``value`` as JSON to put in a ``<script type="application/json">`` element: ``<``, ``>`` and ``&`` written
    as ``\\u`` escapes (as jinja's ``tojson`` does), so no text can end the element or open a comment in it."""
    text = to_json(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _cell(c: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and pd.isna(v) else v) for k, v in c.items()}


def leaderboard_tables(cells: pd.DataFrame) -> list[dict[str, Any]]:
    """The leaderboard frame as the template's tables: per table, rows (runs first, then published rows) of cells
    in the table's column order (None where a row has no such cell)."""
    out = []
    for spec in tables():
        key, title, columns = spec.key, spec.title, list(spec.columns)
        part = cells[cells["table"] == key]
        if part.empty:
            continue
        rows = []
        for (model, label, source), group in part.groupby(["model", "group", "source"], sort=False, dropna=False):
            by_col = {c["column"]: _cell(c) for c in group.to_dict("records")}
            rows.append(
                {
                    "model": model,
                    "group": None if pd.isna(label) else label,
                    "source": source,
                    "published": str(source).startswith(PUBLISHED),
                    "cells": [by_col.get(c) for c in columns],
                }
            )
        rows.sort(key=lambda r: r["published"])  # stable: our runs first, in model order
        out.append({"key": key, "title": title, "columns": columns, "rows": rows, "group": spec.group})
    return out


def _cell_text(c: dict[str, Any] | None, digits: int) -> str:
    if c is None or c.get("value") is None:
        return ""
    out = f"{c['value']:.{digits}f}"
    if c.get("ci_low") is not None:
        out += f" [{c['ci_low']:.{digits}f}, {c['ci_high']:.{digits}f}]"
    return out + (f" n={int(c['n'])}" if c.get("n") is not None else "")


def wide(cells: pd.DataFrame, table: str, digits: int = 2) -> pd.DataFrame:
    """One leaderboard table as the report prints it, for notebooks: a row per model (and row group) and source,
    each cell ``value [low, high] n=N`` (published rows: the printed value)."""
    t = next((t for t in leaderboard_tables(cells) if t["key"] == table), None)
    if t is None:
        return pd.DataFrame()
    rows = [
        {
            "model": r["model"],
            **({t["group"]: r["group"]} if t["group"] else {}),
            "source": r["source"],
            **{col: _cell_text(c, digits) for col, c in zip(t["columns"], r["cells"])},
        }
        for r in t["rows"]
    ]
    return pd.DataFrame(rows)


def render_html(
    *,
    cells: pd.DataFrame,
    items: list[dict[str, Any]],
    pools: dict[str, list[str]],
    figures: list[tuple[str, str]],
    pair: SideBySide | None,
    models: list[str],
    notes: list[str],
    interval_caption: str,
    title: str = "thai-eval report",
) -> str:
    """The report's HTML text, every string scrubbed of secrets (``core.provenance.scrub``), with a
    Content-Security-Policy allowing only its own scripts (``report.csp``).

    Every text from data, a model, a judge or a user is HTML-escaped by the template (jinja's autoescaping, on
    for every template: the page is its only one) or inserted as text by the page's script; only the report's own
    CSS and JavaScript (:func:`raw_text`), the items' JSON (:func:`script_json`) and matplotlib's SVG (which
    escapes its text) are inserted as they are.
    """
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    bundle = Path(itables.options.dt_bundle)
    payload = scrub(to_json({"items": items, "pools": pools}))  # scrubbed before it is compressed out of sight
    pair_ctx = None
    if pair is not None:
        pair_ctx = {
            "model_a": pair.model_a,
            "model_b": pair.model_b,
            "caption": pair.caption,
            "notes": pair.notes,
            "rows": pair.table.to_dict("records"),
        }
    meta = {"models": models, "pair": None if pair is None else {"model_a": pair.model_a, "model_b": pair.model_b}}
    html = env.get_template("report.html.j2").render(
        title=title,
        models=models,
        n_items=len(items),
        written_at=now_utc(),
        version=__version__,
        tables=leaderboard_tables(cells),
        notes=notes,
        interval_caption=interval_caption,
        figures=figures,
        pair=pair_ctx,
        meta_json=script_json(meta),
        csp=csp.PLACEHOLDER,
        items_b64=_b64(gzip.compress(payload.encode("utf-8"), compresslevel=6, mtime=0)),
        dt_bundle_b64=_b64(bundle.read_bytes()),
        dt_css=raw_text(bundle.with_suffix(".css").read_text(encoding="utf-8"), "style"),
        css=raw_text((TEMPLATES / "report.css").read_text(encoding="utf-8"), "style"),
        js=raw_text((TEMPLATES / "report.js").read_text(encoding="utf-8"), "script"),
    )
    return csp.with_policy(scrub(html))  # hashed last: scrubbing must not change a script after it is hashed

"""A self-contained HTML report of the stored runs: leaderboard with n and intervals beside the
papers' rows, the figures as inline SVG, an item browser with Thai full-text search, and two models side by side.

``write_report(outputs_dir, path, models=None)`` writes it; ``python -m thai_eval_utils.report`` (and
``make report``) call it. One module per concept: :mod:`.runs` (which runs), :mod:`.leaderboard`,
:mod:`.items` (item records), :mod:`.figures`, :mod:`.side_by_side`, :mod:`.render` (HTML; every text escaped),
:mod:`.csp` (its Content-Security-Policy), :mod:`.browser` (headless Chromium: screenshots, tests). What each
benchmark shows comes from its suite (:mod:`thai_eval_utils.core.registry`; the hooks of
:class:`thai_eval_utils.core.benchmark.Suite`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from thai_eval_utils.report.figures import report_figures
from thai_eval_utils.report.items import collect_items
from thai_eval_utils.report.leaderboard import Bootstrap, leaderboard, model_headlines
from thai_eval_utils.report.render import render_html
from thai_eval_utils.report.runs import collect_runs
from thai_eval_utils.report.side_by_side import side_by_side

#: The repository's shipped data (resolves what older records lack), when thai-eval runs from a checkout.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "data"


def write_report(
    outputs_dir: str | Path | Sequence[str | Path],
    path: str | Path,
    models: Sequence[str] | None = None,
    *,
    pair: Sequence[str] | None = None,
    data_dir: str | Path | None = None,
    n_resamples: int = 1000,
    published: bool = True,
) -> Path:
    """Write the report of the runs under ``<outputs_dir>/runs`` to ``path`` (one HTML file that opens offline).

    Args:
        outputs_dir: the outputs folder (``outputs``), holding ``runs/``; or several (e.g. ``["outputs",
            "outputs/demo_compare"]``): a model stored in two appears twice, labelled by the config values that
            differ (``embedded (fewshot_seed=7)``).
        path: the HTML file to write (its folder is created).
        models: model names (or folder slugs, or specs such as ``embedded``) to show; default every stored model.
            Each model's latest finished run per benchmark is shown (as ``compare`` selects them).
        pair: the two models side by side (default: the first two).
        data_dir: a data root holding each suite's data folder (``Suite.data_folder``), for texts older records
            lack (default: the repository's ``data/`` when present).
        n_resamples: bootstrap resamples of the leaderboard's intervals and the side-by-side comparison.
        published: show the papers' published rows.

    Returns:
        The path written.

    Raises:
        ThaiEvalDataError: no stored run, or a model named that has none.
    """
    data_dir = Path(data_dir) if data_dir else (DEFAULT_DATA if DEFAULT_DATA.is_dir() else None)
    runs = collect_runs(outputs_dir, models)
    boot = Bootstrap(n_resamples=n_resamples)
    heads, notes = model_headlines(runs, data_dir=data_dir)
    cells = leaderboard(heads, boot=boot, published=published)
    items, pools, item_notes = collect_items(runs, heads, data_dir=data_dir)
    sbs = side_by_side(runs, pair, n_resamples=n_resamples)
    figures = report_figures(runs, heads, sbs.comparison if sbs else None)
    html = render_html(
        cells=cells,
        items=items,
        pools=pools,
        figures=figures,
        pair=sbs,
        models=runs.models,
        notes=runs.notes + notes + item_notes,
        interval_caption=boot.caption,
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path


__all__ = ["write_report"]

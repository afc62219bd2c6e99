"""Is the demo the same after a change? Run ``make demo``'s notebooks at two git revisions (or take two outputs
folders already made) and compare what a reader of the demo sees: every table (``tables/*.csv``), every stored
run's config id and signature, and every summary score.

    python benchmarks/demo_tables_diff.py --base 7cebb48                 # the demo at 7cebb48 against the work tree
    python benchmarks/demo_tables_diff.py --base 7cebb48 --head main     # two revisions
    python benchmarks/demo_tables_diff.py A B                            # two demo outputs already there

A revision is checked out with ``git worktree add --detach`` into a temporary folder and its demo run with
``python -m thai_eval_utils.notebook_runs --demo`` (or ``thai_eval_utils.batch``, the runner's name before it was
renamed) by this interpreter, with that checkout first on ``PYTHONPATH``. The embedded model is shared (its cache).
Prints one line per difference and a closing count; exits 1 when anything differs. Run cards are matched by their
path under ``runs/`` (model/benchmark/task/config id): a run whose config id changed shows as one missing and one
new. Time columns (``when``...) are left out and the outputs folder in a path reads ``<outputs>``. Floats in tables and
summaries compare exactly (the same code on the same machine gives the same bits);
``--rel-tol`` allows a relative difference for two machines.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
#: Columns that say when a run was written: two demos made at other times differ there by nature.
TIME_COLUMNS = ("when", "written_at", "started_at", "finished_at")
#: The demo runner's module at each name it has had (renamed from ``batch`` to ``notebook_runs``).
RUNNERS = ("thai_eval_utils.notebook_runs", "thai_eval_utils.batch")


def run_demo(revision: str | None, outputs: Path) -> Path:
    """The demo's outputs at ``revision`` (None: the work tree), written under ``outputs``."""
    if revision is None:
        return _demo_in(REPO, outputs)
    with tempfile.TemporaryDirectory(prefix="demo-diff-") as tmp:
        checkout = Path(tmp) / "src"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(checkout), revision], check=True
        )
        try:
            return _demo_in(checkout, outputs)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(checkout)], check=False)


def _demo_in(source: Path, outputs: Path) -> Path:
    """Run the demo notebooks of the checkout ``source`` into ``outputs`` (the paper tables included)."""
    runner = next(m for m in RUNNERS if (source / (m.replace(".", "/") + ".py")).is_file())
    env = {**os.environ, "PYTHONPATH": str(source), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [
        sys.executable,
        "-m",
        runner,
        "--demo",
        "--outputs",
        str(outputs),
        "--notebooks-dir",
        str(source / "notebooks"),
    ]
    subprocess.run(cmd, cwd=source, env=env, check=True)
    return outputs


def tables(outputs: Path) -> dict[str, pd.DataFrame]:
    """Every CSV table under ``outputs/tables`` by its relative path, without its time columns
    (:data:`TIME_COLUMNS`) and with the outputs folder in any path written as ``<outputs>``."""
    root = outputs / "tables"
    return {str(p.relative_to(root)): _comparable(pd.read_csv(p), outputs) for p in sorted(root.rglob("*.csv"))}


def _comparable(table: pd.DataFrame, outputs: Path) -> pd.DataFrame:
    """``table`` without time columns, its text cells naming ``outputs`` as ``<outputs>``."""
    table = table.drop(columns=[c for c in TIME_COLUMNS if c in table.columns])
    for col in table.columns:
        table[col] = table[col].map(lambda v: v.replace(str(outputs), "<outputs>") if isinstance(v, str) else v)
    return table


def run_cards(outputs: Path) -> dict[str, dict[str, Any]]:
    """Every stored run (``runs/**/run_card.json``) by its folder under ``runs/``: config id and, from its summary,
    every score's value, n and signature."""
    out = {}
    for card_path in sorted((outputs / "runs").rglob("run_card.json")):
        card = json.loads(card_path.read_text(encoding="utf-8"))
        summary_path = card_path.with_name("summary.json")
        summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
        out[str(card_path.parent.relative_to(outputs / "runs"))] = {
            "config_id": card.get("config_id"),
            "scores": dict(_scores(summary)),
        }
    return out


def _scores(summary: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """The summary's score entries (any dict with a ``value``) as (path, (value, n, signature))."""
    for key, value in summary.items():
        if isinstance(value, Mapping):
            if "value" in value and ("signature" in value or "n" in value):
                yield f"{prefix}{key}", (value.get("value"), value.get("n"), value.get("signature"))
            else:
                yield from _scores(value, f"{prefix}{key}/")


def _same(a: Any, b: Any, rel_tol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, rel_tol) for x, y in zip(a, b))
    return a == b


def diff_tables(base: dict[str, pd.DataFrame], head: dict[str, pd.DataFrame], rel_tol: float) -> list[str]:
    """One line per table missing on a side or differing in shape, columns or a cell."""
    lines = [f"table only in base: {n}" for n in sorted(set(base) - set(head))]
    lines += [f"table only in head: {n}" for n in sorted(set(head) - set(base))]
    for name in sorted(set(base) & set(head)):
        a, b = base[name], head[name]
        if list(a.columns) != list(b.columns) or a.shape != b.shape:
            lines.append(f"table {name}: columns/shape {list(a.columns)} {a.shape} -> {list(b.columns)} {b.shape}")
            continue
        for col in a.columns:
            for i, (x, y) in enumerate(zip(a[col].tolist(), b[col].tolist())):
                if not _same(x, y, rel_tol) and not (pd.isna(x) and pd.isna(y)):
                    lines.append(f"table {name}: row {i} {col}: {x!r} -> {y!r}")
    return lines


def diff_runs(base: dict[str, dict[str, Any]], head: dict[str, dict[str, Any]], rel_tol: float) -> list[str]:
    """One line per run folder (config id) on one side only, and per score whose value, n or signature differs."""
    lines = [f"run only in base: {n}" for n in sorted(set(base) - set(head))]
    lines += [f"run only in head: {n}" for n in sorted(set(head) - set(base))]
    for name in sorted(set(base) & set(head)):
        a, b = base[name]["scores"], head[name]["scores"]
        for key in sorted(set(a) | set(b)):
            if not _same(a.get(key), b.get(key), rel_tol):
                lines.append(f"run {name}: {key}: {a.get(key)!r} -> {b.get(key)!r}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outputs", nargs="*", type=Path, help="two demo outputs folders already made (base, head)")
    p.add_argument("--base", help="the revision to compare against (git rev)")
    p.add_argument("--head", help="the revision to compare (default: the work tree)")
    p.add_argument("--base-outputs", type=Path, help="a demo outputs folder already made (instead of --base)")
    p.add_argument("--head-outputs", type=Path, help="a demo outputs folder already made (instead of --head)")
    p.add_argument("--workdir", type=Path, default=None, help="where to write the two demos (default: a temp folder)")
    p.add_argument("--rel-tol", type=float, default=0.0, help="relative tolerance of floats (default 0: exact)")
    args = p.parse_args(argv)
    if args.outputs:
        if len(args.outputs) != 2:
            p.error("give two outputs folders (base, head)")
        args.base_outputs, args.head_outputs = args.outputs
    if args.base is None and args.base_outputs is None:
        p.error("give --base REV or --base-outputs DIR")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="demo-diff-"))
    base = args.base_outputs or run_demo(args.base, work / "base")
    head = args.head_outputs or run_demo(args.head, work / "head")
    lines = diff_tables(tables(base), tables(head), args.rel_tol) + diff_runs(
        run_cards(base), run_cards(head), args.rel_tol
    )
    for line in lines:
        print(line)
    n_tables, n_runs = len(tables(head)), len(run_cards(head))
    print(f"{len(lines)} differences over {n_tables} tables and {n_runs} stored runs ({base} vs {head})")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())

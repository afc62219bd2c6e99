"""Compare two ``make demo`` outputs' CSV tables cell for cell: a refactor that should change no
number must give the same values.

Every CSV under ``<a>/tables`` is matched by name to ``<b>/tables``; in each pair the columns both have are compared
(numbers with ``--atol``, 0 by default: equal; text exactly; empty cells equal to empty cells). Columns only one
side has are listed, not compared. Exit status 0 when every common cell is equal and every table is on both sides.

    python benchmarks/demo_tables_diff.py /tmp/demo_base outputs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def _equal(a: pd.Series, b: pd.Series, atol: float) -> pd.Series:
    """Cell-wise equality: numbers within ``atol``, other values as text, missing equal to missing."""
    both_missing = a.isna() & b.isna()
    na, nb = pd.to_numeric(a, errors="coerce"), pd.to_numeric(b, errors="coerce")
    numeric = na.notna() & nb.notna()
    close = pd.Series(np.isclose(na.fillna(0), nb.fillna(0), rtol=0, atol=atol), index=a.index) & numeric
    text = a.astype(str) == b.astype(str)
    return both_missing | close | (~numeric & text)


def compare_table(a: Path, b: Path, atol: float) -> list[str]:
    """The differences of one table pair, as lines (none: equal in every common column)."""
    fa, fb = pd.read_csv(a), pd.read_csv(b)
    out = []
    only = sorted(set(fa.columns) ^ set(fb.columns))
    if only:
        out.append(f"  columns on one side only (not compared): {only}")
    if len(fa) != len(fb):
        return [*out, f"  rows differ: {len(fa)} vs {len(fb)}"]
    for col in [c for c in fa.columns if c in fb.columns]:
        eq = _equal(fa[col], fb[col], atol)
        if not eq.all():
            i = int((~eq).to_numpy().nonzero()[0][0])
            out.append(
                f"  {col}: {int((~eq).sum())} cell(s) differ, first row {i}: {fa[col].iloc[i]!r} vs {fb[col].iloc[i]!r}"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("a", type=Path, help="first outputs folder (holding tables/)")
    p.add_argument("b", type=Path, help="second outputs folder")
    p.add_argument("--atol", type=float, default=0.0, help="absolute tolerance for numbers (default 0: equal)")
    args = p.parse_args(argv)
    ta, tb = (
        {f.name: f for f in (args.a / "tables").glob("*.csv")},
        {f.name: f for f in (args.b / "tables").glob("*.csv")},
    )
    bad = 0
    for name in sorted(set(ta) | set(tb)):
        if name not in ta or name not in tb:
            print(f"{name}: only in {'a' if name in ta else 'b'}")
            bad += 1
            continue
        lines = compare_table(ta[name], tb[name], args.atol)
        differs = any("differ" in line for line in lines)
        bad += differs
        print(f"{name}: {'DIFFERS' if differs else 'equal'}" + ("" if not lines else "\n" + "\n".join(lines)))
    print(f"\n{len(set(ta) & set(tb))} tables on both sides, {bad} differing or missing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

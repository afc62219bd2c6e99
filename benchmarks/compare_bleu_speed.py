"""The corpus-BLEU bootstrap of ``compare_runs`` (what notebooks/compare_runs.ipynb calls), two ways:
resampling per-sentence sufficient statistics (``stats.corpus`` with ``dialect.metrics.PAPER_BLEU``) against
rescoring the resampled texts (the former implementation, kept here as the reference). Two fake models answer every
shipped dialect item (``data/dialect``: 8 translation tasks scored by BLEU); both ways must give the same interval
and p-value to the last digit.

    .venv/bin/python benchmarks/compare_bleu_speed.py --resamples 10000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from fakes import FakeModel  # noqa: E402

from thai_eval_utils.compare.runs import compare_runs  # noqa: E402
from thai_eval_utils.dialect import generation as D  # noqa: E402
from thai_eval_utils.dialect.data import load_dialect  # noqa: E402
from thai_eval_utils.dialect.metrics import bleu  # noqa: E402
from thai_eval_utils.stats.align import sort_key  # noqa: E402
from thai_eval_utils.stats.bootstrap import percentile_ci  # noqa: E402
from thai_eval_utils.stats.corpus import shifted_p  # noqa: E402


def rescoring_texts(ha: dict, hb: dict, refs: dict, n_resamples: int, seed: int) -> tuple[float, float, float]:
    """The former ``corpus_paired_bootstrap``: BLEU of the resampled texts, for each resample."""
    keys = sorted(ha.keys() & hb.keys(), key=sort_key)
    a, b, r = [ha[k] for k in keys], [hb[k] for k in keys], [refs[k] for k in keys]
    rng, boot = np.random.default_rng(seed), np.empty(n_resamples)
    for i in range(n_resamples):
        idx = rng.integers(0, len(keys), len(keys))
        rr = [r[j] for j in idx]
        boot[i] = bleu([a[j] for j in idx], rr) - bleu([b[j] for j in idx], rr)
    low, high = percentile_ci(boot, 0.95)
    return low, high, shifted_p(boot, bleu(a, r) - bleu(b, r))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=10_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as out:
        items = load_dialect(REPO / "data" / "dialect")
        for name, reply in (("model-a", lambda m: m[0]["content"][-40:]), ("model-b", lambda m: m[0]["content"][:40])):
            D.run_generation(FakeModel(name, reply=reply), items, outputs=out, greedy=True, progress=False)
        t = time.perf_counter()
        cmp = compare_runs("model-a", "model-b", ["dialect"], n_resamples=args.resamples, outputs=out)
        new = time.perf_counter() - t
        rows = [r for r in cmp.rows if r.test == "paired-bootstrap-shifted"]
        t = time.perf_counter()
        for r in rows:
            x, y = cmp.headlines_a[r.metric].items, cmp.headlines_b[r.metric].items
            old = rescoring_texts(
                dict(zip(x["key"], x["hyp"])),
                dict(zip(y["key"], y["hyp"])),
                {**dict(zip(y["key"], y["ref"])), **dict(zip(x["key"], x["ref"]))},
                args.resamples,
                cmp.seed,
            )
            assert old == (r.ci_low, r.ci_high, r.p_value), (r.metric, old, (r.ci_low, r.ci_high, r.p_value))
        rescore = time.perf_counter() - t
    print(
        f"{len(rows)} corpus-BLEU rows of {len(cmp.rows)}, {args.resamples} resamples: identical intervals and p-values"
    )
    print(f"compare_runs (all {len(cmp.rows)} rows, sufficient statistics): {new:.2f} s")
    print(f"the BLEU rows' bootstrap by rescoring texts (the former implementation): {rescore:.2f} s")


if __name__ == "__main__":
    main()

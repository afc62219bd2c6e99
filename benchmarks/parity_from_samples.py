"""thai-eval's engine (the working tree's) against the requests and log-likelihoods of one lm-eval run that
``h6_parity_speed.py`` already made and logged (``--log_samples``), without running lm-eval again: max |delta|,
the per-token tolerance max(1e-4, 1e-5 x tokens), greedy flags and per-document metrics. For a loaded machine
where the full side-by-side does not finish:

    .venv/bin/python benchmarks/parity_from_samples.py --setting longanswer0 --run benchmarks/.work/runs/longanswer0/bs1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import h6_parity_speed as bench  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setting", default="longanswer0", choices=list(bench.SETTINGS))
    ap.add_argument("--run", type=Path, required=True, help="an lm-eval output folder of h6_parity_speed.py")
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from thai_eval_utils.backend.encoding import encode_pairs
    from thai_eval_utils.backend.loglikelihood import loglikelihood
    from thai_eval_utils.backend.models import embedded_model_dir

    samples = sorted(args.run.rglob(f"samples_h6bench_{args.setting}_*.jsonl"), key=lambda p: p.stat().st_mtime)[-1]
    docs, theirs = [], []
    for line in sorted(samples.read_text(encoding="utf-8").splitlines(), key=lambda x: json.loads(x)["doc_id"]):
        s = json.loads(line)
        keys = sorted(s["arguments"], key=lambda k: int(k.rsplit("_", 1)[1]))
        docs.append(len(keys))
        theirs += [
            (s["arguments"][k]["arg_0"], s["arguments"][k]["arg_1"], float(r[0][0]), str(r[0][1]) == "True")
            for k, r in zip(keys, s["resps"])
        ]
    model_dir = embedded_model_dir()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    pairs = [(c, x) for c, x, _, _ in theirs]
    c0 = time.process_time()
    ours = loglikelihood(model, tok, pairs, max_length=bench.max_length(model, tok), progress=False)
    cpu = time.process_time() - c0
    n_tok = [max(len(c), 1) for _, c in encode_pairs(tok, pairs, False)]
    deltas = [abs(a[0] - b[2]) for a, b in zip(ours, theirs)]
    within = all(d <= max(1e-4, 1e-5 * n) for d, n in zip(deltas, n_tok))
    greedy = all(a[1] == b[3] for a, b in zip(ours, theirs))
    ids = list(range(len(docs)))
    m_ours = bench.doc_metrics(args.setting, ids, bench.per_doc([a[0] for a in ours], docs))
    m_theirs = bench.doc_metrics(args.setting, ids, bench.per_doc([b[2] for b in theirs], docs))
    same, mc2 = bench.metric_deltas(m_ours, m_theirs)
    print(
        f"{args.setting}: {len(pairs)} requests, {len(docs)} documents; engine CPU {cpu:.1f} s; max |delta| "
        f"{max(deltas):.1e}, max per token {max(d / n for d, n in zip(deltas, n_tok)):.1e}, over 1e-4: "
        f"{sum(d > 1e-4 for d in deltas)}; within max(1e-4, 1e-5 x tokens): {within}; greedy flags equal: "
        f"{greedy}; per-document metrics identical: {same} (mc2 max delta {mc2:.1e})"
    )
    return 0 if within and greedy and same else 1


if __name__ == "__main__":
    raise SystemExit(main())

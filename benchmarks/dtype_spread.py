"""bfloat16 against float32 on the log-likelihood engine (in bfloat16 report the spread against
float32 and say which accuracies move). The same requests of every leaderboard log-likelihood setting
(built by ``h6.evaluate`` on the repo's samples, as in ``h6_parity_speed.py``) are scored by thai-eval's engine
on the same weights loaded in float32 and in bfloat16; the report gives, per setting, the spread of the
log-likelihoods (max and median |delta|, per continuation token), the greedy flags that change, and each
per-document metric whose value moves, with both means. Run with the project's Python:

    .venv/bin/python benchmarks/dtype_spread.py --write-doc   # the embedded Gemma 3 270M (minutes)
    .venv/bin/python benchmarks/dtype_spread.py --quick       # a tiny random Gemma 3 (seconds)

No lm-eval here: lm-eval in bfloat16 also takes its log_softmax in bfloat16 (docs/protocol_notes.md), so the
two tools' bfloat16 numbers are not comparable to each other, only each to its float32 self.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import h6_parity_speed as bench  # noqa: E402  (the settings, request building and metrics of the parity run)

BEGIN, END = "<!-- dtype-spread:begin -->", "<!-- dtype-spread:end -->"
DTYPES = ("float32", "bfloat16")


def spread(
    setting: str,
    docs: list[int],
    sizes: list[int],
    n_tokens: list[int],
    base: list[tuple[float, bool]],
    other: list[tuple[float, bool]],
) -> dict:
    """How ``other`` (bfloat16) departs from ``base`` (float32) on one setting's requests: log-likelihood deltas,
    greedy flags that change, and per metric the documents whose value moves and both means."""
    deltas = [abs(a - b) for (a, _), (b, _) in zip(base, other)]
    per_tok = [d / n for d, n in zip(deltas, n_tokens)]
    m_base = bench.doc_metrics(setting, docs, bench.per_doc([x for x, _ in base], sizes))
    m_other = bench.doc_metrics(setting, docs, bench.per_doc([x for x, _ in other], sizes))
    metrics = {}
    for k in m_base[0]:
        moved = [d for d, a, b in zip(docs, m_base, m_other) if abs(a[k] - b[k]) > 1e-12]
        metrics[k] = {
            "float32": statistics.mean(m[k] for m in m_base),
            "bfloat16": statistics.mean(m[k] for m in m_other),
            "docs_moved": moved,
            "max_doc_delta": max(abs(a[k] - b[k]) for a, b in zip(m_base, m_other)),
        }
    return {
        "docs": len(docs),
        "requests": len(base),
        "max_delta": max(deltas),
        "median_delta": statistics.median(deltas),
        "max_delta_per_token": max(per_tok),
        "greedy_changed": sum(ga != gb for (_, ga), (_, gb) in zip(base, other)),
        "metrics": metrics,
    }


def report(results: dict, model_name: str, command: str) -> str:
    lines = [
        f"Model: {model_name}, loaded in float32 and in bfloat16 from the same weights, CPU; thai-eval's engine "
        f"on both; transformers {metadata.version('transformers')}, torch {metadata.version('torch')}, Python "
        f"{platform.python_version()}; {results['date']}.",
        "",
        f"Command: `{command}`",
        "",
        "| setting | docs / requests | max abs delta (median) | max delta per token | greedy flags changed "
        "| metric: float32 -> bfloat16 (documents that move) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results["settings"].items():
        moves = "; ".join(
            f"{k} {m['float32']:.4f} -> {m['bfloat16']:.4f} ("
            + (
                f"{len(m['docs_moved'])} of {r['docs']}"
                if not k.startswith("mc2")
                else f"max per-doc delta {m['max_doc_delta']:.1e}"
            )
            + ")"
            for k, m in r["metrics"].items()
        )
        lines.append(
            f"| {name} | {r['docs']} / {r['requests']} | {r['max_delta']:.2e} ({r['median_delta']:.1e}) | "
            f"{r['max_delta_per_token']:.1e} | {r['greedy_changed']} of {r['requests']} | {moves} |"
        )
    moved = [
        f"{s} {k}"
        for s, r in results["settings"].items()
        for k, m in r["metrics"].items()
        if m["docs_moved"] and not k.startswith("mc2")
    ]
    lines += ["", "Accuracies that move in bfloat16: " + (", ".join(moved) if moved else "none") + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tiny random Gemma 3 instead of the embedded model")
    ap.add_argument("--settings", default=",".join(bench.SETTINGS))
    ap.add_argument("--out", type=Path, help="results JSON (default: benchmarks/.work/dtype_spread*.json)")
    ap.add_argument("--write-doc", action="store_true", help=f"update the dtype block of {bench.DOC.name}")
    args = ap.parse_args(argv)
    command = ".venv/bin/python benchmarks/dtype_spread.py " + " ".join(argv if argv is not None else sys.argv[1:])

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from thai_eval_utils.backend.local_model import LocalModel
    from thai_eval_utils.backend.encoding import encode_pairs
    from thai_eval_utils.backend.models import embedded_model_dir

    model_dir = bench.tiny_model_dir() if args.quick else embedded_model_dir()
    tok = AutoTokenizer.from_pretrained(model_dir)
    models = {d: AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, d)).eval() for d in DTYPES}
    local = LocalModel(models["float32"], tok, name="dtype-spread", max_length=bench.max_length(models["float32"], tok))
    out = args.out or bench.WORK / ("dtype_spread_quick.json" if args.quick else "dtype_spread.json")
    results = {"date": time.strftime("%Y-%m-%d"), "settings": {}}
    for setting in args.settings.split(","):
        ev = bench.evaluate_setting(local, setting, bench.WORK / "dtype-store" / setting)
        pairs = ev["requests"]
        n_tokens = [max(len(c), 1) for _, c in encode_pairs(tok, pairs, False)]
        scored = {d: bench.run_engine(m, tok, pairs)[2] for d, m in models.items()}
        results["settings"][setting] = spread(
            setting, ev["docs"], [len(d) for d in ev["doc_lls"]], n_tokens, scored["float32"], scored["bfloat16"]
        )
        bench.log(f"{setting}: max |delta| {results['settings'][setting]['max_delta']:.2e}")
    name = "tiny random Gemma 3 (--quick)" if args.quick else "embedded Gemma 3 270M (Q4_K_M GGUF dequantised)"
    block = report(results, name, command)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    if args.write_doc:
        bench.update_doc(block, BEGIN, END)
    print(block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The output layer's cost before and after its buffers were reused across chunks: ``Head`` of a given git revision
(in ``backend/decoder.py``; at older revisions in ``core/decoder.py``, and before that in ``core/prefix_tree.py``)
against the working tree's (``backend.decoder.Head``), on the embedded Gemma 3 270M's output layer (262,144 x 640,
float32, CPU), random hidden states of ``--rows`` scored rows, alternating, CPU time (``time.process_time``) per call;
the results must be identical. ``--rows 876`` is the number of scored rows of the "longanswer0" setting of
h6_parity_speed.py:

    .venv/bin/python benchmarks/head_ab.py --base <commit> --rows 876 --threads 1
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="git revision holding the previous Head")
    ap.add_argument("--rows", type=int, default=876)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM

    from thai_eval_utils.backend import decoder
    from thai_eval_utils.backend.models import embedded_model_dir

    torch.set_num_threads(args.threads)

    def show(path: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", "-C", str(REPO), "show", f"{args.base}:thai_eval_utils/{path}"], capture_output=True, text=True
        )

    found = next((f for f in map(show, ("backend/decoder.py", "core/decoder.py")) if f.returncode == 0), None)
    old_src = (found or show("core/prefix_tree.py")).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(old_src)
    spec = importlib.util.spec_from_file_location("old_prefix_tree", f.name)
    old = importlib.util.module_from_spec(spec)
    sys.modules["old_prefix_tree"] = old  # dataclasses look their module up
    spec.loader.exec_module(old)
    os.unlink(f.name)

    model = AutoModelForCausalLM.from_pretrained(embedded_model_dir(), dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(args.rows, model.config.get_text_config().hidden_size, generator=g) * 3
    rows = torch.arange(args.rows)
    targets = torch.randint(0, model.get_output_embeddings().weight.shape[0], (args.rows,), generator=g)
    times: dict[str, list[float]] = {"before": [], "after": []}
    results = {}
    with torch.inference_mode():
        for _ in range(args.reps):
            for name, mod in (("before", old), ("after", decoder)):
                head = mod.Head(model)
                load = os.getloadavg()[0]
                c0 = time.process_time()
                results[name] = head(hidden, rows, targets)
                times[name].append(time.process_time() - c0)
                print(f"{name}: CPU {times[name][-1]:.2f} s (load {load:.1f})", flush=True)
    same = all(torch.equal(a, b) for a, b in zip(results["before"], results["after"]))
    b, a = statistics.median(times["before"]), statistics.median(times["after"])
    print(
        f"{args.rows} rows, {args.threads} thread(s): median CPU before {b:.2f} s, after {a:.2f} s "
        f"({100 * (a - b) / b:+.1f}%); results identical: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

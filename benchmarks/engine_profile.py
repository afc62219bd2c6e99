"""Where the log-likelihood engine spends its time on one setting of ``h6_parity_speed.py``: CPU time
of the bare ``loglikelihood`` call (median of runs) and one torch.profiler run with the engine's phases labelled
(decoder body, output layer at scored rows, mask building, the rest: Python and bookkeeping). The labels wrap
the engine's own functions from outside; the engine is unchanged. Embedded Gemma 3 270M, float32, CPU:

    .venv/bin/python benchmarks/engine_profile.py --setting longanswer0 --runs 3

CPU time (``time.process_time``) rather than wall time: the development machine is shared; the load average is
printed with the numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import h6_parity_speed as bench  # noqa: E402  (the benchmark's settings and request building)


def requests_of(local, setting: str) -> tuple[list[tuple[str, str]], float, float]:
    """The setting's requests as ``h6.evaluate`` builds them, its wall time and its seconds inside loglikelihood."""
    ev = bench.evaluate_setting(local, setting, bench.WORK / "profile" / setting / "store")
    return ev["requests"], ev["wall"], ev["ll_seconds"]


def labelled(fn, name: str):
    """``fn`` inside a torch.profiler record_function range ``name``."""
    import torch

    def wrapper(*a, **k):
        with torch.profiler.record_function(name):
            return fn(*a, **k)

    return wrapper


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setting", default="longanswer0", choices=list(bench.SETTINGS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-profile", action="store_true")
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from thai_eval_utils.backend import decoder
    from thai_eval_utils.backend.local_model import LocalModel
    from thai_eval_utils.backend.encoding import encode_pairs, fed_tokens
    from thai_eval_utils.backend.loglikelihood import loglikelihood
    from thai_eval_utils.backend.models import embedded_model_dir

    model_dir = embedded_model_dir()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    ml = bench.max_length(model, tok)
    local = LocalModel(model, tok, name="profile", max_length=ml)
    pairs, ev_wall, ev_ll = requests_of(local, args.setting)
    enc = encode_pairs(tok, pairs, False)
    seqs, targets = fed_tokens(enc, ml)
    work = bench.work_ratio(model, tok, enc)
    print(
        f"{args.setting}: {len(pairs)} requests; context tokens {min(len(c) for c, _ in enc)}-"
        f"{max(len(c) for c, _ in enc)}, continuation tokens {min(len(t) for t in targets)}-"
        f"{max(len(t) for t in targets)}; {work}"
    )
    print(f"h6.evaluate (first run, includes the self-check) {ev_wall:.2f} s, inside loglikelihood {ev_ll:.2f} s")

    cpu, wall, out = [], [], None
    for _ in range(args.runs):
        load = os.getloadavg()[0]
        t0, c0 = time.perf_counter(), time.process_time()
        res = loglikelihood(model, tok, pairs, max_length=ml, progress=False)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        assert out is None or res == out, "engine results differ between runs"
        out = res
        print(f"  loglikelihood: CPU {cpu[-1]:.2f} s, wall {wall[-1]:.2f} s (load before {load:.1f})", flush=True)
    gflop = work["thai_eval_gflop"]
    print(
        f"median CPU {statistics.median(cpu):.2f} s, wall {statistics.median(wall):.2f} s; "
        f"counted work {gflop:.0f} GFLOP = {gflop / statistics.median(cpu) * torch.get_num_threads():.0f} "
        f"GFLOP per CPU-second x threads ({torch.get_num_threads()} threads)"
    )
    evs = []
    for _ in range(args.runs):
        _, w, inside = requests_of(local, args.setting)
        evs.append((w, inside))
    print(
        "h6.evaluate wall / inside loglikelihood: "
        + ", ".join(f"{w:.2f}/{i:.2f} ({100 * (w - i) / i:+.1f}%)" for w, i in evs)
    )
    if args.no_profile:
        return 0
    decoder.Head.__call__ = labelled(decoder.Head.__call__, "phase: output layer + log_softmax")
    decoder.Decoder.model_call = labelled(decoder.Decoder.model_call, "phase: model call (masks and body)")
    net = model.base_model
    net.forward = labelled(net.forward, "phase: decoder body")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with torch.profiler.record_function("phase: whole call"):
            res = loglikelihood(model, tok, pairs, max_length=ml, progress=False)
    assert res == out
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=25))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

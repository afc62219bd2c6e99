"""Run lm-evaluation-harness's CLI (``lm-eval run ...``) with ``HFLM.loglikelihood`` timed.

Runs inside the lm-eval virtual environment made by ``h6_parity_speed.py``, never in the project's one. The
wall and CPU time of every ``loglikelihood`` call (tokenization included, model loading excluded) is appended as one
JSON line to the file named by ``H6_TIMING_FILE``; ``H6_THREADS`` sets torch's thread count.
"""

from __future__ import annotations

import json
import os
import sys
import time

from lm_eval.models.huggingface import HFLM

_original = HFLM.loglikelihood


def _timed(self, requests, *args, **kwargs):
    t0, c0 = time.perf_counter(), time.process_time()
    out = _original(self, requests, *args, **kwargs)
    with open(os.environ["H6_TIMING_FILE"], "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "requests": len(requests),
                    "seconds": time.perf_counter() - t0,
                    "cpu_seconds": time.process_time() - c0,
                    "batch_size": self.batch_size,
                    "torch_threads": _threads(),
                }
            )
            + "\n"
        )
    return out


def _threads() -> int:
    import torch

    return torch.get_num_threads()


HFLM.loglikelihood = _timed
if os.environ.get("H6_THREADS"):
    import torch

    torch.set_num_threads(int(os.environ["H6_THREADS"]))

if __name__ == "__main__":
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm-eval", "run", *sys.argv[1:]]
    cli_evaluate()

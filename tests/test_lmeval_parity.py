"""A quick parity run against lm-evaluation-harness 0.4.13 itself, when it is installed.

lm-eval never goes into the project's environment: ``benchmarks/h6_parity_speed.py`` installs it into
``benchmarks/.work/lmeval-venv``. When that environment exists (it does after one run of the script), this test runs
the script's ``--quick`` mode (a tiny random Gemma 3 with sliding-window layers; ARC 5-shot, HellaSwag 10-shot and
Winogrande 5-shot requests built by ``h6.evaluate`` from the repo's samples; lm-eval at batch size 1) and checks lm-eval's logged per-request log-likelihoods
against the engine's. Otherwise it is skipped (a clean clone in CI has no lm-eval; installing it would need the
network). Only parity is checked here; the speed comparison is the script's job (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LMEVAL_PY = REPO / "benchmarks" / ".work" / "lmeval-venv" / "bin" / "python"
MARKER = LMEVAL_PY.parents[1] / "h6-installed.json"


def _lm_eval_installed() -> bool:
    if not (LMEVAL_PY.exists() and MARKER.exists()):
        return False
    probe = subprocess.run([str(LMEVAL_PY), "-c", "import lm_eval"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(
    not _lm_eval_installed(),
    reason="lm-eval 0.4.13 is not installed in benchmarks/.work/lmeval-venv "
    "(run benchmarks/h6_parity_speed.py --quick once to create it)",
)
def test_quick_parity_with_lm_eval():
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "h6_parity_speed.py"),
            "--quick",
            "--settings",
            "arc5,hellaswag10,winogrande5",
            "--batch-sizes",
            "1",
            "--engine-runs",
            "1",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((REPO / "benchmarks" / ".work" / "runs-quick" / "results.json").read_text())
    for name in ("arc5", "hellaswag10", "winogrande5"):
        task = results["settings"][name]
        # every document of the samples, every choice
        assert task["requests"] == {"arc5": 60, "hellaswag10": 40, "winogrande5": 20}[name]
        assert task["metrics_equal"] and task["greedy_equal"]
        assert task["max_delta"] <= 1e-4, task["max_delta"]

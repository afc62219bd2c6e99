"""benchmarks/code_shape.py on a planted package: a module cycle hidden by a function-level relative import through
a package ``__init__`` (found by both readings, own and grimp), a package cycle, a child importing its parent (no
cycle), a long function and module, a hand-written resampling loop, a second ``round_half_up``, the ``n_boot`` /
``ci`` vocabulary and a scipy bootstrap call outside ``stats/``."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("grimp", reason="grimp (the dev extra) gives the independent count")
SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "code_shape.py"
_spec = importlib.util.spec_from_file_location("code_shape", SCRIPT)
C = importlib.util.module_from_spec(_spec)
sys.modules["code_shape"] = C  # dataclasses resolve the module's annotations through sys.modules
_spec.loader.exec_module(C)

LONG_BODY = "".join(f"    x{i} = {i}\n" for i in range(61))
FILES = {
    "__init__.py": "",
    "core/__init__.py": "",
    "core/models.py": "from thai_eval_utils.core.served import Served\n",
    "core/served/__init__.py": "from thai_eval_utils.core.served.model import Served\n",
    "core/served/model.py": (
        "from thai_eval_utils.core import served\n\nclass Served:\n    def load(self):\n"
        "        from ..models import x\n        return x\n"
    ),
    "compare/__init__.py": "",
    "compare/differ.py": "from ..thaicli import judge\n",
    "thaicli/__init__.py": "",
    "thaicli/judge.py": "from thai_eval_utils.compare import differ\n\n\ndef judge_answers():\n" + LONG_BODY,
    "dialect/__init__.py": "",
    "dialect/human_eval.py": (
        "import numpy as np\nfrom scipy import stats\n\n\ndef spearman(x, n_boot=10, ci=0.9):\n"
        "    rng = np.random.default_rng(0)\n    for _ in range(n_boot):\n"
        "        idx = rng.integers(0, 3, 3)\n    return stats.bootstrap((x,), len)\n\n\n"
        "def round_half_up(v):\n    return v\n"
    ),
    "stats/__init__.py": "from thai_eval_utils.stats.bootstrap import draws\n",
    "stats/bootstrap.py": "from thai_eval_utils import stats\n\n\ndef draws(rng, n_resamples):\n    return [rng.integers(0, 2, 2) for _ in range(n_resamples)]\n",
    "core/tables.py": "def round_half_up(v, d):\n    return v\n" + "\n" * 400,
    "core/store.py": "# Over 400 lines: one run folder's code stays together.\n" + "x = 1\n" * 400,
}


@pytest.fixture(scope="module")
def shape(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    for rel, text in FILES.items():
        (root / "thai_eval_utils" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "thai_eval_utils" / rel).write_text(text, encoding="utf-8")
    return C.measure(root, "planted")


def test_cycles_are_found_by_both_readings_alike(shape):
    core = ["thai_eval_utils.core.models", "thai_eval_utils.core.served", "thai_eval_utils.core.served.model"]
    for reading in ("own", "grimp"):
        assert shape.cycles[reading] == {
            "module": [["thai_eval_utils.compare.differ", "thai_eval_utils.thaicli.judge"], core],
            "top package": [["compare", "thaicli"]],
            "every package": [["compare", "thaicli"], ["core", "core.served"]],
        }
    # models -> served -> served.model -> models, differ <-> judge, stats <-> stats.bootstrap; served.model -> served
    # and stats.bootstrap -> stats import their parents (no cycle)
    assert shape.edges == {"own": 8, "grimp": 8} and shape.edges_differ == 0
    assert shape.inner_imports == [("thai_eval_utils.core.served.model", "thai_eval_utils.core.models")]


def test_sizes_and_duplicated_statistics_helpers_are_listed(shape):
    assert shape.places == {
        "long modules": ["thai_eval_utils/core/store.py (401, says why)", "thai_eval_utils/core/tables.py (402)"],
        "long functions": ["thai_eval_utils/thaicli/judge.py:4 judge_answers (62)"],
        "resampling loops": ["thai_eval_utils/dialect/human_eval.py:7"],
        "round_half_up": ["thai_eval_utils/core/tables.py:1", "thai_eval_utils/dialect/human_eval.py:12"],
        "old vocabulary": ["thai_eval_utils/dialect/human_eval.py:5 spearman (ci, n_boot)"],
        "scipy resamplers": ["thai_eval_utils/dialect/human_eval.py:9"],
    }
    table = C.table([shape])
    assert "| hand-written resampling loops outside stats/ | 1 |" in table
    assert "| modules over 400 lines (of them with no comment saying why) | 2 (1) |" in table


def test_the_script_reads_a_git_revision(tmp_path):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--rev", "HEAD", "--no-details"], check=True, capture_output=True, text=True
    ).stdout
    head = subprocess.run(
        ["git", "-C", str(SCRIPT.parents[1]), "rev-parse", "--short", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert out.splitlines()[0] == f"| measure | HEAD ({head}) |" and len(out.splitlines()) == 2 + len(C.ROWS)

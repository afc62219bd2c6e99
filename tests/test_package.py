"""The package's public names resolve, and importing it does not load torch."""

from __future__ import annotations

import subprocess
import sys

import thai_eval_utils


def test_every_export_resolves():
    for name in thai_eval_utils.__all__:
        assert getattr(thai_eval_utils, name) is not None, name


def test_import_is_light():
    code = "import sys, thai_eval_utils; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"

"""Where fetched data lives on this machine.

- Hugging Face sources: the Hugging Face cache itself (``$HF_HOME``, ``$HF_HUB_CACHE``), in the hub's own layout,
  shared with every other tool that reads it.
- Git sources: a clone per repository under ``<data home>/git/`` (one per URL, holding the pinned commits).
- The files the suites read: ``<data home>/full/<suite data folder>/`` in the layout of the suite's shipped
  samples, each folder with its origin file (``core.data_origin``). ``thai-eval run --data full`` reads this root.

The data home is ``$THAI_EVAL_DATA``, else ``<thai-eval cache>/data`` (``$THAI_EVAL_CACHE``, else
``~/.cache/thai-eval``; the embedded model's cache is the same folder).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

#: ``--data full``: the fetched full data sets, not a folder name.
FULL = "full"


def data_home() -> Path:
    """``$THAI_EVAL_DATA``, else ``<thai-eval cache>/data``."""
    if os.environ.get("THAI_EVAL_DATA"):
        return Path(os.environ["THAI_EVAL_DATA"]).expanduser()
    cache = os.environ.get("THAI_EVAL_CACHE") or Path.home() / ".cache" / "thai-eval"
    return Path(cache).expanduser() / "data"


def full_root() -> Path:
    """The data root of the fetched full data sets (each suite's folder under it)."""
    return data_home() / FULL


def git_clone_dir(url: str) -> Path:
    """The clone of the Git repository at ``url`` (a readable name and a hash of the URL)."""
    tail = re.sub(r"[^A-Za-z0-9_.-]+", "+", url.rstrip("/").removesuffix(".git").split("://")[-1])[-60:]
    return data_home() / "git" / f"{tail.strip('+')}-{hashlib.sha256(url.encode()).hexdigest()[:8]}"

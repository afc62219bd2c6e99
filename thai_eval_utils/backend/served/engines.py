"""What thai-eval starts when it serves a model itself (``thai-eval run --model vllm:MODEL`` / ``sglang:MODEL``):
the engine specs, the GPUs each replica gets, the command lines as the engines document them, the server's version,
and what the run cards record of it.

Command lines (one per replica, each on 127.0.0.1 and its own free port)::

    vllm serve MODEL --host 127.0.0.1 --port P --tensor-parallel-size TP --served-model-name NAME
        [--no-enable-prefix-caching | --enable-prefix-caching] [extra...]
    python -m sglang.launch_server --model-path MODEL --host 127.0.0.1 --port P --tp-size TP
        --served-model-name NAME [--disable-radix-cache] [extra...]

Prefix caching is off for runs that score log-likelihoods unless asked for: with it on, vLLM's prompt
log-probabilities can change with the order of the requests (vllm-project/vllm#42019), and a score must not depend on
which request came first. The run card keeps what changes numbers (engine, version, model, tensor parallel size,
prefix caching, the extra flags: ``engine``) apart from where it ran (GPUs, logs, replica count: ``engine_launch``,
not part of the config id). The launching process tells the notebooks' kernels through :data:`ENGINE_ENV`;
:func:`launched_identity` is how a :class:`~.model.ServedModel` reads it back.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ModelLoadError

#: The engines thai-eval can start, as the model spec's prefix (``vllm:/models/x``).
ENGINES = ("vllm", "sglang")
#: Environment variable holding the launched servers' record (JSON) for the notebooks' kernels.
ENGINE_ENV = "THAI_EVAL_ENGINE"
#: Flag names whose value is a secret: never recorded in a run card.
_SECRET_FLAG = re.compile(r"api[-_]?key|token|secret|passw", re.I)


@dataclass(frozen=True)
class EngineSpec:
    """``vllm:MODEL`` / ``sglang:MODEL``: the engine and the model it serves (a local folder or a Hub id)."""

    engine: str
    model: str


def parse_engine_spec(spec: str) -> EngineSpec | None:
    """The engine spec of a ``--model`` value, or None when it names no engine (``embedded``, ``completions:``...)."""
    engine, sep, model = spec.partition(":")
    if not sep or engine not in ENGINES:
        return None
    if not model.strip():
        raise ModelLoadError(f"{spec!r} names no model: write {engine}:/path/to/model or {engine}:<hub id>")
    return EngineSpec(engine, model.strip())


def served_name(model: str) -> str:
    """The model id the servers serve (``--served-model-name``): a local folder's or file's name (a GGUF's stem),
    else the Hub id as given."""
    path = Path(model).expanduser()
    if path.is_file():
        return path.stem
    if path.is_dir():
        return path.resolve().name
    return model.rstrip("/")


def visible_gpus() -> list[str]:
    """The GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` when set (empty: none; CUDA's list ends at an
    invalid entry such as ``-1``), else one index per line of ``nvidia-smi -L``, else none."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        gpus = []
        for item in (x.strip() for x in listed.split(",")):
            if not item or item.startswith("-"):
                break
            gpus.append(item)
        return gpus
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(x for x in out.splitlines() if x.startswith("GPU "))]


def plan_replicas(gpus: Sequence[str], tp: int = 1, replicas: int | None = None) -> list[tuple[str, ...]]:
    """The GPUs of each replica: ``tp`` consecutive GPUs each, as many replicas as fit (``replicas``: at most
    that many; default all, at least one). No GPUs: ``replicas`` (default one) CPU servers, ``()`` each."""
    if tp < 1 or (replicas is not None and replicas < 1):
        raise ValueError(f"--tp and --replicas must be >= 1 (got tp={tp}, replicas={replicas})")
    if not gpus:
        return [()] * (replicas or 1)
    fit = len(gpus) // tp
    if fit < 1 or (replicas or 0) > fit:
        raise ModelLoadError(
            f"{replicas or 1} replica(s) x --tp {tp} need {(replicas or 1) * tp} GPUs; this "
            f"machine shows {len(gpus)} ({', '.join(gpus)}; CUDA_VISIBLE_DEVICES or nvidia-smi -L)"
        )
    return [tuple(gpus[i * tp : (i + 1) * tp]) for i in range(replicas or fit)]


def cache_flags(engine: str, prefix_caching: bool | None) -> list[str]:
    """The engine's prefix-caching flag: on, off, or None (the engine's default, no flag). SGLang's radix cache is
    on unless disabled, so "on" adds nothing there."""
    if prefix_caching is None:
        return []
    if engine == "vllm":
        return ["--enable-prefix-caching" if prefix_caching else "--no-enable-prefix-caching"]
    return [] if prefix_caching else ["--disable-radix-cache"]


def engine_flags(engine: str, tp: int, prefix_caching: bool | None, extra: Sequence[str] = ()) -> list[str]:
    """The flags that change what the servers compute: tensor parallel size, prefix caching, the user's extras."""
    tp_flag = "--tensor-parallel-size" if engine == "vllm" else "--tp-size"
    return [tp_flag, str(tp), *cache_flags(engine, prefix_caching), *extra]


def sglang_python() -> str:
    """The Python that runs SGLang: this one when it has ``sglang``, else ``python3`` (or ``python``) on PATH."""
    if importlib.util.find_spec("sglang") is not None:
        return sys.executable
    return shutil.which("python3") or shutil.which("python") or "python3"


def server_command(engine: str, model: str, name: str, port: int, flags: Sequence[str]) -> list[str]:
    """One replica's command line (``flags``: :func:`engine_flags`)."""
    where = ["--host", "127.0.0.1", "--port", str(port)]
    if engine == "vllm":
        return ["vllm", "serve", model, *where, *flags[:2], "--served-model-name", name, *flags[2:]]
    return [
        sglang_python(),
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        *where,
        *flags[:2],
        "--served-model-name",
        name,
        *flags[2:],
    ]


def check_installed(engine: str) -> None:
    """ModelLoadError when the engine's command cannot be found (nothing is started then)."""
    if engine == "vllm" and shutil.which("vllm") is None:
        raise ModelLoadError(
            "vLLM is not installed here: no `vllm` command on PATH (pip install vllm), or start the "
            "servers yourself and pass --model completions:NAME --base-url URL (docs/engines.md)"
        )


def engine_version(engine: str, base_url: str) -> str:
    """The server's version: its ``/version`` endpoint (vLLM's), else ``vllm --version`` / ``sglang.__version__``
    from the command line, else ``"unknown"``."""
    root = base_url[:-3] if base_url.endswith("/v1") else base_url
    try:
        with urllib.request.urlopen(f"{root}/version", timeout=5) as r:
            version = json.load(r).get("version")
        if isinstance(version, str) and version:
            return version
    except (OSError, ValueError, AttributeError):
        pass
    cmd = (
        ["vllm", "--version"]
        if engine == "vllm"
        else [sglang_python(), "-c", "import sglang; print(sglang.__version__)"]
    )
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=180).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = [x.strip() for x in out.splitlines() if x.strip()]
    return lines[-1] if lines else "unknown"


def recorded_flags(flags: Sequence[str]) -> list[str]:
    """``flags`` for a run card: the value of a secret-looking flag (``--api-key K``, ``--hf-token=T``) masked."""
    out: list[str] = []
    hide_next = False
    for flag in flags:
        if hide_next:
            out.append("***")
            hide_next = False
        elif flag.startswith("-") and _SECRET_FLAG.search(flag):
            name, eq, _ = flag.partition("=")
            out.append(f"{name}=***" if eq else flag)
            hide_next = not eq
        else:
            out.append(flag)
    return out


def launched_identity(model_id: str, base_urls: Sequence[str]) -> dict[str, Any]:
    """What the run card records of servers thai-eval started (``engine``, ``engine_launch``), when
    :data:`ENGINE_ENV` describes exactly these servers of ``model_id``; else {} (servers started by hand)."""
    raw = os.environ.get(ENGINE_ENV)
    if not raw:
        return {}
    try:
        info = json.loads(raw)
        same = info["model_id"] == model_id and sorted(info["base_urls"]) == sorted(base_urls)
        return {"engine": info["engine"], "engine_launch": info["engine_launch"]} if same else {}
    except (ValueError, KeyError, TypeError):
        return {}

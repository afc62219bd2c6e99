"""A local OpenAI-compatible server (``transformers serve``) for the ThaiCLI judge demo, and ``open_judge``.

``serve_model(dir)`` starts ``transformers serve DIR --host 127.0.0.1 --port <free>`` (transformers 5.x CLI),
waits until ``GET /v1/models`` answers and yields the base URL; the server is stopped on exit.
``open_judge(judge_model)`` yields a ready judge: ``"embedded-serve"`` serves the embedded Gemma 3
270M locally (far too small to judge well: it only exercises the pipeline), ``"local:<spec>"`` loads a local model
(``load_model(spec)``: ``local:embedded``, a model folder, a ``.gguf``) that judges in-process with no server,
anything else is a model id at an OpenAI-compatible endpoint, checked for reachability first.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import openai

from thai_eval_utils.core.errors import JudgeError, ModelLoadError
from thai_eval_utils.judging.rubric import JudgeParams
from thai_eval_utils.backend.models import LOCAL_JUDGE, embedded_model_dir, load_judge
from thai_eval_utils.backend.openai_client import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    ApiError,
    ApiModel,
)

#: ``judge_model`` value meaning: start a local ``transformers serve`` of the embedded model.
EMBEDDED_SERVE = "embedded-serve"
#: The embedded demo judge is greedy, so every repeat call returns the same text: the notebook caps its
#: calls and reply length to keep the demo to minutes (a real judge keeps the paper's 16 calls).
EMBEDDED_JUDGE_MAX_CALLS = 2
EMBEDDED_JUDGE_MAX_TOKENS = 8
#: CPU generation is slow: a local server gets long request timeouts and few requests at a time.
LOCAL_TIMEOUT = 900.0
LOCAL_CONCURRENCY = 2


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def served_model_ids(base_url: str) -> list[str] | None:
    """The model ids ``GET <base_url>/models`` lists, or None when nothing answers there (within 5 s)."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as resp:
            return [m["id"] for m in json.load(resp).get("data", [])]
    except (urllib.error.URLError, OSError, ValueError):
        return None


@contextlib.contextmanager
def serve_model(
    model_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    device: str = "cpu",
    startup_timeout: float = 600.0,
    dtype: str | None = None,
) -> Iterator[str]:
    """Serve ``model_dir`` with ``transformers serve`` until the block ends; yields ``http://host:port/v1``.

    The model id to request is ``str(model_dir)`` (the server is started with it as its forced model). ``dtype``
    (e.g. ``"float32"``) is passed as ``--dtype``; None leaves the server's default (the weights' dtype).

    Raises:
        JudgeError: the server exited or did not answer ``/v1/models`` within ``startup_timeout`` seconds
            (the message ends with the tail of its log).
    """
    port = port or free_port(host)
    base_url = f"http://{host}:{port}/v1"
    log = Path(tempfile.mkstemp(prefix="thai-eval-serve-", suffix=".log")[1])
    cmd = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(model_dir), "--host", host]
    cmd += ["--port", str(port), "--device", device, "--default-seed", "0", "--log-level", "warning"]
    cmd += ["--dtype", dtype] if dtype else []
    env = {**os.environ, "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"), "TRANSFORMERS_OFFLINE": "1"}
    with open(log, "wb") as log_fh:
        proc = subprocess.Popen(cmd, stdout=log_fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + startup_timeout
        while served_model_ids(base_url) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
                why = f"exited with code {proc.returncode}" if proc.returncode is not None else "did not start in time"
                raise JudgeError(f"transformers serve {why} (log {log}):\n{tail}")
            time.sleep(0.5)
        yield base_url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def judge_params_for(judge_model: str | None, *, max_tokens: int, max_calls: int) -> JudgeParams:
    """The judge's settings for ``judge_model``: ``max_tokens`` and ``max_calls`` as asked, except for the embedded
    demo judge (:data:`EMBEDDED_SERVE`), which is greedy and repeats itself: its calls and reply length are capped at
    :data:`EMBEDDED_JUDGE_MAX_CALLS` and :data:`EMBEDDED_JUDGE_MAX_TOKENS` (a real judge keeps the paper's 16 calls).

    Example:
        >>> judge_params_for("embedded-serve", max_tokens=512, max_calls=16)
        JudgeParams(max_tokens=8, temperature=0.0, top_p=1.0, seed=0, max_calls=2)
    """
    if judge_model == EMBEDDED_SERVE:
        max_calls = min(max_calls, EMBEDDED_JUDGE_MAX_CALLS)
        max_tokens = min(max_tokens, EMBEDDED_JUDGE_MAX_TOKENS)
    return JudgeParams(max_tokens=max_tokens, max_calls=max_calls)


@contextlib.contextmanager
def open_judge(
    judge_model: str,
    *,
    base_url: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> Iterator[Any]:
    """A judge ready to call: ``"embedded-serve"`` (local demo server, an ``ApiModel``), ``"local:<spec>"`` (a
    ``LocalModel`` judging in-process, its own ``concurrency`` judgements per ``chat`` call at most)
    or a model id at ``base_url`` (an ``ApiModel``).

    The API key is never a parameter (so it never lands in a notebook): ``$THAI_EVAL_JUDGE_API_KEY`` if set
    (``backend.models.load_judge``), else ``ApiModel``'s default (the base URL's password, else ``$OPENAI_API_KEY``).

    Raises:
        JudgeError: the endpoint cannot be reached or refuses the key; the caller can fall back to the
            judge-free variant.
    """
    if judge_model == EMBEDDED_SERVE:
        model_dir = embedded_model_dir()
        with serve_model(model_dir) as url:
            yield ApiModel(
                str(model_dir),
                base_url=url,
                concurrency=min(concurrency, LOCAL_CONCURRENCY),
                timeout=max(timeout, LOCAL_TIMEOUT),
                max_retries=1,
            )
        return
    local = judge_model.startswith(LOCAL_JUDGE)
    limits = {"concurrency": concurrency, "timeout": timeout, "max_retries": max_retries}
    try:  # a local model; else the endpoint's (e.g. OpenAI's without OPENAI_API_KEY: an error here)
        judge = load_judge(judge_model, base_url=base_url, **limits)
    except ModelLoadError as exc:
        raise JudgeError(str(exc)) from None
    if not local:
        probe = ApiModel.from_options(judge_model, replace(judge.options, timeout=15.0, max_retries=1))
        try:
            probe.list_models()
        except ApiError as exc:
            if not isinstance(exc.cause, openai.NotFoundError):  # a server without /models is still reachable
                raise JudgeError(f"judge endpoint not usable: {exc}") from None
    yield judge

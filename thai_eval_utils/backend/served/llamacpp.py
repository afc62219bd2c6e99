"""Start llama-cpp-python's OpenAI-compatible server on a GGUF file (a CPU server for ``completions:`` models,
the tests and ``benchmarks/served_parity_speed.py``): ``python -m llama_cpp.server`` on 127.0.0.1 and a free
port, waited for until ``GET /v1/models`` answers, stopped by its pid.

Needs the ``serve`` extra (``pip install -e '.[serve]'``: llama-cpp-python with its server dependencies).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from thai_eval_utils.core.errors import ModelLoadError


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaCppServer:
    """``with LlamaCppServer(gguf, alias="gemma-3-270m") as srv: load_model("completions:gemma-3-270m",
    base_url=srv.base_url, tokenizer="embedded")``.

    Args:
        gguf: the model file.
        alias: the model id the server reports (``--model_alias``).
        n_ctx: the server's context window (prompt + generated tokens).
        n_threads: CPU threads (default: all).
        log: file for the server's output (default: discarded).
        startup_timeout: seconds to wait for the server to answer.
    """

    def __init__(
        self,
        gguf: str | Path,
        *,
        alias: str = "model",
        n_ctx: int = 4096,
        n_threads: int | None = None,
        log: str | Path | None = None,
        startup_timeout: float = 180.0,
        port: int | None = None,
    ) -> None:
        self.gguf, self.alias, self.n_ctx = Path(gguf), alias, int(n_ctx)
        self.n_threads, self.log, self.startup_timeout = n_threads, log, startup_timeout
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.gguf),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
        ]
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads)]
        return cmd

    def __enter__(self) -> LlamaCppServer:
        if not self.gguf.is_file():
            raise ModelLoadError(f"GGUF file not found: {self.gguf}")
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ModelLoadError(
                    f"llama-cpp-python server exited with code {self.proc.returncode} "
                    f"({' '.join(self.command())}); see {self.log or 'its log'}"
                )
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:
                    if json.load(r).get("data"):
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise ModelLoadError(f"llama-cpp-python server did not answer within {self.startup_timeout:.0f} s")

    def stop(self) -> None:
        """Terminate the server (its own process group, by pid), then kill it if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=15)

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""Start vLLM or SGLang servers for a run and stop them afterwards: ``thai-eval run --model vllm:MODEL``.

::

    with launch_servers("vllm", "/models/x", tp=2, logs_dir="outputs/servers", deadline_s=1800) as launch:
        model = load_model(f"completions:{launch.name}", base_url=launch.base_urls, tokenizer="/models/x")

One server per replica (:func:`.engines.plan_replicas`: ``tp`` GPUs each, pinned with ``CUDA_VISIBLE_DEVICES``),
each on a free port of 127.0.0.1, in its own process group, its output in ``<logs_dir>/<name>-<i>.log``, recorded
in ``<logs_dir>/running.json`` (:mod:`.processes`). A launch waits until every server answers ``GET /v1/models``
with the model (then ``/health``, where the server has it); a server that exits first or is not ready by the
deadline stops everything started and raises a :class:`ModelLoadError` naming the engine, the replica, the port,
the deadline and the end of its log. A server that could not take its port (another process took it between
choosing and binding) is started again on a fresh port. The servers are stopped on leaving the ``with`` block,
whatever the reason: success, an error, Ctrl-C, or SIGTERM (turned into ``SystemExit(143)`` while the servers run).

Many nodes: see docs/engines.md (one server per node, started by SLURM or by hand; thai-eval takes their URLs).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thai_eval_utils.backend.served.engines import (
    ENGINE_ENV,
    check_installed,
    engine_flags,
    engine_version,
    plan_replicas,
    recorded_flags,
    served_name,
    server_command,
    visible_gpus,
)
from thai_eval_utils.backend.served.processes import RunningRecord, ServerProcess, end_groups, end_orphans, start_ticks
from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.core.provenance import now_utc, slugify

DEFAULT_DEADLINE_S = 1800.0  # a large model's weights and CUDA graphs can take many minutes
DEFAULT_GRACE_S = 30.0  # SIGTERM, then this long before SIGKILL
PORT_TRIES = 3  # a port taken between choosing and binding: two more tries on fresh ports
_PORT_TAKEN = re.compile(r"address already in use|errno 98|eaddrinuse", re.I)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a server's log (empty if unreadable)."""
    try:
        text = path.read_bytes()[-20000:].decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class Replica:
    """One server of the launch: its GPUs, log, port, process, and how many starts it took."""

    index: int
    gpus: tuple[str, ...]
    log: Path
    port: int = 0
    proc: subprocess.Popen | None = None
    tries: int = 0
    healthy: bool = False
    command: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


class EngineLaunch:
    """vLLM or SGLang servers of one model for the length of a ``with`` block (see the module docstring).

    Args:
        engine: ``"vllm"`` or ``"sglang"``.
        model: a local folder or Hub id, as the engine takes it.
        tp: GPUs per replica (tensor parallel size).
        replicas: how many servers (default: as many as the GPUs allow, ``n_gpus // tp``, at least one).
        extra_args: more flags for every server, passed through as given.
        logs_dir: where the logs and ``running.json`` go (``<outputs>/servers``).
        deadline_s: seconds for every server to become healthy.
        loglikelihood: the run scores log-likelihoods, so prefix caching is off unless ``prefix_caching=True``.
        prefix_caching: True / False forces it; None: off for log-likelihood runs, else the engine's default.
        grace_s: seconds between SIGTERM and SIGKILL when stopping.
    """

    def __init__(
        self,
        engine: str,
        model: str,
        *,
        tp: int = 1,
        replicas: int | None = None,
        extra_args: Sequence[str] = (),
        logs_dir: str | Path,
        deadline_s: float = DEFAULT_DEADLINE_S,
        loglikelihood: bool = True,
        prefix_caching: bool | None = None,
        grace_s: float = DEFAULT_GRACE_S,
        poll_s: float = 0.5,
    ) -> None:
        self.engine, self.model, self.tp = engine, model, int(tp)
        self.name = served_name(model)
        caching = prefix_caching if prefix_caching is not None else (False if loglikelihood else None)
        self.flags = engine_flags(engine, self.tp, caching, list(extra_args))
        self.logs_dir, self.deadline_s, self.grace_s, self.poll_s = Path(logs_dir), float(deadline_s), grace_s, poll_s
        stem = slugify(f"{engine}-{self.name}")
        self.replicas = [
            Replica(i, g, self.logs_dir / f"{stem}-{i}.log")
            for i, g in enumerate(plan_replicas(visible_gpus(), self.tp, replicas))
        ]
        self.record = RunningRecord(self.logs_dir)
        self.version = "unknown"
        self.started_at: str | None = None
        self._old_sigterm: Any = None

    @property
    def base_urls(self) -> list[str]:
        return [r.base_url for r in self.replicas]

    def commands(self) -> list[list[str]]:
        """Each replica's command line (port ``<port>`` before the start), e.g. for ``--dry-run``."""
        return [r.command or server_command(self.engine, self.model, self.name, 0, self.flags) for r in self.replicas]

    # --- start -------------------------------------------------------------------------------------------
    def start(self) -> EngineLaunch:
        """End a dead launcher's servers, start every replica, wait until all are healthy (else stop all, raise)."""
        check_installed(self.engine)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        end_orphans(self.logs_dir, self.grace_s)
        self._catch_sigterm()
        try:
            self.started_at = now_utc()
            for r in self.replicas:
                self._spawn(r)
            self._wait_healthy()
            self.version = engine_version(self.engine, self.replicas[0].base_url)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, r: Replica) -> None:
        """Start replica ``r`` on a fresh free port, in its own process group, pinned to its GPUs."""
        r.port, r.tries, r.healthy = free_port(), r.tries + 1, False
        r.command = server_command(self.engine, self.model, self.name, r.port, self.flags)
        env = dict(os.environ)
        if r.gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(r.gpus)
        with open(r.log, "ab") as log:
            log.write(f"\n=== thai-eval {now_utc()}: {' '.join(r.command)}\n".encode())
            log.flush()
            r.proc = subprocess.Popen(
                r.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        self.record.add(
            ServerProcess(r.proc.pid, r.proc.pid, start_ticks(r.proc.pid), r.command, r.port, now_utc(), str(r.log))
        )

    def _wait_healthy(self) -> None:
        """Poll every replica until all are healthy; restart one whose port was taken; raise for the rest."""
        deadline = time.monotonic() + self.deadline_s
        while not all(r.healthy for r in self.replicas):
            for r in (x for x in self.replicas if not x.healthy):
                assert r.proc is not None
                if r.proc.poll() is not None:
                    self._exited(r)
                else:
                    r.healthy = self._answers(r)
            if all(r.healthy for r in self.replicas):
                return
            if time.monotonic() > deadline:
                r = next(x for x in self.replicas if not x.healthy)
                raise self._error(r, f"did not become healthy within the {self.deadline_s:g} s deadline")
            time.sleep(self.poll_s)

    def _exited(self, r: Replica) -> None:
        """Replica ``r`` exited before it was healthy: start it again on another port when its port was taken
        (at most :data:`PORT_TRIES` starts), else raise."""
        assert r.proc is not None
        self.record.remove(r.proc.pid)
        end_groups([r.proc.pid], 1.0, [r.proc])  # what it may have spawned
        if _PORT_TAKEN.search(log_tail(r.log, 40)) and r.tries < PORT_TRIES:
            self._spawn(r)
            return
        raise self._error(r, f"exited with code {r.proc.returncode} before it became healthy")

    def _answers(self, r: Replica) -> bool:
        """Whether replica ``r`` serves the model (``GET /v1/models`` lists it) and ``/health`` says ready
        (a server without ``/health`` counts as ready)."""
        try:
            with urllib.request.urlopen(f"{r.base_url}/models", timeout=2) as resp:
                ids = [m.get("id") for m in json.load(resp).get("data", [])]
        except (OSError, ValueError, AttributeError):
            return False
        if self.name not in ids:
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{r.port}/health", timeout=2) as resp:
                return resp.status == 200
        except urllib.error.HTTPError as exc:
            return exc.code == 404
        except OSError:
            return False

    def _error(self, r: Replica, what: str) -> ModelLoadError:
        """The named error for replica ``r`` (engine, replica, port, what happened, its log's end)."""
        return ModelLoadError(
            f"{self.engine} replica {r.index} (port {r.port}, GPUs {','.join(r.gpus) or 'none'}) {what}; "
            f"the servers were stopped. Last lines of {r.log}:\n{log_tail(r.log)}"
        )

    # --- stop --------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every server (SIGTERM to its group, ``grace_s``, SIGKILL), remove the record, restore SIGTERM."""
        procs = [r.proc for r in self.replicas if r.proc is not None]
        try:
            end_groups([p.pid for p in procs], self.grace_s, procs)
            self.record.clear()
        finally:
            self._restore_sigterm()

    def _catch_sigterm(self) -> None:
        """While the servers run, SIGTERM raises ``SystemExit(143)`` in the main thread, so they are stopped."""
        if threading.current_thread() is not threading.main_thread():
            return

        def terminated(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)

        self._old_sigterm = signal.signal(signal.SIGTERM, terminated)

    def _restore_sigterm(self) -> None:
        if self._old_sigterm is not None:
            signal.signal(signal.SIGTERM, self._old_sigterm)
            self._old_sigterm = None

    def __enter__(self) -> EngineLaunch:
        if self.started_at is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what the run cards record -----------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """``engine`` (keyed: engine, version, model, flags that change numbers) and ``engine_launch`` (unkeyed:
        replicas, their GPUs and logs, when they started)."""
        return {
            "engine": {
                "name": self.engine,
                "version": self.version,
                "model": self.model,
                "flags": recorded_flags(self.flags),
            },
            "engine_launch": {
                "replicas": len(self.replicas),
                "gpus": [",".join(r.gpus) for r in self.replicas],
                "logs": [str(r.log) for r in self.replicas],
                "started": self.started_at,
            },
        }

    def environment(self) -> dict[str, str]:
        """:data:`ENGINE_ENV` for the notebooks' kernels: the record :func:`.engines.launched_identity` reads."""
        return {ENGINE_ENV: json.dumps({"model_id": self.name, "base_urls": self.base_urls, **self.identity()})}


def launch_servers(
    engine: str,
    model: str,
    *,
    tp: int = 1,
    replicas: int | None = None,
    extra_args: Sequence[str] = (),
    logs_dir: str | Path,
    deadline_s: float = DEFAULT_DEADLINE_S,
    loglikelihood: bool = True,
    prefix_caching: bool | None = None,
    grace_s: float = DEFAULT_GRACE_S,
) -> EngineLaunch:
    """Start the servers (:class:`EngineLaunch`, arguments as there) and return the launch; use it as a context
    manager (or call ``stop()``) so that they are stopped."""
    return EngineLaunch(
        engine,
        model,
        tp=tp,
        replicas=replicas,
        extra_args=extra_args,
        logs_dir=logs_dir,
        deadline_s=deadline_s,
        loglikelihood=loglikelihood,
        prefix_caching=prefix_caching,
        grace_s=grace_s,
    ).start()

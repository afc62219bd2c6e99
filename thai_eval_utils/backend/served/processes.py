"""The server processes a launch started: each in its own process group (so a vLLM server and the workers it
spawns are ended together), recorded in ``<outputs>/servers/running.json`` while they run, ended with SIGTERM to
the group, a grace period, then SIGKILL.

The record names the launching process (pid and start time) and, per server, its pid, process group, start
time, command, port and log. A clean stop removes it. A record whose launcher no longer runs (``kill -9`` of
thai-eval leaves its servers running, holding GPUs) is read by the next launch, which ends those groups first.
Start times (Linux: ``/proc/<pid>/stat``) guard against ending a process that merely reuses a recorded pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.core.run_files import write_json_atomic

RECORD_NAME = "running.json"


def _stat(pid: int) -> list[str] | None:
    """Fields 3.. of ``/proc/<pid>/stat`` (state, ppid, pgrp, ...), None when there is no such process (or no /proc)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (None: gone, or not Linux)."""
    fields = _stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def alive(pid: int, ticks: int | None = None) -> bool:
    """Whether ``pid`` runs (not a zombie) and, when ``ticks`` is given and known, started then."""
    fields = _stat(pid)
    if fields is None:
        if Path("/proc/self/stat").exists():
            return False
        try:  # no /proc: signal 0 says whether the pid exists
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    if fields[0] in ("Z", "X"):
        return False
    return ticks is None or int(fields[19]) == ticks


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    if not Path("/proc/self/stat").exists():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


def _signal_group(pgid: int, sig: int) -> None:
    """``killpg`` that ignores a group already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def end_groups(pgids: Sequence[int], grace_s: float, procs: Sequence[Any] = ()) -> None:
    """SIGTERM to every group, wait up to ``grace_s`` for them to empty, SIGKILL what is left; ``procs``: the
    ``Popen`` objects of this process's own servers, reaped here (so no zombie is left behind)."""
    for pgid in pgids:
        _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(group_members(g) for g in pgids):
        for p in procs:
            p.poll()
        time.sleep(0.1)
    for pgid in pgids:
        if group_members(pgid):
            _signal_group(pgid, signal.SIGKILL)
    for p in procs:
        with contextlib.suppress(Exception):
            p.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(group_members(g) for g in pgids):
        time.sleep(0.1)


@dataclass
class ServerProcess:
    """One started server as the record holds it."""

    pid: int
    pgid: int
    start_ticks: int | None
    command: list[str]
    port: int
    started: str
    log: str


class RunningRecord:
    """``<logs_dir>/running.json``: the launcher (this process) and the servers it started."""

    def __init__(self, logs_dir: str | Path) -> None:
        self.path = Path(logs_dir) / RECORD_NAME
        self.servers: list[ServerProcess] = []

    def add(self, server: ServerProcess) -> None:
        """Record a started server (written at once: a ``kill -9`` right after still leaves it recorded)."""
        self.servers.append(server)
        self._write()

    def remove(self, pid: int) -> None:
        """Forget a server that is gone (a replica replaced after a failed start)."""
        self.servers = [s for s in self.servers if s.pid != pid]
        self._write()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            self.path,
            {
                "launcher_pid": os.getpid(),
                "launcher_start_ticks": start_ticks(os.getpid()),
                "servers": [asdict(s) for s in self.servers],
            },
        )

    def clear(self) -> None:
        """Remove the record (a clean stop), if it is this process's."""
        with contextlib.suppress(OSError, ValueError):
            if json.loads(self.path.read_text()).get("launcher_pid") == os.getpid():
                self.path.unlink()
        self.servers = []


def end_orphans(logs_dir: str | Path, grace_s: float) -> list[int]:
    """End the servers recorded in ``<logs_dir>/running.json`` by a launcher that no longer runs; returns their
    pids (and says so on stderr). ModelLoadError when a running thai-eval owns the record."""
    path = Path(logs_dir) / RECORD_NAME
    try:
        record: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        path.unlink(missing_ok=True)  # half a record (cannot happen with atomic writes): nothing to act on
        return []
    owner = int(record.get("launcher_pid", -1))
    if owner != os.getpid() and owner > 0 and alive(owner, record.get("launcher_start_ticks")):
        raise ModelLoadError(
            f"{path} lists servers of a thai-eval that is still running (pid {owner}); wait for it "
            "to finish or give this run another --outputs folder"
        )
    found = [s for s in record.get("servers", []) if _still_ours(s)]
    if found:
        end_groups([int(s["pgid"]) for s in found], grace_s)
        print(
            f"thai-eval: ended {len(found)} server(s) left running by an earlier thai-eval (pid {owner}) that no "
            f"longer runs: pids {', '.join(str(s['pid']) for s in found)} ({path})",
            file=sys.stderr,
        )
    path.unlink(missing_ok=True)
    return [int(s["pid"]) for s in found]


def _still_ours(server: dict[str, Any]) -> bool:
    """Whether a recorded server's group still has processes of that server: its leader (same start time), or,
    with the leader gone, members left in the group (a group id is not reused while it has members)."""
    pid, pgid = int(server["pid"]), int(server["pgid"])
    if alive(pid):
        return alive(pid, server.get("start_ticks"))
    return bool(group_members(pgid))

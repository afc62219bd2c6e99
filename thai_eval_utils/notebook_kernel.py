"""The Jupyter kernel manager the batch notebooks run under (``notebook_exec.execute`` gives it to
papermill): kernels talk to papermill over IPC (Unix domain sockets in Jupyter's private runtime folder) instead of
loopback TCP, so ipykernel (7+) no longer prints ``[IPKernelApp] WARNING | Kernel is running over TCP without
encryption ...`` for every notebook of ``make demo``.

The warning is ipykernel's (``ipykernel/kernelapp.py``, ``init_sockets``), printed by the kernel process on its
own stderr, so no logger or filter of this process can drop it; giving the kernel the transport it recommends
removes its cause: IPC sockets are files only their owner can reach, unlike a TCP port on localhost.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir

#: A Unix socket's path must fit ``sockaddr_un.sun_path``: 108 bytes on Linux, 104 on macOS; ``-ipc-<port>`` is
#: added to the base path (ports are small numbers for IPC).
MAX_SOCKET_PATH = 100


def ipc_connection_file(runtime_dir: str | Path | None = None) -> Path | None:
    """A new kernel connection file in Jupyter's runtime folder, whose IPC sockets will sit beside it
    (``<file stem>-ipc-<n>``, jupyter_client's naming); None where IPC cannot be used (not POSIX, or the
    sockets' paths would be too long), so the kernel keeps TCP."""
    if os.name != "posix":
        return None
    folder = Path(runtime_dir or jupyter_runtime_dir())
    path = folder / f"kernel-thai-eval-{uuid.uuid4().hex[:12]}.json"
    if len(os.fsencode(path.with_suffix(""))) + len("-ipc-65535") > MAX_SOCKET_PATH:
        return None
    return path


class IpcKernelManager(AsyncKernelManager):
    """nbclient's default kernel manager, with the IPC transport where :func:`ipc_connection_file` allows it
    (jupyter_client removes the connection file and the sockets when the kernel shuts down)."""

    def __init__(self, **kwargs: Any) -> None:
        connection_file = None if "transport" in kwargs else ipc_connection_file()
        if connection_file is not None:
            connection_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            kwargs.update(transport="ipc", connection_file=str(connection_file))
        super().__init__(**kwargs)

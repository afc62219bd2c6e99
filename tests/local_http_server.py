"""The scaffold both fake OpenAI-compatible servers share: a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (a free
port; loopback only) served from a daemon thread while the ``with`` block lasts; the request handler reaches the
fake through ``self.server.fake``."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ServerWithFake(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the load tests open up to 64 connections at once
    fake: Any


class LocalHTTPServer:
    """``with Subclass(...) as srv: ... srv.base_url ...``: subclasses call ``super().__init__(handler)``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = ServerWithFake(("127.0.0.1", 0), handler)
        self._httpd.fake = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        #: set when the ``with`` block ends: a handler holding a reply back (a fault) gives up at once
        self.stopping = threading.Event()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

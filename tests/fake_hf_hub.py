"""A local stand-in for the Hugging Face Hub that the real ``huggingface_hub`` client talks to, for tests of downloads
with no internet: :class:`FakeHub` (dataset repos with commits, branches and tags, served on 127.0.0.1 only; the
``fake_hub`` pytest fixture in ``conftest.py`` starts one per test), :func:`hub_client_at` / :func:`hub_client_env`
(point a client, in this process or in a subprocess, at it) and :func:`make_git_repo` (a local git source).

What the client (huggingface_hub 2.4.0) asks and the hub answers:

- ``HEAD|GET /datasets/{owner}/{name}/resolve/{revision}/{path}``: ``X-Repo-Commit`` (the commit the revision names),
  ``ETag`` (the git blob sha1; an LFS file's ETag and ``X-Linked-Etag`` are its sha256, with ``X-Linked-Size``),
  ``Content-Length``, ``Accept-Ranges: bytes``; a GET with ``Range: bytes=a-b`` / ``a-`` / ``-n`` gets 206 and
  ``Content-Range``. No ``X-Xet-Hash`` is ever sent, so the client downloads over plain HTTP, never Xet. The client
  names the blob in its cache after the ETag.
- ``GET /api/datasets/{owner}/{name}[/revision/{revision}]``: ``sha`` and ``siblings`` (``snapshot_download`` at a
  branch or tag resolves it here); ``GET /api/datasets/{owner}/{name}/tree/{revision}[/{path}]?recursive=``: the
  file and folder entries (``snapshot_download`` lists a commit here).
- Errors carry ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``) as the Hub's do, so the
  client raises its own typed errors.

Faults: :meth:`FakeHub.cut_next_download` closes the connection part way through a file's body and
:meth:`FakeHub.tamper` serves other bytes than a commit holds (the metadata still describes the commit's bytes).
huggingface_hub 2.4.0 resumes a cut body itself, inside the same ``hf_hub_download`` call: after a 1 s sleep, with a
``Range: bytes=<kept>-`` GET, where <kept> counts only the whole chunks it wrote (``constants.DOWNLOAD_CHUNK_SIZE``,
10 MiB: a cut in a smaller file is retried from byte 0, without a Range; patch the constant smaller to see one).
After 5 resumes in a row that wrote no whole chunk it raises ``httpx2.RemoteProtocolError``, deletes its partial file
(the next call downloads the whole file again), but has already pointed the cache's ``refs/<branch>`` at the new
commit. Every request is kept in :attr:`FakeHub.requests` (method, path) and :attr:`FakeHub.log` (with headers).

(Over 400 lines: the hub, the client settings that point at it and the git source are one test helper.)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

from local_http_server import LocalHTTPServer, ServerWithFake

#: Environment variables a client must not inherit: a token, another cache, the staging hub.
_UNSET_FOR_CLIENT = (
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HF_OIDC_RESOURCE",
    "HF_OIDC_ID_TOKEN",
    "HUGGINGFACE_HUB_CACHE",
    "HUGGINGFACE_ASSETS_CACHE",
    "HF_ASSETS_CACHE",
    "HF_XET_CACHE",
    "HUGGINGFACE_CO_STAGING",
    "HF_HUB_ENABLE_HF_TRANSFER",
)
_TIMESTAMP = "2026-01-01T00:00:00.000Z"


def _git_blob_sha1(data: bytes) -> str:
    """The object id git gives a file with these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class HubFile:
    """One file of a commit; an LFS file is identified by its sha256, a plain one by its git blob sha1."""

    data: bytes
    lfs: bool = False

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def pointer(self) -> bytes:
        """The LFS pointer file git stores in place of an LFS file's bytes."""
        return (
            f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {len(self.data)}\n"
        ).encode()

    @property
    def etag(self) -> str:
        """What the hub's ETag says (the name of the blob in the client's cache)."""
        return self.sha256 if self.lfs else _git_blob_sha1(self.data)

    def tree_entry(self, path: str) -> dict[str, Any]:
        """The file's entry in ``/tree`` listings."""
        entry: dict[str, Any] = {
            "type": "file",
            "path": path,
            "size": len(self.data),
            "oid": _git_blob_sha1(self.pointer if self.lfs else self.data),
        }
        if self.lfs:
            entry["lfs"] = {"oid": self.sha256, "size": len(self.data), "pointerSize": len(self.pointer)}
        return entry


@dataclass
class HubRepo:
    """A dataset repo: its commits (sha -> path -> file) and refs (branch or tag name -> sha)."""

    commits: dict[str, dict[str, HubFile]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)

    def resolve(self, revision: str) -> str | None:
        """The commit sha a revision (full sha, branch or tag) names, or None."""
        return revision if revision in self.commits else self.refs.get(revision)


class Seen(NamedTuple):
    """One request the hub received: the path is unquoted, without its query; header names are lower case;
    ``file``: the path in the repo of the file a ``/resolve/`` request asks for, else None."""

    method: str
    path: str
    headers: dict[str, str]
    file: str | None

    @property
    def range(self) -> str | None:
        return self.headers.get("range")


class FakeHub(LocalHTTPServer):
    """``with FakeHub() as hub: sha = hub.add_dataset("owner/name", {"a.jsonl": b"..."}) ... hub.endpoint``."""

    def __init__(self) -> None:
        super().__init__(_HubHandler)
        self.repos: dict[str, HubRepo] = {}
        #: (method, unquoted path without query) of every request, in order
        self.requests: list[tuple[str, str]] = []
        self.log: list[Seen] = []
        #: set by the ``fake_hub`` fixture: the client's HF_HOME (its hub cache is ``hf_home / "hub"``)
        self.hf_home: Path | None = None
        self._cuts: dict[str, list[int]] = {}
        self._tampered: dict[tuple[str, str, str], bytes] = {}
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        """The value for ``HF_ENDPOINT``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def cache_dir(self) -> Path:
        """The client's hub cache (``HF_HUB_CACHE``) under :attr:`hf_home`."""
        assert self.hf_home is not None, "hf_home is set by the fake_hub fixture or by hand"
        return self.hf_home / "hub"

    def start(self) -> FakeHub:
        return self.__enter__()

    def stop(self) -> None:
        self.__exit__(None, None, None)

    def add_dataset(
        self,
        repo_id: str,
        files: dict[str, bytes],
        *,
        tag: str | None = None,
        branch: str = "main",
        lfs: Iterable[str] = (),
    ) -> str:
        """A new commit of dataset ``repo_id`` (``owner/name``) holding exactly ``files``, on top of ``branch``
        (which then points to it), tagged ``tag`` if given; the paths in ``lfs`` are served as LFS files. Returns
        its sha, a function of the repo, the parent commit, the commit count and the files."""
        if repo_id.count("/") != 1:
            raise ValueError(f"repo_id must be 'owner/name', got {repo_id!r}")
        lfs_paths = set(lfs)
        with self._lock:
            repo = self.repos.setdefault(repo_id, HubRepo())
            snapshot = {path: HubFile(bytes(data), path in lfs_paths) for path, data in files.items()}
            listing = "".join(f"{p}\0{f.etag}\n" for p, f in sorted(snapshot.items()))
            seed = f"{repo_id}\n{repo.refs.get(branch, '')}\n{len(repo.commits)}\n{listing}"
            sha = hashlib.sha1(seed.encode()).hexdigest()
            repo.commits[sha] = snapshot
            repo.refs[branch] = sha
            if tag is not None:
                repo.refs[tag] = sha
        return sha

    def cut_next_download(self, path: str, after_bytes: int, times: int = 1) -> None:
        """The next ``times`` GETs of a file at ``path`` (any repo, any revision) each send their headers and the
        first ``after_bytes`` bytes of their body, then close the connection."""
        with self._lock:
            self._cuts.setdefault(path, []).extend([after_bytes] * times)

    def tamper(self, repo_id: str, commit: str, path: str, new_bytes: bytes) -> None:
        """GETs of ``path`` at ``commit`` (a sha, branch or tag, resolved now) serve ``new_bytes`` from now on; the
        HEAD and listings keep the commit's size and ETag, as a corrupted mirror or CDN would."""
        sha = self.repos[repo_id].resolve(commit)
        if sha is None or path not in self.repos[repo_id].commits[sha]:
            raise KeyError(f"{repo_id}@{commit} has no {path!r}")
        with self._lock:
            self._tampered[(repo_id, sha, path)] = bytes(new_bytes)

    def downloads(self, path: str) -> list[Seen]:
        """The GETs of a file at ``path`` (any repo, any revision), in order."""
        return [s for s in self.log if s.method == "GET" and s.file == path]

    def subprocess_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """A whole environment (``base``, by default this process's) for a subprocess whose huggingface_hub must
        use this hub and :attr:`hf_home`."""
        assert self.hf_home is not None, "hf_home is set by the fake_hub fixture or by hand"
        env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _UNSET_FOR_CLIENT}
        return {**env, **hub_client_env(self.endpoint, self.hf_home)}

    def _record(self, method: str, raw_path: str, headers: Any) -> None:
        parts = urlsplit(raw_path).path.split("/")
        file = unquote("/".join(parts[6:])) if _is_resolve(parts) else None
        seen = Seen(method, unquote("/".join(parts)), {k.lower(): v for k, v in headers.items()}, file)
        with self._lock:
            self.requests.append((seen.method, seen.path))
            self.log.append(seen)

    def _take_cut(self, path: str) -> int | None:
        with self._lock:
            cuts = self._cuts.get(path)
            return cuts.pop(0) if cuts else None

    def _body(self, repo_id: str, sha: str, path: str) -> bytes:
        with self._lock:
            tampered = self._tampered.get((repo_id, sha, path))
        return self.repos[repo_id].commits[sha][path].data if tampered is None else tampered


def _is_resolve(parts: list[str]) -> bool:
    """Whether a (still quoted) path split at "/" is ``/datasets/{owner}/{name}/resolve/{revision}/{path}``."""
    return len(parts) >= 7 and parts[1] == "datasets" and parts[4] == "resolve"


def _byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(first, end) of a single ``bytes=`` range over ``size`` bytes, None to serve them all (no range, or several);
    ValueError when it cannot be satisfied."""
    if not header or "," in header or not header.strip().startswith("bytes="):
        return None
    first, _, last = header.strip()[len("bytes=") :].partition("-")
    if not first:  # the last n bytes
        start, end = max(size - int(last), 0), size
    else:
        start, end = int(first), min(int(last) + 1, size) if last else size
    if start >= end:
        raise ValueError(header)
    return start, end


class _HubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects
    server: ServerWithFake

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_HEAD(self) -> None:
        self._route(head=True)

    def do_GET(self) -> None:
        self._route(head=False)

    def _route(self, head: bool) -> None:
        hub: FakeHub = self.server.fake
        hub._record(self.command, self.path, self.headers)
        split = urlsplit(self.path)
        parts = split.path.split("/")
        try:
            if _is_resolve(parts):
                self._resolve(f"{parts[2]}/{parts[3]}", unquote(parts[5]), unquote("/".join(parts[6:])), head)
            elif len(parts) >= 5 and parts[1:3] == ["api", "datasets"]:
                self._api(f"{parts[3]}/{parts[4]}", [unquote(p) for p in parts[5:]], parse_qs(split.query), head)
            else:
                self._error(404, None, "Not found", head)
        except (BrokenPipeError, ConnectionResetError):  # the client went away
            self.close_connection = True

    def _commit(self, repo_id: str, revision: str, head: bool) -> str | None:
        """The sha ``revision`` names in ``repo_id``; None after answering 404 when there is none."""
        repo = self.server.fake.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found", head)
            return None
        sha = repo.resolve(revision)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
        return sha

    def _resolve(self, repo_id: str, revision: str, path: str, head: bool) -> None:
        hub: FakeHub = self.server.fake
        sha = self._commit(repo_id, revision, head)
        if sha is None:
            return
        file = hub.repos[repo_id].commits[sha].get(path)
        if file is None:
            self._error(404, "EntryNotFound", f"{path} does not exist at {sha}", head, {"X-Repo-Commit": sha})
            return
        headers = {
            "X-Repo-Commit": sha,
            "ETag": f'"{file.etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if file.lfs:
            headers |= {"X-Linked-Etag": f'"{file.sha256}"', "X-Linked-Size": str(len(file.data))}
        if head:
            self._reply(200, headers | {"Content-Length": str(len(file.data))}, b"", head=True)
            return
        body = hub._body(repo_id, sha, path)
        try:
            span = _byte_range(self.headers.get("Range"), len(body))
        except ValueError:
            self._reply(416, {"Content-Range": f"bytes */{len(body)}", "Content-Length": "0"}, b"", head=False)
            return
        status = 200
        if span is not None:
            status, headers["Content-Range"] = 206, f"bytes {span[0]}-{span[1] - 1}/{len(body)}"
            body = body[span[0] : span[1]]
        self._reply(status, headers | {"Content-Length": str(len(body))}, body, False, hub._take_cut(path))

    def _api(self, repo_id: str, rest: list[str], query: dict[str, list[str]], head: bool) -> None:
        if rest[:1] == ["tree"] and len(rest) >= 2:
            sha = self._commit(repo_id, rest[1], head)
            if sha is not None:
                recursive = query.get("recursive", ["False"])[0].lower() in ("true", "1")
                self._json(200, self._tree(repo_id, sha, "/".join(rest[2:]), recursive), head)
        elif rest == [] or (rest[:1] == ["revision"] and len(rest) == 2):
            sha = self._commit(repo_id, rest[1] if rest else "main", head)
            if sha is not None:
                self._json(200, self._info(repo_id, sha), head)
        else:
            self._error(404, None, "Not found", head)

    def _info(self, repo_id: str, sha: str) -> dict[str, Any]:
        """The dataset info the Hub answers ``/api/datasets/{repo}/revision/{rev}`` with."""
        files = self.server.fake.repos[repo_id].commits[sha]
        siblings = [
            {
                "rfilename": p,
                "size": len(f.data),
                "blobId": f.tree_entry(p)["oid"],
                **({"lfs": f.tree_entry(p)["lfs"]} if f.lfs else {}),
            }
            for p, f in sorted(files.items())
        ]
        return {
            "_id": sha[:24],
            "id": repo_id,
            "author": repo_id.split("/")[0],
            "sha": sha,
            "private": False,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "createdAt": _TIMESTAMP,
            "lastModified": _TIMESTAMP,
            "siblings": siblings,
        }

    def _tree(self, repo_id: str, sha: str, under: str, recursive: bool) -> list[dict[str, Any]]:
        """The entries below folder ``under`` ("" for the root): its children, or all its descendants."""
        prefix = f"{under}/" if under else ""
        entries: dict[str, dict[str, Any]] = {}
        for path, file in sorted(self.server.fake.repos[repo_id].commits[sha].items()):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            for depth in range(1, len(parts)):  # the folders on the way
                folder = prefix + "/".join(parts[:depth])
                entries.setdefault(
                    folder,
                    {
                        "type": "directory",
                        "path": folder,
                        "size": 0,
                        "oid": hashlib.sha1(f"{sha}:{folder}".encode()).hexdigest(),
                    },
                )
                if not recursive:
                    break
            if recursive or len(parts) == 1:
                entries[path] = file.tree_entry(path)
        return list(entries.values())

    def _json(self, status: int, payload: Any, head: bool, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._reply(
            status,
            {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})},
            data,
            head,
        )

    def _error(
        self, status: int, code: str | None, message: str, head: bool, headers: dict[str, str] | None = None
    ) -> None:
        extra = {"X-Error-Message": message, **({"X-Error-Code": code} if code else {}), **(headers or {})}
        self._json(status, {"error": message}, head, extra)

    def _reply(self, status: int, headers: dict[str, str], body: bytes, head: bool, cut: int | None = None) -> None:
        """Send a response; ``cut``: send only that many body bytes, then close the connection."""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body if cut is None else body[:cut])
        if cut is not None:
            self.wfile.flush()
            self.close_connection = True


def hub_client_env(endpoint: str, hf_home: Path) -> dict[str, str]:
    """The environment variables that point huggingface_hub at ``endpoint``, online, with its cache under
    ``hf_home`` and no Xet, telemetry, progress bars or proxy. A subprocess also needs the variables in
    ``_UNSET_FOR_CLIENT`` removed (:meth:`FakeHub.subprocess_env` does both)."""
    no_proxy = ",".join(filter(None, ["127.0.0.1,localhost", os.environ.get("NO_PROXY")]))
    return {
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(hf_home),
        "HF_HUB_CACHE": str(hf_home / "hub"),
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }


def _client_attributes(endpoint: str, hf_home: Path) -> list[tuple[Any, str, Any]]:
    """(object, attribute, value): what huggingface_hub read from the environment at import time, as
    :func:`hub_client_env` would have made it."""
    from huggingface_hub import constants, hf_api
    from huggingface_hub.utils import _cache_assets, _cache_manager, _git_credential, _http

    home, cache, assets = str(hf_home), str(hf_home / "hub"), str(hf_home / "assets")
    template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    values = {
        "ENDPOINT": endpoint,
        "HUGGINGFACE_CO_URL_TEMPLATE": template,
        "HF_URL_HOSTS": constants.HF_URL_HOSTS | {urlsplit(endpoint).hostname},
        "HF_HOME": home,
        "HF_HUB_CACHE": cache,
        "HUGGINGFACE_HUB_CACHE": cache,
        "HF_ASSETS_CACHE": assets,
        "HUGGINGFACE_ASSETS_CACHE": assets,
        "HF_XET_CACHE": str(hf_home / "xet"),
        "HF_TOKEN_PATH": str(hf_home / "token"),
        "HF_STORED_TOKENS_PATH": str(hf_home / "stored_tokens"),
        "AGENT_HARNESSES_PATH": str(hf_home / ".agent_harnesses.json"),
        "CHECK_FOR_UPDATE_DONE_PATH": str(hf_home / ".check_for_update_done"),
        "HF_HUB_OFFLINE": False,
        "HF_HUB_DISABLE_XET": True,
        "HF_HUB_DISABLE_TELEMETRY": True,
        "HF_HUB_DISABLE_UPDATE_CHECK": True,
    }
    patches = [(constants, name, value) for name, value in values.items()]
    patches += [
        (_http, "_HUB_ORIGINS", _http._HUB_ORIGINS | {_http._url_origin(endpoint)}),
        (_cache_manager, "HF_HUB_CACHE", cache),
        (_cache_assets, "HF_ASSETS_CACHE", assets),
        (_git_credential, "ENDPOINT", endpoint),
        (hf_api.api, "endpoint", endpoint),
    ]
    cli_auth = sys.modules.get("huggingface_hub.cli.auth")
    return patches + ([(cli_auth, "ENDPOINT", endpoint)] if cli_auth is not None else [])


@contextlib.contextmanager
def _patched(env: dict[str, str | None], attributes: list[tuple[Any, str, Any]]) -> Iterator[None]:
    """Set environment variables (None: unset) and attributes for the block, then put every one back."""
    old_env = {name: os.environ.get(name) for name in env}
    old_attributes = [(obj, name, getattr(obj, name)) for obj, name, _ in attributes]
    try:
        for name, value in env.items():
            _set_env(name, value)
        for obj, name, value in attributes:
            setattr(obj, name, value)
        yield
    finally:
        for obj, name, value in reversed(old_attributes):
            setattr(obj, name, value)
        for name, value in old_env.items():
            _set_env(name, value)


def _set_env(name: str, value: str | None) -> None:
    """Set an environment variable, or unset it (None)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@contextlib.contextmanager
def hub_client_at(endpoint: str, hf_home: Path) -> Iterator[dict[str, str]]:
    """For the block, this process's huggingface_hub (already imported or not) uses ``endpoint`` and a cache under
    ``hf_home``, online: the environment of :func:`hub_client_env` (which subprocesses inherit) and the module
    constants read from it at import. Yields that environment."""
    from huggingface_hub.utils import _http

    env = hub_client_env(endpoint, hf_home)
    _http.close_session()  # a fresh httpx client: no connection kept to an earlier hub, this NO_PROXY read
    try:
        with _patched({**dict.fromkeys(_UNSET_FOR_CLIENT), **env}, _client_attributes(endpoint, hf_home)):
            yield env
    finally:
        _http.close_session()


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """For the block, huggingface_hub is offline (``HF_HUB_OFFLINE=1``): it reads its cache, sends nothing."""
    from huggingface_hub import constants

    with _patched({"HF_HUB_OFFLINE": "1"}, [(constants, "HF_HUB_OFFLINE", True)]):
        yield


def _git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with no global or system configuration; its standard output."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def make_git_repo(path: Path | str, files: dict[str, bytes], message: str = "Test data") -> str:
    """A new commit on ``main`` of the git repo at ``path`` (created if need be) holding exactly ``files``; its sha.
    Clones (``git clone file://...``) may fetch any commit by sha (``uploadpack.allowAnySHA1InWant``)."""
    repo = Path(path)
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q", "-b", "main")
        for key, value in (
            ("user.name", "Fake Hub Tests"),
            ("user.email", "tests@example.invalid"),
            ("commit.gpgsign", "false"),
            ("uploadpack.allowAnySHA1InWant", "true"),
        ):
            _git(repo, "config", key, value)
    for old in filter(None, _git(repo, "ls-files", "-z").split("\0")):
        (repo / old).unlink(missing_ok=True)
    for rel, data in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return _git(repo, "rev-parse", "HEAD").strip()

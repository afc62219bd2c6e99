"""``thai-eval data fetch``: a task's full data downloaded at its pinned revision, checked, and placed where the
suite's loaders read it (``locations.full_root()``), with an origin entry per placed file (``core.data_origin``).

Hugging Face sources download through ``huggingface_hub.snapshot_download`` into the Hugging Face cache (its own
progress bars, resume of an interrupted file, nothing downloaded twice); Git sources through the ``git`` command
into one clone per repository (``git fetch`` of the pinned commit, files read with ``git cat-file``). Downloaded
files are checked against the manifest (SHA-256 and rows where pinned) before anything is placed; placing is one
atomic rename per file, and the origin entries are written after the files, so a fetch killed at any point leaves
every task either placed whole or not recorded, and the next fetch goes on from what is there. A task already
placed at its revision with unchanged files is skipped. Offline (``HF_HUB_OFFLINE=1``, or no network), a fetch
stops at once with the command to run on a machine that has a network.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thai_eval_utils.core.data_origin import read_origin, update_origin
from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError
from thai_eval_utils.core.provenance import now_utc, sha256_file
from thai_eval_utils.sources.locations import full_root, git_clone_dir
from thai_eval_utils.sources.manifest import Source, SourceFile, TaskSource, is_commit
from thai_eval_utils.sources.rows import count_rows

Converter = Callable[[str, Mapping[str, Path], Path], list[Path]]


class OfflineError(ThaiEvalError):
    """No network (or offline mode): nothing can be downloaded here; the message has the command to run where a
    network is."""


@dataclass
class FetchResult:
    """What one task's fetch did: ``status`` is ``fetched`` or ``up to date``; ``files`` the placed files."""

    ref: str
    status: str
    revision: str
    files: list[Path] = field(default_factory=list)


def is_offline() -> bool:
    """Whether downloads are off (``HF_HUB_OFFLINE`` set true)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def fetch_command(refs: Iterable[str], revisions: Mapping[str, str] | None = None) -> str:
    """The command that fetches ``refs`` (with the revision overrides), for messages."""
    extra = "".join(f" --revision {k}={v}" for k, v in (revisions or {}).items())
    return f"HF_HUB_OFFLINE=0 thai-eval data fetch {' '.join(refs)}{extra}"


def offline_error(refs: Iterable[str], revisions: Mapping[str, str] | None = None, why: str = "") -> OfflineError:
    """The error of a fetch that cannot reach its sources, with the exact command to run where a network is."""
    home = full_root().parent
    return OfflineError(
        f"cannot download here{f' ({why})' if why else ' (offline: HF_HUB_OFFLINE=1)'}. On a machine "
        f"with a network run: {fetch_command(refs, revisions)} ; then copy {home} (and the Hugging "
        "Face cache, $HF_HOME) to this machine, or set THAI_EVAL_DATA to where they are"
    )


# ---------------------------------------------------------------------------------------------------- download
def _git(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, check=False, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    )


def _git_checkout(source: Source, revision: str, ref: str) -> tuple[Path, str]:
    """The clone of ``source`` holding ``revision`` (fetched when it does not yet), and the commit it names (a
    branch or tag given with ``--revision`` resolves to the commit fetched, which the origin records)."""
    clone = git_clone_dir(source.url or source.id)
    if not (clone / ".git").is_dir():
        clone.mkdir(parents=True, exist_ok=True)
        for args in (["init", "-q"], ["remote", "add", "origin", source.url or source.id]):
            _git(args, clone)
    if is_commit(revision) and _git(["cat-file", "-e", f"{revision}^{{commit}}"], clone).returncode == 0:
        return clone, revision
    if is_offline():
        raise offline_error([ref], {ref: revision} if revision != source.revision else None)
    done = _git(["fetch", "-q", "--depth", "1", "origin", revision], clone)
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        text = message[-1] if message else "git fetch failed"
        if any(w in text.lower() for w in ("could not resolve host", "unable to access", "connection", "network")):
            raise offline_error([ref], None, why=text)
        raise ThaiEvalDataError(
            f"cannot fetch commit {revision} of {source.id}: {text}", path=source.id, field="revision"
        )
    return clone, _git(["rev-parse", "FETCH_HEAD"], clone).stdout.decode().strip()


def _git_files(
    source: Source, revision: str, files: Iterable[SourceFile], ref: str, scratch: Path
) -> tuple[dict[str, Path], str]:
    """Each manifest file (a pattern: each match) read out of the pinned commit into ``scratch``; and the commit."""
    clone, revision = _git_checkout(source, revision, ref)
    listing = _git(["ls-tree", "-r", "--name-only", revision], clone).stdout.decode().splitlines()
    out: dict[str, Path] = {}
    for f in files:
        matches = fnmatch.filter(listing, f.path) if f.is_pattern else [f.path] if f.path in listing else []
        if not matches:
            raise ThaiEvalDataError(f"not in commit {revision[:12]} of {source.id}", path=f.path, field="path")
        for name in matches:
            blob = _git(["cat-file", "blob", f"{revision}:{name}"], clone)
            target = scratch / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.stdout)
            out[name] = target
    return out, revision


def _hub_files(source: Source, revision: str, files: Iterable[SourceFile], ref: str) -> tuple[dict[str, Path], str]:
    """Each manifest file (a pattern: each match) from the Hugging Face dataset at ``revision`` through the real
    client into its cache; and the commit the snapshot resolved to."""
    import httpx2
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RevisionNotFoundError

    files = list(files)
    try:
        snap = Path(
            snapshot_download(source.id, repo_type="dataset", revision=revision, allow_patterns=[f.path for f in files])
        )
    except RevisionNotFoundError:
        raise ThaiEvalDataError(
            f"dataset {source.id} has no revision {revision}", path=source.id, field="revision"
        ) from None
    except LocalEntryNotFoundError:
        raise offline_error([ref], None, why=f"{source.id} could not be reached") from None
    except (HfHubHTTPError, OSError, httpx2.TransportError) as exc:  # a connection cut after the client's retries
        raise ThaiEvalDataError(
            f"cannot download {source.id}@{revision[:12]}: {type(exc).__name__}: {exc}", path=source.id
        ) from None
    out: dict[str, Path] = {}
    for f in files:
        matches = sorted(
            p.relative_to(snap).as_posix()
            for p in snap.rglob("*")
            if p.is_file() and fnmatch.fnmatch(p.relative_to(snap).as_posix(), f.path)
        )
        if not matches:
            raise ThaiEvalDataError(f"not in {source.id} at {revision[:12]}", path=f.path, field="path")
        out.update({m: snap / m for m in matches})
    return out, snap.name


# ------------------------------------------------------------------------------------------------------- check
def check_downloaded(task: TaskSource, downloaded: Mapping[str, Path], revision: str) -> None:
    """Every downloaded file against the manifest (SHA-256 and rows where pinned), and the task's scored rows;
    the first mismatch is a :class:`ThaiEvalDataError` naming the file as ``<source>@<revision>:<path>`` (the
    download itself is in a scratch folder or the Hugging Face cache, and is not kept)."""
    for f in task.files:
        names = [n for n in downloaded if fnmatch.fnmatch(n, f.path)] if f.is_pattern else [f.path]
        for name in names:
            path, where = downloaded[name], f"{task.source.id}@{revision}:{name}"
            if f.sha256 and (found := sha256_file(path)) != f.sha256:
                raise ThaiEvalDataError(
                    f"SHA-256 {found} is not the pinned {f.sha256} (a changed or tampered file; nothing was placed)",
                    path=where,
                    field="sha256",
                )
            if f.rows is not None and (n := count_rows(path)) != f.rows:
                raise ThaiEvalDataError(f"{n} rows, the manifest pins {f.rows}", path=where, field="rows")


def _check_or_evict(task: TaskSource, downloaded: Mapping[str, Path], revision: str) -> None:
    """:func:`check_downloaded`; Hugging Face files whose bytes are not the pinned ones also leave its cache."""
    try:
        check_downloaded(task, downloaded, revision)
    except ThaiEvalDataError as exc:
        if exc.field == "sha256" and task.source.kind == "huggingface":
            _evict_from_hub_cache(downloaded)
        raise


def _evict_from_hub_cache(downloaded: Mapping[str, Path]) -> None:
    """Remove downloaded files from the Hugging Face cache (each snapshot link and the blob it points to), so that
    the next fetch downloads them again: the client names a blob after the hub's ETag, not after its bytes, and
    would otherwise serve the same wrong bytes from its cache on every later fetch."""
    for path in downloaded.values():
        blob = path.resolve()
        path.unlink(missing_ok=True)
        blob.unlink(missing_ok=True)


# ------------------------------------------------------------------------------------------------------- place
def _place(
    task: TaskSource, downloaded: Mapping[str, Path], folder: Path, converter: Converter | None
) -> dict[Path, str]:
    """Copy (or convert) the downloaded files into the suite's folder, one atomic rename per file; each placed file
    -> the source path it was copied from (all of them, comma-joined, for a converted file)."""
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=folder))
    try:
        written: dict[Path, str] = {}
        if converter is not None:
            every = ",".join(sorted(downloaded))
            written = {Path(p).relative_to(staging): every for p in converter(task.task, downloaded, staging)}
        else:
            for f in task.files:
                names = [n for n in downloaded if fnmatch.fnmatch(n, f.path)] if f.is_pattern else [f.path]
                for name in names:
                    rel = Path(name if f.is_pattern else f.to)
                    (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(downloaded[name], staging / rel)
                    written[rel] = name
        placed: dict[Path, str] = {}
        for rel, name in written.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, folder / rel)
            placed[folder / rel] = name
        return placed
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def up_to_date(task: TaskSource, folder: Path, revision: str | None = None) -> bool:
    """Whether ``task`` is placed in ``folder`` at ``revision`` (default: its pin) with unchanged files."""
    return _up_to_date(task, folder, revision or task.source.revision or "main") is not None


def _up_to_date(task: TaskSource, folder: Path, revision: str) -> list[Path] | None:
    """The task's placed files when every one is recorded at ``revision`` and unchanged since; else None."""
    entries = {
        k: v for k, v in read_origin(folder).items() if v.get("task") == task.task and v.get("suite") == task.suite
    }
    if not entries or any(v.get("revision") != revision for v in entries.values()):
        return None
    paths = [folder / k for k in entries]
    if not all(
        p.is_file() and sha256_file(p) == entries[p.relative_to(folder).as_posix()].get("sha256") for p in paths
    ):
        return None
    return paths


def fetch_task(
    task: TaskSource, folder: Path, *, revision: str | None = None, converter: Converter | None = None
) -> FetchResult:
    """Fetch one task into ``folder`` (the suite's folder under the full data root) at its pinned revision, or at
    ``revision`` (an override, recorded as such). Skips a task already placed at that revision."""
    rev = revision or task.source.revision or "main"
    folder.mkdir(parents=True, exist_ok=True)
    if (done := _up_to_date(task, folder, rev)) is not None:
        return FetchResult(task.ref, "up to date", rev, done)
    if task.convert and converter is None:
        raise ThaiEvalDataError(
            f"the manifest names converter {task.convert!r}, which suite {task.suite} does not have",
            path=task.ref,
            field="convert",
        )
    if task.source.kind == "huggingface" and is_offline():
        raise offline_error([task.ref], {task.ref: rev} if revision else None)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=folder) as scratch:
        if task.source.kind == "git":
            downloaded, resolved = _git_files(task.source, rev, task.files, task.ref, Path(scratch))
        else:
            downloaded, resolved = _hub_files(task.source, rev, task.files, task.ref)
        if revision is None:  # an overridden revision has no pinned hashes to match
            _check_or_evict(task, downloaded, resolved)
        placed = _place(task, downloaded, folder, converter)
        raw = {name: sha256_file(p) for name, p in downloaded.items()}
    stamp = now_utc()
    stale = [
        k
        for k, v in read_origin(folder).items()
        if v.get("task") == task.task and v.get("suite") == task.suite and folder / k not in placed
    ]  # files of an earlier fetch at another revision that this one lacks
    update_origin(
        folder,
        {
            p.relative_to(folder).as_posix(): _entry(task, rev, resolved, name, raw, p, stamp)
            for p, name in placed.items()
        },
        drop=stale,
    )
    for rel in stale:
        (folder / rel).unlink(missing_ok=True)
    return FetchResult(task.ref, "fetched", rev, list(placed))


def _entry(
    task: TaskSource, revision: str, resolved: str, name: str, raw: Mapping[str, str], placed: Path, stamp: str
) -> dict[str, Any]:
    """A placed file's origin entry (``core.data_origin``)."""
    return {
        "suite": task.suite,
        "task": task.task,
        "kind": task.source.kind,
        "source": task.source.id,
        "revision": revision,
        "pinned": revision == task.source.revision,
        "resolved_revision": resolved,
        "path": name,
        "source_sha256": {n: raw[n] for n in name.split(",")},
        "sha256": sha256_file(placed),
        "rows": count_rows(placed),
        "licence": task.source.licence,
        "fetched_at": stamp,
    }

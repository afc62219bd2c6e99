"""A suite's data manifest: where each task's full data set is, pinned (``<suite package>/data_manifest.json``).

The manifest is data, not code, kept beside the suite's ``suite.py`` (``Suite.data_manifest``)::

    {"format": 1, "suite": "dialect",
     "sources": {"thai_local_benchmark": {"kind": "git", "id": "https://github.com/mrpeerat/Thai_local_benchmark",
                                          "revision": "<40-hex commit>", "licence": "none stated", "why": "..."}},
     "tasks": {"generation": {"source": "thai_local_benchmark", "rows": 400, "convert": "dialect_pickle",
                              "loader": "thai_eval_utils.dialect.data.load_dialect",
                              "files": [{"path": "datasets/dataset.pkl", "sha256": "<hex>", "rows": null}]}}}

A source is a Hugging Face dataset (``kind: "huggingface"``, ``id`` the repo id) or a Git repository (``kind:
"git"``, ``id`` its URL); ``revision`` is a full commit hash (a branch or tag moves, so it is refused as a pin), or
null where no pin could be found (``why`` must say so): the fetch then takes the default branch and records the
commit it resolved to, and every run card names that commit.
A file entry: ``path`` in the source (``*`` globs allowed where the source's file names are not known here),
``to`` (where it is placed under the suite's data folder; default ``path``; ignored with ``convert``),
``sha256`` and ``rows`` (null where they could not be checked against the real file: ``docs/data.md`` says which),
``role`` (``scored``, ``fewshot`` or ``source``). A task's ``rows`` is what the anchor scores.
Every field is checked on load; a wrong one is a :class:`ThaiEvalDataError` naming the file and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from thai_eval_utils.core.errors import ThaiEvalDataError

MANIFEST_FORMAT = 1
SourceKind = Literal["huggingface", "git"]
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ROLES = ("scored", "fewshot", "source")


def is_commit(revision: str) -> bool:
    """Whether ``revision`` is a full 40-hex commit hash (a pin; a branch or tag moves)."""
    return bool(_COMMIT.match(revision))


@dataclass(frozen=True)
class Source:
    """Where files come from: a Hugging Face dataset or a Git repository at a pinned commit."""

    name: str
    kind: SourceKind
    id: str
    revision: str | None
    licence: str
    why: str = ""
    url: str = ""

    @property
    def short(self) -> str:
        """``id@revision`` with the revision cut to 12 characters (tables); ``id@main`` for an unpinned source."""
        return f"{self.id}@{self.revision[:12] if self.revision else 'main (unpinned)'}"


@dataclass(frozen=True)
class SourceFile:
    """One file of a task in its source, and where it goes under the suite's data folder."""

    path: str
    to: str
    sha256: str | None
    rows: int | None
    role: str

    @property
    def is_pattern(self) -> bool:
        return any(c in self.path for c in "*?[")


@dataclass(frozen=True)
class TaskSource:
    """A task's full data: its source, files, the rows the anchor scores, the converter and loader."""

    suite: str
    task: str
    source: Source
    files: tuple[SourceFile, ...]
    rows: int | None
    convert: str | None
    loader: str
    note: str = ""

    @property
    def ref(self) -> str:
        """``suite/task`` (what ``thai-eval data fetch`` takes)."""
        return f"{self.suite}/{self.task}"


@dataclass(frozen=True)
class DataManifest:
    """A suite's manifest: its sources and tasks, from :attr:`path`."""

    suite: str
    path: Path
    sources: Mapping[str, Source]
    tasks: Mapping[str, TaskSource]
    note: str = ""


def _field(
    obj: Mapping[str, Any], name: str, kind: type | tuple[type, ...], path: Path, where: str, *, optional: bool = False
) -> Any:
    """``obj[name]`` checked for its type; a named error otherwise (``where``: the field's place in the file)."""
    if name not in obj or obj[name] is None:
        if optional:
            return None
        raise ThaiEvalDataError(f"missing {name!r}", path=path, field=f"{where}.{name}")
    value = obj[name]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        names = " or ".join(t.__name__ for t in (kind if isinstance(kind, tuple) else (kind,)))
        raise ThaiEvalDataError(
            f"expected {names}, found {json.dumps(value, ensure_ascii=False)[:60]}", path=path, field=f"{where}.{name}"
        )
    return value


def _source(name: str, raw: Any, path: Path) -> Source:
    where = f"sources.{name}"
    if not isinstance(raw, Mapping):
        raise ThaiEvalDataError("a source must be an object", path=path, field=where)
    kind = _field(raw, "kind", str, path, where)
    if kind not in ("huggingface", "git"):
        raise ThaiEvalDataError(
            f"kind must be 'huggingface' or 'git', found {kind!r}", path=path, field=f"{where}.kind"
        )
    revision = _field(raw, "revision", str, path, where, optional=True)
    if revision is None:  # no pin could be found: the fetch resolves the default branch once and records it
        if not _field(raw, "why", str, path, where, optional=True):
            raise ThaiEvalDataError("an unpinned source must say why in 'why'", path=path, field=f"{where}.why")
    elif not _COMMIT.match(revision):
        raise ThaiEvalDataError(
            f"revision must be a full 40-hex commit hash (a branch or tag moves), found {revision!r}",
            path=path,
            field=f"{where}.revision",
        )
    return Source(
        name,
        kind,
        _field(raw, "id", str, path, where),
        revision,
        _field(raw, "licence", str, path, where),
        _field(raw, "why", str, path, where, optional=True) or "",
        _field(raw, "url", str, path, where, optional=True) or "",
    )


def _file(raw: Any, path: Path, where: str, convert: str | None) -> SourceFile:
    if not isinstance(raw, Mapping):
        raise ThaiEvalDataError("a file entry must be an object", path=path, field=where)
    src = _field(raw, "path", str, path, where)
    to = _field(raw, "to", str, path, where, optional=True) or src
    if Path(to).is_absolute() or ".." in Path(to).parts or Path(src).is_absolute() or ".." in Path(src).parts:
        raise ThaiEvalDataError(
            f"paths must stay inside their folder, found {src!r} -> {to!r}", path=path, field=f"{where}.path"
        )
    sha = _field(raw, "sha256", str, path, where, optional=True)
    if sha is not None and not _SHA256.match(sha):
        raise ThaiEvalDataError(
            f"sha256 must be 64 lower-case hex digits, found {sha!r}", path=path, field=f"{where}.sha256"
        )
    rows = _field(raw, "rows", int, path, where, optional=True)
    if rows is not None and rows < 0:
        raise ThaiEvalDataError(f"rows must be >= 0, found {rows}", path=path, field=f"{where}.rows")
    role = _field(raw, "role", str, path, where, optional=True) or "scored"
    if role not in _ROLES:
        raise ThaiEvalDataError(
            f"role must be one of {', '.join(_ROLES)}, found {role!r}", path=path, field=f"{where}.role"
        )
    if any(c in to for c in "*?[") and convert is None and to != src:
        raise ThaiEvalDataError(
            "a pattern is placed under its own names: leave 'to' out", path=path, field=f"{where}.to"
        )
    return SourceFile(src, to, sha, rows, role)


def _task(suite: str, name: str, raw: Any, sources: Mapping[str, Source], path: Path) -> TaskSource:
    where = f"tasks.{name}"
    if not isinstance(raw, Mapping):
        raise ThaiEvalDataError("a task must be an object", path=path, field=where)
    source_name = _field(raw, "source", str, path, where)
    if source_name not in sources:
        raise ThaiEvalDataError(
            f"unknown source {source_name!r} (sources: {', '.join(sources)})", path=path, field=f"{where}.source"
        )
    convert = _field(raw, "convert", str, path, where, optional=True)
    files_raw = _field(raw, "files", list, path, where)
    if not files_raw:
        raise ThaiEvalDataError("a task needs at least one file", path=path, field=f"{where}.files")
    files = tuple(_file(f, path, f"{where}.files[{i}]", convert) for i, f in enumerate(files_raw))
    rows = _field(raw, "rows", int, path, where, optional=True)
    return TaskSource(
        suite,
        name,
        sources[source_name],
        files,
        rows,
        convert,
        _field(raw, "loader", str, path, where),
        _field(raw, "note", str, path, where, optional=True) or "",
    )


def load_manifest(path: str | Path) -> DataManifest:
    """A suite's manifest read and checked whole (every field's type, pins, hashes, paths, sources named)."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ThaiEvalDataError(f"cannot read the data manifest ({exc})", path=path) from None
    if not isinstance(raw, Mapping):
        raise ThaiEvalDataError("a data manifest must be a JSON object", path=path)
    version = _field(raw, "format", int, path, "manifest")
    if version != MANIFEST_FORMAT:
        raise ThaiEvalDataError(
            f"unknown manifest format {version} (this thai-eval reads {MANIFEST_FORMAT})", path=path, field="format"
        )
    suite = _field(raw, "suite", str, path, "manifest")
    sources = {n: _source(n, s, path) for n, s in _field(raw, "sources", dict, path, "manifest").items()}
    tasks = {n: _task(suite, n, t, sources, path) for n, t in _field(raw, "tasks", dict, path, "manifest").items()}
    return DataManifest(suite, path, sources, tasks, _field(raw, "note", str, path, "manifest", optional=True) or "")

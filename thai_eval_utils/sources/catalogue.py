"""The registered suites' full data: ``thai-eval data list``, ``fetch`` and ``verify`` over every manifest.

Names no benchmark: each suite says where its manifest is (``Suite.data_manifest``) and which converters it names
(``Suite.data_converters``); this module resolves ``suite`` or ``suite/task`` references against them.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.core.data_origin import ORIGIN_FILE, read_origin
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import sha256_file
from thai_eval_utils.sources.fetch import FetchResult, fetch_command, fetch_task, is_offline, offline_error, up_to_date
from thai_eval_utils.sources.locations import full_root
from thai_eval_utils.sources.manifest import DataManifest, TaskSource, load_manifest
from thai_eval_utils.sources.rows import count_rows


#: A folder of ``<suite>.json`` manifests used instead of the suites' own (a lab's mirror with its own pins; tests).
MANIFESTS_ENV = "THAI_EVAL_MANIFESTS"


def manifest_path(suite: Suite) -> Path | None:
    """The suite's manifest: ``$THAI_EVAL_MANIFESTS/<suite>.json`` when that file exists, else its own."""
    override = os.environ.get(MANIFESTS_ENV)
    if override and (Path(override) / f"{suite.name}.json").is_file():
        return Path(override) / f"{suite.name}.json"
    return suite.data_manifest()


def manifests() -> dict[str, tuple[Suite, DataManifest]]:
    """Every registered suite with a data manifest: suite name -> (suite, manifest)."""
    out = {}
    for name, suite in registry.suites().items():
        path = manifest_path(suite)
        if path is not None:
            manifest = load_manifest(path)
            if manifest.suite != name:
                raise ThaiEvalDataError(
                    f"the manifest is suite {manifest.suite!r}'s, not {name!r}'s", path=path, field="suite"
                )
            out[name] = (suite, manifest)
    return out


def resolve_refs(refs: Sequence[str]) -> list[tuple[Suite, TaskSource]]:
    """``suite`` (every task of its manifest) or ``suite/task`` references, in order; none: every task of every
    manifest. An unknown name is an error listing the known ones."""
    known = manifests()
    picked: list[tuple[Suite, TaskSource]] = []
    for ref in refs or list(known):
        suite_name, _, task = ref.partition("/")
        if suite_name not in known:
            raise ThaiEvalDataError(
                f"no data manifest for {suite_name!r}; suites with full data: {', '.join(known)}", field="suite"
            )
        suite, manifest = known[suite_name]
        if task and task not in manifest.tasks:
            raise ThaiEvalDataError(
                f"{suite_name} has no data task {task!r}; its tasks: {', '.join(manifest.tasks)}",
                path=manifest.path,
                field="task",
            )
        picked += [
            (suite, manifest.tasks[t])
            for t in ([task] if task else manifest.tasks)
            if (suite, manifest.tasks[t]) not in picked
        ]
    return picked


def suite_folder(suite: Suite, root: Path | None = None) -> Path:
    """The suite's folder under the full data root."""
    return (root or full_root()) / suite.data_folder


def _revision_for(task: TaskSource, revisions: Mapping[str, str]) -> str | None:
    """The override for ``suite/task``, else for ``suite``, else None (the pin)."""
    return revisions.get(task.ref) or revisions.get(task.suite)


def fetch(refs: Sequence[str], revisions: Mapping[str, str] | None = None) -> list[FetchResult]:
    """Fetch every referenced task (``thai-eval data fetch``); what each did."""
    revisions = revisions or {}
    picked = resolve_refs(refs)
    pending = [t for s, t in picked if not up_to_date(t, suite_folder(s), _revision_for(t, revisions))]
    if pending and is_offline():  # at once, with one command for everything still to fetch
        raise offline_error([t.ref for t in pending], {k: v for k, v in revisions.items()})
    results = []
    for suite, task in picked:
        converter = suite.data_converters().get(task.convert) if task.convert else None
        results.append(
            fetch_task(task, suite_folder(suite), revision=_revision_for(task, revisions), converter=converter)
        )
    return results


@dataclass(frozen=True)
class Presence:
    """Whether a task's full data is placed: ``state`` is ``present``, ``missing`` or ``other revision``."""

    state: str
    revision: str | None
    files: tuple[Path, ...]


def presence(suite: Suite, task: TaskSource, root: Path | None = None) -> Presence:
    """What the full data root holds of ``task`` (by its origin entries)."""
    folder = suite_folder(suite, root)
    entries = {
        k: v for k, v in read_origin(folder).items() if v.get("task") == task.task and v.get("suite") == task.suite
    }
    if not entries:
        return Presence("missing", None, ())
    revisions = {v.get("resolved_revision") or v.get("revision") for v in entries.values()}
    asked = {v.get("revision") for v in entries.values()}
    state = "present" if asked == {task.source.revision or "main"} else "other revision"
    return Presence(state, ",".join(sorted(r for r in revisions if r)), tuple(folder / k for k in entries))


def list_rows(refs: Sequence[str] = ()) -> list[dict[str, Any]]:
    """``thai-eval data list``: a row per task (suite, task, source, revision, licence, rows, present, where)."""
    rows = []
    for suite, task in resolve_refs(refs):
        here = presence(suite, task)
        rows.append(
            {
                "suite": task.suite,
                "task": task.task,
                "source": task.source.id,
                "revision": (task.source.revision or "unpinned")[:12],
                "licence": task.source.licence[:40],
                "rows": task.rows,
                "present": here.state
                + (f" ({here.revision[:12]})" if here.state == "other revision" and here.revision else ""),
                "where": str(suite_folder(suite)) if here.files else "",
            }
        )
    return rows


def verify(refs: Sequence[str] = (), root: Path | None = None) -> list[str]:
    """``thai-eval data verify``: every placed file of the referenced tasks against its origin entry and the
    manifest (present, SHA-256 unchanged since the fetch, rows as recorded, the pinned revision, the pinned source
    hashes, the task's scored rows); one line per mismatch, naming the file. Empty: all verified."""
    problems: list[str] = []
    for suite, task in resolve_refs(refs):
        folder = suite_folder(suite, root)
        entries = {
            k: v for k, v in read_origin(folder).items() if v.get("task") == task.task and v.get("suite") == task.suite
        }
        if not entries:
            problems.append(
                f"{task.ref}: not fetched ({folder / ORIGIN_FILE} has no entry; thai-eval data fetch {task.ref})"
            )
            continue
        problems += _verify_entries(task, folder, entries)
    return problems


def _verify_entries(task: TaskSource, folder: Path, entries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    problems = []
    pinned = {f.path: f for f in task.files}
    for rel, entry in sorted(entries.items()):
        path = folder / rel
        if not path.is_file():
            problems.append(f"{path}: missing (thai-eval data fetch {task.ref})")
            continue
        if (found := sha256_file(path)) != entry.get("sha256"):
            problems.append(
                f"{path}: SHA-256 {found[:16]}... is not the fetched {str(entry.get('sha256'))[:16]}... "
                f"(changed since the fetch; fetch again: thai-eval data fetch {task.ref})"
            )
        if (rows := count_rows(path)) != entry.get("rows"):
            problems.append(f"{path}: {rows} rows, the fetch recorded {entry.get('rows')}")
        if entry.get("revision") != (task.source.revision or "main"):
            problems.append(
                f"{path}: fetched at revision {entry.get('revision')}, the manifest pins "
                f"{task.source.revision} (an override; runs record it)"
            )
        for name, sha in (entry.get("source_sha256") or {}).items():
            if name in pinned and pinned[name].sha256 and pinned[name].sha256 != sha:
                problems.append(
                    f"{path}: source {name} had SHA-256 {sha[:16]}..., the manifest pins {pinned[name].sha256[:16]}..."
                )
    scored = sum(int(e.get("rows") or 0) for rel, e in entries.items() if _role(task, e) == "scored")
    if task.rows is not None and not task.convert and scored < task.rows:  # more: rows the anchor drops (M3Exam)
        problems.append(
            f"{folder}: {task.ref} holds {scored} scored rows, fewer than the {task.rows} the anchor scores"
        )
    return problems


def _role(task: TaskSource, entry: Mapping[str, Any]) -> str:
    """The manifest role of the file an origin entry was copied from."""
    for f in task.files:
        if fnmatch.fnmatch(str(entry.get("path")), f.path):
            return f.role
    return "source"


def require_present(
    suite: Suite, tasks: Iterable[str], root: Path | None = None, revisions: Mapping[str, str] | None = None
) -> Path:
    """The suite's full data folder for ``thai-eval run --data full``, after checking that every task of the
    suite's manifest that ``tasks`` selects (all when empty) is placed at its pin or at its override; else a
    :class:`ThaiEvalDataError` with the fetch command. Suites without a manifest: their folder as it is."""
    path = manifest_path(suite)
    folder = suite_folder(suite, root)
    if path is None:
        return folder
    manifest = load_manifest(path)
    wanted = [t for t in manifest.tasks.values() if not tasks or t.task in tasks or _covers(t.task, tasks)]
    revisions = revisions or {}
    missing = []
    entries = read_origin(folder)
    for task in wanted or list(manifest.tasks.values()):
        here = presence(suite, task, root)
        asked = _revision_for(task, revisions)
        fetched_at = {v.get("revision") for v in entries.values() if v.get("task") == task.task}
        if (
            here.state == "missing"
            or (asked and fetched_at != {asked})
            or (not asked and here.state == "other revision")
        ):
            missing.append(task.ref)
    if missing:
        raise ThaiEvalDataError(
            f"the full data of {', '.join(missing)} is not fetched here at the revision asked "
            f"for; run: {fetch_command(missing, revisions)}",
            path=folder,
            field="data",
        )
    return folder


def _covers(data_task: str, tasks: Iterable[str]) -> bool:
    """Whether a run of ``tasks`` reads ``data_task`` (a data task may serve several run tasks: a prefix match)."""
    return any(t.startswith(data_task) or data_task.startswith(t) for t in tasks)

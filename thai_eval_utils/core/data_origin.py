"""Where a data file came from: the origin file that ``thai-eval data fetch`` writes beside the files it places.

A fetched suite folder (``<data home>/full/<suite folder>/``) holds :data:`ORIGIN_FILE`, one JSON object keyed by
each placed file's path relative to that folder. Each entry names the source (a Hugging Face dataset id or a Git
repository URL), the revision asked for and the commit it resolved to, the path in the source, the SHA-256 of the
file as placed and of the file as downloaded, its rows, the task and the time. :func:`origins_of` finds the
entries of any data files a run reads, so the results store records them in the run card and keys the run with
the revisions (``core.store.RunStore.open``): a run on another revision is another configuration, never mixed with
older records. Files that no origin file covers (the shipped samples, a user's folder) have no entry, and runs on
them keep the config ids they always had.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.run_files import write_json_atomic

#: The origin file's name in a fetched suite folder.
ORIGIN_FILE = ".thai-eval-origin.json"
#: The fields of an entry that say which data it is (keyed into a run's config id).
KEYED_FIELDS = ("source", "revision", "resolved_revision", "path")


def read_origin(folder: str | Path) -> dict[str, dict[str, Any]]:
    """The origin entries of a fetched folder (relative path -> entry); empty when it has no origin file."""
    path = Path(folder) / ORIGIN_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ThaiEvalDataError(
            f"unreadable origin file ({exc}); fetch the data again (thai-eval data fetch)", path=path
        ) from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ThaiEvalDataError("an origin file must map file paths to entries; fetch the data again", path=path)
    return data


def update_origin(folder: str | Path, entries: Mapping[str, Mapping[str, Any]], drop: Iterable[str] = ()) -> None:
    """Merge ``entries`` (relative path -> entry) into the folder's origin file, less the paths in ``drop``,
    written atomically."""
    gone = set(drop)
    merged = {
        **{k: v for k, v in read_origin(folder).items() if k not in gone},
        **{k: dict(v) for k, v in entries.items()},
    }
    write_json_atomic(Path(folder) / ORIGIN_FILE, dict(sorted(merged.items())))


def _origin_folder(path: Path) -> Path | None:
    """The nearest folder above ``path`` holding an origin file."""
    for parent in path.parents:
        if (parent / ORIGIN_FILE).is_file():
            return parent
    return None


def origins_of(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The origin entries of ``paths`` that lie in a fetched folder, each with its ``file`` (the path as given),
    in the order given; files outside any fetched folder are left out."""
    found: list[dict[str, Any]] = []
    cache: dict[Path, dict[str, dict[str, Any]]] = {}
    for given in paths:
        path = Path(given).resolve()
        folder = _origin_folder(path)
        if folder is None:
            continue
        entries = cache.setdefault(folder, read_origin(folder))
        entry = entries.get(path.relative_to(folder).as_posix())
        if entry is not None:
            found.append({"file": str(given), **entry})
    return found


def keyed_origins(origins: Iterable[Mapping[str, Any]]) -> list[str]:
    """What of ``origins`` keys a run: ``source@resolved revision:path`` per file, sorted (a run card's
    ``data_sources`` gives the same list back, so a stored card is keyed as it was)."""
    return sorted(
        {f"{o.get('source')}@{o.get('resolved_revision') or o.get('revision')}:{o.get('path')}" for o in origins}
    )

"""The suites' full data sets by id and pinned (``thai_eval_utils/sources``, ``thai-eval data list|fetch|verify``,
``thai-eval run --data full``), with no network: the shipped manifests, the manifest checks, the allow-list pickle
reader, a Git source (dialect) and Hugging Face sources (Thai LLM Leaderboard) end to end against local stand-ins
(``tests/fake_hf_hub.py``), the run's refusals, the origin keyed into a run's config id, and one ``thai-eval run
--data full`` in a subprocess.

The manifests' sources are replaced per test through ``THAI_EVAL_MANIFESTS`` (copies of the real manifests with the
stand-ins' commits and hashes), and every fetched file goes under ``THAI_EVAL_DATA`` in the test's folder. Git URLs
``https://github.com/<owner>/<name>.git`` are pointed at local repositories ``<mirror>/<owner>/<name>.git`` through
git's own URL rewriting (``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_0``/``GIT_CONFIG_VALUE_0``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import pickle
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import REPO
from fake_hf_hub import FakeHub, hub_offline, make_git_repo
from huggingface_hub import file_download

from thai_eval_utils.cli import main
from thai_eval_utils.core import registry
from thai_eval_utils.core.data_origin import ORIGIN_FILE, read_origin, update_origin
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import canonical_json
from thai_eval_utils.core.store import UNKEYED_IDENTITY_KEYS, RunStore
from thai_eval_utils.dialect.data import DIALECTS, dialect_pickle_to_jsonl, dialect_tasks, load_dialect
from thai_eval_utils.sources import catalogue
from thai_eval_utils.sources import fetch as fetch_module
from thai_eval_utils.sources.fetch import OfflineError
from thai_eval_utils.sources.manifest import load_manifest
from thai_eval_utils.sources.pickles import (
    ALLOWED_CALLABLES,
    STAND_INS,
    RefusedPickleError,
    read_dataset_dict_pickle,
)

SUITES = ("thai_h6", "thaicli", "dialect", "thai_llm_leaderboard", "seahelm")
DIALECT_URL = "https://github.com/mrpeerat/Thai_local_benchmark.git"
PICKLE = "datasets/dataset.pkl"
NLU_REPO, MT_REPO = "kunato/thaillm-leaderboard-dataset", "ThaiLLM-Leaderboard/mt-bench-thai"
XCOPA, MT_BENCH = "xcopa_tha_seacrowd_qa_test.jsonl", "mt_bench_thai_full.json"
SAMPLES = REPO / "data"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha(path: Path) -> str:
    return _sha(path.read_bytes())


# -------------------------------------------------------------------------------------------------------- environment
@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """``THAI_EVAL_DATA`` and an empty ``THAI_EVAL_MANIFESTS`` folder under ``tmp_path`` (nothing reaches the user's
    cache or the shipped manifests); ``full`` is the fetched data root."""
    data, manifests = tmp_path / "data_home", tmp_path / "manifests"
    manifests.mkdir()
    monkeypatch.setenv("THAI_EVAL_DATA", str(data))
    monkeypatch.setenv("THAI_EVAL_MANIFESTS", str(manifests))
    return types.SimpleNamespace(data=data, manifests=manifests, full=data / "full")


@pytest.fixture
def github_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder standing for https://github.com/: git reads ``<mirror>/<owner>/<name>.git`` for those URLs; online
    (``HF_HUB_OFFLINE=0``: the fetch takes ``HF_HUB_OFFLINE=1`` as no network for Git sources too)."""
    mirror = tmp_path / "github"
    mirror.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.file://{mirror}/.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://github.com/")
    return mirror


def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub waits 1 s before each retry of a cut download: not in these tests."""
    monkeypatch.setattr(file_download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


def _shipped(suite: str) -> dict[str, Any]:
    """A suite's shipped manifest, as raw JSON."""
    return json.loads(registry.suites()[suite].data_manifest().read_text(encoding="utf-8"))


def _write_manifest(folder: Path, suite: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    """``<folder>/<suite>.json``: the shipped manifest with ``edit`` applied (every other field kept)."""
    raw = _shipped(suite)
    edit(raw)
    path = folder / f"{suite}.json"
    path.write_text(json.dumps(raw, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``thai-eval ARGV`` in this process: (exit status, stdout, stderr)."""
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------------------------------------- the shipped manifests
def _import_dotted(name: str) -> Any:
    """The module or attribute a dotted name names (the longest importable module, then attributes)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


@pytest.mark.parametrize("suite_name", SUITES)
def test_every_shipped_suite_has_a_manifest_whose_loaders_converters_and_pins_are_real(suite_name):
    suite = registry.suites()[suite_name]
    manifest = load_manifest(suite.data_manifest())
    raw = _shipped(suite_name)
    assert manifest.suite == suite_name and list(manifest.tasks) == list(raw["tasks"]) and manifest.tasks
    for task in manifest.tasks.values():
        loader = _import_dotted(task.loader)
        assert callable(loader) or isinstance(loader, types.ModuleType), task.loader
        if task.convert is not None:
            assert task.convert in suite.data_converters(), (task.ref, task.convert)
    for source in manifest.sources.values():
        if source.revision is None:
            assert source.why.startswith("no pin found"), source.name  # the fetch records the commit it got
        else:
            assert len(source.revision) == 40 and int(source.revision, 16) >= 0, source.name


def test_data_list_prints_every_task_of_the_five_suites(home, capsys):
    code, out, _ = _cli(capsys, "data", "list")
    assert code == 0 and out.startswith(f"full data sets (fetched into {home.full}):")
    listed = [line.split()[:2] for line in out.splitlines() if line.split()[:1] and line.split()[0] in SUITES]
    expected = [[s, t] for s in registry.suites() if s in SUITES for t in _shipped(s)["tasks"]]
    assert sorted(listed) == sorted(expected)
    assert len(listed) == 6 + 1 + 1 + 11 + 16  # Thai-H6, ThaiCLI, dialect, the leaderboard, SEA-HELM
    assert all(line.split()[-1] == "missing" for line in out.splitlines()[3:])  # nothing fetched in this home


# ------------------------------------------------------------------------------------------------ the manifest checks
def _set_source(name: str, **fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda raw: raw["sources"][name].update(fields)


def _drop_why(raw: dict[str, Any]) -> None:
    raw["sources"]["thai_local_benchmark"].update(revision=None)
    del raw["sources"]["thai_local_benchmark"]["why"]


BROKEN = {
    "wrong type": (
        lambda raw: raw["tasks"]["generation"].update(rows="400"),
        "tasks.generation.rows",
        'expected int, found "400"',
    ),
    "bool for int": (
        lambda raw: raw["tasks"]["generation"]["files"][0].update(rows=True),
        "tasks.generation.files[0].rows",
        "expected int, found true",
    ),
    "branch as revision": (
        _set_source("thai_local_benchmark", revision="main"),
        "sources.thai_local_benchmark.revision",
        "revision must be a full 40-hex commit hash (a branch or tag moves), found 'main'",
    ),
    "bad sha256": (
        lambda raw: raw["tasks"]["generation"]["files"][0].update(sha256="ABC123"),
        "tasks.generation.files[0].sha256",
        "sha256 must be 64 lower-case hex digits, found 'ABC123'",
    ),
    "path with ..": (
        lambda raw: raw["tasks"]["generation"]["files"][0].update(path="datasets/../../x.pkl"),
        "tasks.generation.files[0].path",
        "paths must stay inside their folder, found 'datasets/../../x.pkl' -> 'datasets/../../x.pkl'",
    ),
    "unknown source": (
        lambda raw: raw["tasks"]["generation"].update(source="nope"),
        "tasks.generation.source",
        "unknown source 'nope' (sources: thai_local_benchmark)",
    ),
    "unknown kind": (
        _set_source("thai_local_benchmark", kind="svn"),
        "sources.thai_local_benchmark.kind",
        "kind must be 'huggingface' or 'git', found 'svn'",
    ),
    "unpinned without why": (_drop_why, "sources.thai_local_benchmark.why", "an unpinned source must say why in 'why'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_manifest_names_the_file_and_the_field(case, tmp_path):
    edit, field, reason = BROKEN[case]
    path = _write_manifest(tmp_path, "dialect", edit)
    with pytest.raises(ThaiEvalDataError) as err:
        load_manifest(path)
    assert (err.value.path, err.value.field, err.value.reason) == (str(path), field, reason)
    assert str(err.value) == f"{path}, field {field!r}: {reason}"


def test_the_command_names_a_broken_override_manifest(home, capsys):
    path = _write_manifest(home.manifests, "dialect", _set_source("thai_local_benchmark", revision="v1.0"))
    code, out, err = _cli(capsys, "data", "list")
    assert code == 1 and out == ""
    assert err.startswith(
        f"thai-eval data: error: ThaiEvalDataError: {path}, field "
        "'sources.thai_local_benchmark.revision': revision must be a full 40-hex commit hash"
    )


# -------------------------------------------------------------------------------------------------- the pickle reader
_DATASETS_MODULES = (
    "datasets",
    "datasets.dataset_dict",
    "datasets.arrow_dataset",
    "datasets.table",
    "datasets.info",
    "datasets.features",
    "datasets.features.features",
    "datasets.splits",
)


@contextlib.contextmanager
def fake_datasets() -> Iterator[types.SimpleNamespace]:
    """For the block, stand-ins of the ``datasets`` classes a pickled DatasetDict names, registered in
    ``sys.modules`` under the real modules' names so that pickling them writes the real file's globals; removed
    afterwards (the ``datasets`` package is not installed). Their pickled structure is the real classes':
    a DatasetDict is a dict subclass (NEWOBJ, its items), a Dataset its ``__dict__`` (``_info``, ``_data`` an
    InMemoryTable, ``_indices`` None, ...), an InMemoryTable the state ``{"table": pyarrow.Table}``, Features a
    dict rebuilt from ``dict(self)``, Value and DatasetInfo dataclasses (NEWOBJ, their ``__dict__``)."""
    modules = {name: types.ModuleType(name) for name in _DATASETS_MODULES}

    class DatasetDict(dict):
        pass

    class Features(dict):
        def __reduce__(self):
            return Features, (dict(self),)

    class Value:
        def __init__(self, dtype: str) -> None:
            self.dtype, self.id, self.pa_type, self._type = dtype, None, pa.type_for_alias(dtype), "Value"

    class DatasetInfo:
        def __init__(self, features: Features) -> None:
            self.description, self.citation, self.features, self.builder_name = "", "", features, None

    class InMemoryTable:
        def __init__(self, table: pa.Table) -> None:
            self.table = table

        def __getstate__(self) -> dict[str, Any]:
            return {"table": self.table}

    class NamedSplit:  # a class the allow-list does not admit
        def __init__(self, name: str) -> None:
            self._name = name

    class Dataset:
        def __init__(self, table: pa.Table, split: NamedSplit | None = None) -> None:
            features = Features({c: Value("string") for c in table.column_names})
            self._info, self._split, self._indexes = DatasetInfo(features), split, {}
            self._data, self._indices = InMemoryTable(table), None
            self._format_type, self._format_kwargs, self._format_columns = None, {}, None
            self._output_all_columns, self._fingerprint = False, "6f8e7c4c0a7d2b91"

    for module, cls in (
        ("datasets.dataset_dict", DatasetDict),
        ("datasets.arrow_dataset", Dataset),
        ("datasets.table", InMemoryTable),
        ("datasets.info", DatasetInfo),
        ("datasets.features.features", Features),
        ("datasets.features.features", Value),
        ("datasets.splits", NamedSplit),
    ):
        cls.__module__, cls.__qualname__ = module, cls.__name__
        setattr(modules[module], cls.__name__, cls)
    saved = {name: sys.modules.get(name) for name in _DATASETS_MODULES}
    sys.modules.update(modules)
    try:
        yield types.SimpleNamespace(DatasetDict=DatasetDict, Dataset=Dataset, NamedSplit=NamedSplit)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _sample_rows(dialects=DIALECTS, tasks: Callable[[str], list[str]] = dialect_tasks) -> dict[str, dict[str, list]]:
    """The shipped dialect samples (real Thai rows): dialect -> task -> rows as stored."""
    return {
        d: {
            t: [
                json.loads(line)
                for line in (SAMPLES / "dialect" / d / f"{t}.jsonl").read_text(encoding="utf-8").splitlines()
                if line.strip()
            ]
            for t in tasks(d)
        }
        for d in dialects
    }


def dataset_dict_pickle(rows: dict[str, dict[str, list]], *, foreign_split: bool = False) -> bytes:
    """``rows`` pickled as the benchmark's ``dataset.pkl`` is: a DatasetDict of DatasetDicts of Datasets (with
    ``foreign_split``: each Dataset's ``_split`` a ``datasets.splits.NamedSplit``, a class outside the allow-list)."""
    assert "datasets" not in sys.modules
    with fake_datasets() as ds:
        obj = ds.DatasetDict(
            {
                d: ds.DatasetDict(
                    {
                        t: ds.Dataset(pa.Table.from_pylist(r), ds.NamedSplit("test") if foreign_split else None)
                        for t, r in tasks.items()
                    }
                )
                for d, tasks in rows.items()
            }
        )
        data = pickle.dumps(obj, protocol=4)
    assert "datasets" not in sys.modules and "datasets.arrow_dataset" not in sys.modules
    return data


def _globals_of(data: bytes) -> set[tuple[str, str]]:
    """Every (module, name) a pickle names, read with the reader's own tables (nothing else admitted)."""
    seen: set[tuple[str, str]] = set()

    class Recorder(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            seen.add((module, name))
            return STAND_INS.get((module, name)) or ALLOWED_CALLABLES[(module, name)]

    Recorder(io.BytesIO(data)).load()
    return seen


def test_a_dataset_dict_pickle_is_read_without_the_datasets_package(tmp_path):
    rows = _sample_rows()
    data = dataset_dict_pickle(rows)
    # the file names exactly what the real one does: the six datasets classes and pyarrow's rebuilders
    named = _globals_of(data)
    assert set(STAND_INS) <= named - {("datasets.splits", "NamedSplit")}
    assert {m for m, _ in named} == {
        "datasets.dataset_dict",
        "datasets.arrow_dataset",
        "datasets.table",
        "datasets.info",
        "datasets.features.features",
        "pyarrow.lib",
        "builtins",
    }
    path = tmp_path / "dataset.pkl"
    path.write_bytes(data)
    read = read_dataset_dict_pickle(path)
    assert list(read) == list(DIALECTS) and list(read["north"]) == dialect_tasks("north")
    assert read == rows
    assert read["east"]["food"][0] == {"id": 0, "text_1": "ตำบักหุ่ง", "text_2": "."}


def test_the_dialect_converter_writes_the_files_load_dialect_reads(tmp_path):
    rows = _sample_rows()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "dataset.pkl").write_bytes(dataset_dict_pickle(rows))
    out = tmp_path / "out"
    written = dialect_pickle_to_jsonl("generation", {PICKLE: tmp_path / "src" / "dataset.pkl"}, out)
    assert written == [out / d / f"{t}.jsonl" for d in DIALECTS for t in dialect_tasks(d)]
    for d in DIALECTS:  # byte for byte the shipped samples (the converter writes them as they were written)
        for t in dialect_tasks(d):
            assert [json.loads(x) for x in (out / d / f"{t}.jsonl").read_text(encoding="utf-8").splitlines()] == rows[
                d
            ][t]
    converted, shipped = load_dialect(out), load_dialect(SAMPLES / "dialect")
    assert len(converted) == 72 and converted.equals(shipped)
    with pytest.raises(ThaiEvalDataError, match=f"field 'files': the dialect converter needs {PICKLE}"):
        dialect_pickle_to_jsonl("generation", {"other.pkl": tmp_path / "src" / "dataset.pkl"}, out)


class _System:
    """Pickles as ``posix.system(command)``: what a hostile file carries."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


class _Eval:
    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):
        return eval, (self.code,)


def _hostile(marker: Path) -> dict[str, tuple[bytes, str]]:
    """Pickles that would create ``marker`` if loaded, and the global each names."""
    command = f"touch {marker}"
    return {
        "os.system": (b"cos\nsystem\n(V" + command.encode() + b"\ntR.", "os.system"),  # hand-written, protocol 0
        "posix.system": (pickle.dumps(_System(command), protocol=4), f"{os.system.__module__}.system"),
        "builtins.eval": (pickle.dumps(_Eval(f"open({str(marker)!r}, 'w').close()"), protocol=4), "builtins.eval"),
    }


@pytest.mark.parametrize("case", ["os.system", "posix.system", "builtins.eval"])
def test_a_pickle_naming_anything_else_is_refused_before_it_runs(case, tmp_path):
    marker = tmp_path / "ran"
    data, named = _hostile(marker)[case]
    path = tmp_path / "dataset.pkl"
    path.write_bytes(data)
    with pytest.raises(RefusedPickleError) as err:
        read_dataset_dict_pickle(path)
    assert (err.value.path, err.value.field) == (str(path), named)
    assert str(err.value) == (
        f"{path}, field {named!r}: refused to load {named}: only a datasets.DatasetDict of Arrow "
        "tables is read, and this file names another class or function (nothing was run)"
    )
    assert not marker.exists()
    if case == "os.system":  # the payload is real: the standard unpickler runs it
        pickle.loads(data)  # noqa: S301 - our own harmless file, to show what the reader prevented
        assert marker.exists()


def test_a_foreign_class_inside_a_dataset_dict_is_refused_by_name(tmp_path):
    path = tmp_path / "dataset.pkl"
    path.write_bytes(dataset_dict_pickle(_sample_rows(("center",)), foreign_split=True))
    with pytest.raises(RefusedPickleError, match=r"refused to load datasets\.splits\.NamedSplit") as err:
        dialect_pickle_to_jsonl("generation", {PICKLE: path}, tmp_path / "out")
    assert err.value.field == "datasets.splits.NamedSplit" and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------- a Git source, end to end
def _dialect_source(mirror: Path, home: types.SimpleNamespace, data: bytes, *, sha256: str | None = None) -> str:
    """A new commit of the stand-in Thai_local_benchmark holding ``data`` as its pickle, and the dialect manifest
    copy pinned at it with ``sha256`` (default: the pickle's); the commit."""
    commit = make_git_repo(
        mirror / "mrpeerat" / "Thai_local_benchmark.git",
        {PICKLE: data, "README.md": "# Thai local benchmark (stand-in)\n".encode()},
    )

    def pin(raw: dict[str, Any]) -> None:
        raw["sources"]["thai_local_benchmark"]["revision"] = commit
        raw["tasks"]["generation"]["files"][0]["sha256"] = sha256 or _sha(data)

    _write_manifest(home.manifests, "dialect", pin)
    return commit


def _counting_git(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every git command the fetch runs, recorded."""
    calls: list[list[str]] = []
    real = fetch_module._git

    def git(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
        calls.append(list(args))
        return real(args, cwd)

    monkeypatch.setattr(fetch_module, "_git", git)
    return calls


def _placed(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path -> SHA-256)."""
    return {p.relative_to(folder).as_posix(): _file_sha(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _the_clone(home: types.SimpleNamespace) -> Path:
    """The one clone under the data home's git folder."""
    [clone] = list((home.data / "git").iterdir())
    return clone


DIALECT_FILES = sorted(f"{d}/{t}.jsonl" for d in DIALECTS for t in dialect_tasks(d))


def test_a_git_source_is_fetched_verified_and_kept(home, github_mirror, capsys, monkeypatch):
    data = dataset_dict_pickle(_sample_rows())
    commit = _dialect_source(github_mirror, home, data)
    folder = home.full / "dialect"
    calls = _counting_git(monkeypatch)

    code, out, err = _cli(capsys, "data", "fetch", "dialect")
    assert code == 0, err
    assert [c for c in calls if c[0] == "fetch"] == [["fetch", "-q", "--depth", "1", "origin", commit]]
    assert out.splitlines()[0] == f"fetched into {home.full}:"
    assert out.splitlines()[3].split() == ["dialect/generation", "fetched", commit[:12], "24"]
    placed = _placed(folder)
    assert sorted(placed) == sorted([ORIGIN_FILE, *DIALECT_FILES])
    assert load_dialect(folder).equals(load_dialect(SAMPLES / "dialect"))
    origin = read_origin(folder)
    assert sorted(origin) == DIALECT_FILES
    qa = origin["center/qa.jsonl"]
    assert {
        k: qa[k]
        for k in (
            "suite",
            "task",
            "kind",
            "source",
            "revision",
            "pinned",
            "resolved_revision",
            "path",
            "source_sha256",
            "sha256",
            "rows",
        )
    } == {
        "suite": "dialect",
        "task": "generation",
        "kind": "git",
        "source": DIALECT_URL,
        "revision": commit,
        "pinned": True,
        "resolved_revision": commit,
        "path": PICKLE,
        "source_sha256": {PICKLE: _sha(data)},
        "sha256": placed["center/qa.jsonl"],
        "rows": 3,
    }
    assert qa["licence"].startswith("none stated")
    assert {e["revision"] for e in origin.values()} == {commit} and {e["rows"] for e in origin.values()} == {3}

    code, out, _ = _cli(capsys, "data", "verify", "dialect")
    assert (code, out) == (0, "verified: every fetched file matches its fetch and manifest\n")
    code, out, _ = _cli(capsys, "data", "list", "dialect")
    assert out.splitlines()[3].split()[-2:] == ["present", str(folder)]

    # a second fetch: nothing to do, no git command at all (the clone's FETCH_HEAD untouched)
    clone = _the_clone(home)
    fetched_at = (clone / ".git" / "FETCH_HEAD").stat().st_mtime_ns
    calls.clear()
    code, out, _ = _cli(capsys, "data", "fetch", "dialect")
    assert code == 0 and out.splitlines()[3].split() == ["dialect/generation", "up", "to", "date", commit[:12], "24"]
    assert calls == [] and (clone / ".git" / "FETCH_HEAD").stat().st_mtime_ns == fetched_at
    assert _placed(folder) == placed

    # a changed file and a deleted one: verify names each and exits 1
    qa_path, food_path = folder / "center" / "qa.jsonl", folder / "east" / "food.jsonl"
    qa_path.write_text(qa_path.read_text(encoding="utf-8").replace("ไปกับแม่", "ไปกับพ่อ"), encoding="utf-8")
    food_path.unlink()
    code, out, _ = _cli(capsys, "data", "verify", "dialect")
    lines = out.splitlines()
    assert code == 1 and lines[-1] == "2 problem(s)" and len(lines) == 3
    assert lines[0] == (
        f"{qa_path}: SHA-256 {_file_sha(qa_path)[:16]}... is not the fetched "
        f"{placed['center/qa.jsonl'][:16]}... (changed since the fetch; fetch again: thai-eval data "
        "fetch dialect/generation)"
    )
    assert lines[1] == f"{food_path}: missing (thai-eval data fetch dialect/generation)"
    # a fetch puts both back from the clone, without fetching from the remote again
    code, out, _ = _cli(capsys, "data", "fetch", "dialect")
    assert code == 0 and out.splitlines()[3].split() == ["dialect/generation", "fetched", commit[:12], "24"]
    assert not any(c[0] == "fetch" for c in calls) and (clone / ".git" / "FETCH_HEAD").stat().st_mtime_ns == fetched_at
    assert {k: v for k, v in _placed(folder).items() if k != ORIGIN_FILE} == {
        k: v for k, v in placed.items() if k != ORIGIN_FILE
    }
    placed, origin = _placed(folder), read_origin(folder)
    assert _cli(capsys, "data", "verify", "dialect")[0] == 0

    # a revision the repository does not have: a named error, the placed files kept
    unknown = "1234567890abcdef" * 2 + "12345678"
    code, out, err = _cli(capsys, "data", "fetch", "dialect", "--revision", f"dialect={unknown}")
    assert code == 1 and out == ""
    assert err.startswith(
        f"thai-eval data: error: ThaiEvalDataError: {DIALECT_URL}, field 'revision': cannot fetch "
        f"commit {unknown} of {DIALECT_URL}: "
    )
    assert err.rstrip().endswith(f"not our ref {unknown}")  # git's own reason
    assert _placed(folder) == placed and read_origin(folder) == origin
    # the run refuses that revision (not fetched at it) and names the command that fetches it
    with pytest.raises(ThaiEvalDataError) as refused:
        catalogue.require_present(registry.suites()["dialect"], ("generation",), revisions={"dialect": unknown})
    assert refused.value.field == "data" and refused.value.reason == (
        "the full data of dialect/generation is not fetched here at the revision asked for; run: HF_HUB_OFFLINE=0 "
        f"thai-eval data fetch dialect/generation --revision dialect={unknown}"
    )
    assert catalogue.require_present(registry.suites()["dialect"], ("generation",)) == folder


def test_a_pickle_that_does_not_match_its_pinned_sha256_places_nothing(home, github_mirror):
    data = dataset_dict_pickle(_sample_rows())
    pinned = "0" * 64
    commit = _dialect_source(github_mirror, home, data, sha256=pinned)
    with pytest.raises(ThaiEvalDataError) as err:
        catalogue.fetch(["dialect"])
    assert (err.value.field, err.value.path) == ("sha256", f"{DIALECT_URL}@{commit}:{PICKLE}")  # the file in its source
    assert err.value.reason == (
        f"SHA-256 {_sha(data)} is not the pinned {pinned} (a changed or tampered file; nothing was placed)"
    )
    assert _placed(home.full / "dialect") == {}


def test_a_pickle_with_another_class_is_refused_before_anything_is_placed(home, github_mirror):
    data = dataset_dict_pickle(_sample_rows(), foreign_split=True)
    _dialect_source(github_mirror, home, data)  # pinned at its true hash: the reader is what stops it
    with pytest.raises(RefusedPickleError) as err:
        catalogue.fetch(["dialect/generation"])
    assert err.value.field == "datasets.splits.NamedSplit" and err.value.path.endswith(PICKLE)
    assert _placed(home.full / "dialect") == {}


# ----------------------------------------------------------------------------------- Hugging Face sources, end to end
def _sample(name: str) -> bytes:
    return (SAMPLES / "thai_llm_leaderboard" / name).read_bytes()


XCOPA_ROWS = 200  # data/thai_llm_leaderboard/xcopa_tha_seacrowd_qa_test.jsonl: 200 lines
MT_BENCH_ROWS = 9  # data/thai_llm_leaderboard/mt_bench_thai_full.json: a list of 9 questions


def _leaderboard_hub(
    hub: FakeHub, home: types.SimpleNamespace, *, nlu_pinned: bool = True, xcopa_rows: int = XCOPA_ROWS
) -> dict[str, str]:
    """The leaderboard's NLU repo (XCOPA's samples) and MT-Bench repo on the fake hub, and the leaderboard manifest
    copy pinned at their commits with the files' SHA-256 and rows (``nlu_pinned=False``: the NLU source left
    unpinned, as shipped); the commits."""
    commits = {
        "nlu": hub.add_dataset(NLU_REPO, {XCOPA: _sample(XCOPA), "README.md": b"# NLU\n"}),
        "mt": hub.add_dataset(MT_REPO, {MT_BENCH: _sample(MT_BENCH), "README.md": b"# MT-Bench Thai\n"}),
    }

    def pin(raw: dict[str, Any]) -> None:
        raw["sources"]["leaderboard_nlu"]["revision"] = commits["nlu"] if nlu_pinned else None
        raw["sources"]["mt_bench_thai"]["revision"] = commits["mt"]
        for task, name, rows in (
            ("xcopa_tha_seacrowd_qa", XCOPA, xcopa_rows),
            ("mt_bench_thai", MT_BENCH, MT_BENCH_ROWS),
        ):
            raw["tasks"][task]["rows"] = rows
            raw["tasks"][task]["files"][0].update(sha256=_sha(_sample(name)), rows=rows)

    _write_manifest(home.manifests, "thai_llm_leaderboard", pin)
    return commits


XCOPA_REF, MT_REF = "thai_llm_leaderboard/xcopa_tha_seacrowd_qa", "thai_llm_leaderboard/mt_bench_thai"


def test_hugging_face_sources_are_fetched_and_a_cut_download_leaves_the_other_task(fake_hub, home, capsys, monkeypatch):
    commits = _leaderboard_hub(fake_hub, home)
    folder = home.full / "thai_llm_leaderboard"
    code, out, err = _cli(capsys, "data", "fetch", MT_REF)
    assert code == 0, err
    assert out.splitlines()[3].split() == [MT_REF, "fetched", commits["mt"][:12], "1"]
    assert _placed(folder) == {ORIGIN_FILE: _file_sha(folder / ORIGIN_FILE), MT_BENCH: _sha(_sample(MT_BENCH))}
    entry = read_origin(folder)[MT_BENCH]
    assert {k: entry[k] for k in ("kind", "source", "revision", "pinned", "resolved_revision", "path", "rows")} == {
        "kind": "huggingface",
        "source": MT_REPO,
        "revision": commits["mt"],
        "pinned": True,
        "resolved_revision": commits["mt"],
        "path": MT_BENCH,
        "rows": MT_BENCH_ROWS,
    }
    assert fake_hub.downloads(MT_BENCH)[0].path == f"/datasets/{MT_REPO}/resolve/{commits['mt']}/{MT_BENCH}"
    assert [p for _, p in fake_hub.requests if "README" in p] == []  # only the manifest's files

    # XCOPA's download cut every time: a named error; MT-Bench, fetched before, is untouched
    _no_sleep(monkeypatch)
    fake_hub.cut_next_download(XCOPA, 100, times=6)
    before = _placed(folder)
    code, out, err = _cli(capsys, "data", "fetch", XCOPA_REF)
    assert code == 1 and out == ""
    assert (
        err.splitlines()[-1]
        == (  # after the client's progress bar
            f"thai-eval data: error: ThaiEvalDataError: {NLU_REPO}: cannot download {NLU_REPO}@{commits['nlu'][:12]}: "
            "RemoteProtocolError: peer closed connection without sending complete message body (received 100 bytes, "
            f"expected {len(_sample(XCOPA))})"
        )
    )
    assert len(fake_hub.downloads(XCOPA)) == 6
    assert _placed(folder) == before
    assert _cli(capsys, "data", "verify", MT_REF)[:2] == (
        0,
        "verified: every fetched file matches its fetch and manifest\n",
    )
    # the next fetch completes
    code, out, _ = _cli(capsys, "data", "fetch", XCOPA_REF, MT_REF)
    assert code == 0 and [line.split()[1] for line in out.splitlines()[3:]] == ["fetched", "up"]
    assert _placed(folder)[XCOPA] == _sha(_sample(XCOPA)) and read_origin(folder)[XCOPA]["rows"] == XCOPA_ROWS
    code, out, _ = _cli(capsys, "data", "verify", XCOPA_REF, MT_REF)
    assert (code, out) == (0, "verified: every fetched file matches its fetch and manifest\n")


def test_a_tampered_hugging_face_file_is_refused_and_the_next_fetch_downloads_it_again(fake_hub, home):
    commits = _leaderboard_hub(fake_hub, home)
    good = _sample(XCOPA)
    bad = good.replace(b'"id": "0"', b'"id": "9"', 1)  # same length: the client cannot tell
    assert len(bad) == len(good) and bad != good
    fake_hub.tamper(NLU_REPO, commits["nlu"], XCOPA, bad)
    with pytest.raises(ThaiEvalDataError) as err:
        catalogue.fetch([XCOPA_REF])
    assert (err.value.field, err.value.path) == ("sha256", f"{NLU_REPO}@{commits['nlu']}:{XCOPA}")
    assert err.value.reason == (
        f"SHA-256 {_sha(bad)} is not the pinned {_sha(good)} (a changed or tampered file; nothing was placed)"
    )
    assert _placed(home.full / "thai_llm_leaderboard") == {}
    # the mirror is repaired: the next fetch must not read the tampered bytes back from the Hugging Face cache
    fake_hub.tamper(NLU_REPO, commits["nlu"], XCOPA, good)
    [result] = catalogue.fetch([XCOPA_REF])
    assert result.status == "fetched" and _file_sha(home.full / "thai_llm_leaderboard" / XCOPA) == _sha(good)


def test_a_file_with_other_rows_than_the_manifest_pins_is_refused(fake_hub, home):
    commits = _leaderboard_hub(fake_hub, home, xcopa_rows=500)
    with pytest.raises(ThaiEvalDataError) as err:
        catalogue.fetch([XCOPA_REF])
    assert str(err.value) == (
        f"{NLU_REPO}@{commits['nlu']}:{XCOPA}, field 'rows': {XCOPA_ROWS} rows, the manifest pins 500"
    )
    assert _placed(home.full / "thai_llm_leaderboard") == {}


def test_an_unpinned_source_fetches_main_and_records_the_commit(fake_hub, home, capsys):
    commits = _leaderboard_hub(fake_hub, home, nlu_pinned=False)
    [result] = catalogue.fetch([XCOPA_REF])
    assert (result.status, result.revision) == ("fetched", "main")
    entry = read_origin(home.full / "thai_llm_leaderboard")[XCOPA]
    assert (entry["revision"], entry["pinned"], entry["resolved_revision"]) == ("main", False, commits["nlu"])
    assert fake_hub.requests[0] == ("GET", f"/api/datasets/{NLU_REPO}/revision/main")
    code, out, _ = _cli(capsys, "data", "list", XCOPA_REF)
    assert out.splitlines()[3].split()[2:4] == [NLU_REPO, "unpinned"] and " present " in out
    assert _cli(capsys, "data", "verify", XCOPA_REF)[0] == 0


def test_offline_a_fetch_stops_at_once_with_the_command_to_run(fake_hub, home, capsys):
    _leaderboard_hub(fake_hub, home)
    with hub_offline():
        with pytest.raises(OfflineError) as err:
            catalogue.fetch([XCOPA_REF])
        code, _, stderr = _cli(capsys, "data", "fetch", "thai_llm_leaderboard")
    assert f"On a machine with a network run: HF_HUB_OFFLINE=0 thai-eval data fetch {XCOPA_REF} ;" in str(err.value)
    assert str(err.value).startswith("cannot download here (offline: HF_HUB_OFFLINE=1).")
    assert code == 1 and "OfflineError: cannot download here" in stderr
    assert "thai-eval data fetch thai_llm_leaderboard/wisesight_thai_sentiment_seacrowd_text" in stderr
    assert fake_hub.requests == []  # nothing reached the hub
    assert _placed(home.full / "thai_llm_leaderboard") == {}


# ------------------------------------------------------------------------------------------ thai-eval run --data full
@pytest.mark.parametrize("dry_run", [True, False])
def test_run_on_full_data_not_fetched_names_the_fetch_command(home, tmp_path, capsys, dry_run):
    out_dir = tmp_path / "outputs"
    code, out, err = _cli(
        capsys,
        "run",
        "--model",
        "embedded",
        "--benchmarks",
        "dialect",
        "--data",
        "full",
        "--no-paper",
        "--outputs",
        str(out_dir),
        *(["--dry-run"] if dry_run else []),
    )
    assert code == 1
    assert (
        f"ThaiEvalDataError: {home.full / 'dialect'}, field 'data': the full data of dialect/generation is not "
        "fetched here at the revision asked for; run: HF_HUB_OFFLINE=0 thai-eval data fetch dialect/generation" in err
    )
    assert not (out_dir / "runs").exists()


def test_a_revision_without_full_data_is_refused(home, capsys):
    code, out, err = _cli(
        capsys,
        "run",
        "--model",
        "embedded",
        "--benchmarks",
        "dialect",
        "--revision",
        "dialect=" + "a" * 40,
        "--dry-run",
    )
    assert code == 1 and out == ""
    assert err == (
        "thai-eval run: error: ThaiEvalError: --revision applies to the full data sets: add --data full "
        "(and fetch them at that revision first: thai-eval data fetch ... --revision ...)\n"
    )


# ------------------------------------------------------------------------------------ the origin in a run's config id
def _old_config_id(benchmark: str, config: dict[str, Any], model: str, data: list[Path]) -> str:
    """The config id as RunStore computed it before data origins were keyed."""
    keyed = {
        "benchmark": benchmark,
        "config": config,
        "model": {"name": model},
        "data": sorted(_file_sha(p) for p in data),
        "templates": {},
    }
    return hashlib.sha256(canonical_json(keyed).encode()).hexdigest()[:12]


def test_run_store_keys_and_records_the_origin_of_fetched_files(tmp_path):
    plain, fetched = tmp_path / "plain", tmp_path / "fetched"
    for folder in (plain, fetched):
        (folder / "center").mkdir(parents=True)
        (folder / "center" / "qa.jsonl").write_text(
            '{"id": 0, "question": "ใคร", "context": "แม่", "text_2": "แม่"}\n', encoding="utf-8"
        )
    entry = {
        "suite": "dialect",
        "task": "generation",
        "kind": "git",
        "source": DIALECT_URL,
        "revision": "b" * 40,
        "resolved_revision": "b" * 40,
        "path": PICKLE,
        "sha256": _file_sha(plain / "center" / "qa.jsonl"),
    }
    update_origin(fetched, {"center/qa.jsonl": entry})
    config = {"limit": 2, "seed": 42}
    old_id = _old_config_id("dialect/generation", config, "m", [plain / "center" / "qa.jsonl"])

    def card(data_file: Path) -> tuple[Path, dict[str, Any]]:
        with RunStore.open("m", "dialect/generation", config, data_files=[data_file], outputs=tmp_path / "out") as run:
            return run.root, run.card

    root, plain_card = card(plain / "center" / "qa.jsonl")
    assert plain_card["config_id"] == old_id and "data_sources" not in plain_card  # files without origin: as before
    assert root == tmp_path / "out" / "runs" / "m" / "dialect" / "generation" / old_id

    data_file = fetched / "center" / "qa.jsonl"
    _, with_origin = card(data_file)
    assert with_origin["data_sources"] == [{"file": str(data_file), **entry}]
    keyed = {
        "benchmark": "dialect/generation",
        "config": config,
        "model": {"name": "m"},
        "data": [entry["sha256"]],
        "templates": {},
        "data_sources": [f"{DIALECT_URL}@{'b' * 40}:{PICKLE}"],
    }
    assert with_origin["config_id"] == hashlib.sha256(canonical_json(keyed).encode()).hexdigest()[:12] != old_id
    # another revision of the same bytes is another configuration
    update_origin(fetched, {"center/qa.jsonl": {**entry, "revision": "c" * 40, "resolved_revision": "c" * 40}})
    other_root, other = card(data_file)
    assert len({other["config_id"], with_origin["config_id"], old_id}) == 3
    # a stored run reopens under the same id (its card's data_sources key it as they did)
    again_root, again = card(data_file)
    assert again_root == other_root and again["resumed_at"] and again["data_sources"][0]["revision"] == "c" * 40


# ------------------------------------------------------------------------------------- a run on full data, end to end
def test_a_run_on_fetched_full_data_records_its_origin(home, github_mirror, tmp_path):
    """``thai-eval run --data full`` in a subprocess on the fetched dialect stand-in (the samples' QA rows)."""
    data = dataset_dict_pickle(_sample_rows(tasks=lambda d: ["qa"]))
    commit = _dialect_source(github_mirror, home, data)
    [result] = catalogue.fetch(["dialect"])
    folder = home.full / "dialect"
    assert result.status == "fetched" and sorted(_placed(folder)) == sorted(
        [ORIGIN_FILE, *(f"{d}/qa.jsonl" for d in DIALECTS)]
    )
    out = tmp_path / "outputs"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "THAI_EVAL_DATA": str(home.data),
        "THAI_EVAL_MANIFESTS": str(home.manifests),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "thai_eval_utils",
            "run",
            "--model",
            "embedded",
            "--benchmarks",
            "dialect",
            "--data",
            "full",
            "--limit",
            "2",
            "--no-paper",
            "--max-new-tokens",
            "4",
            "--greedy",
            "--outputs",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [card_path] = (out / "runs").rglob("dialect/generation/*/run_card.json")
    card = json.loads(card_path.read_text(encoding="utf-8"))
    files = sorted(str(folder / d / "qa.jsonl") for d in DIALECTS)
    assert sorted(card["data_files"]) == files
    assert sorted(s["file"] for s in card["data_sources"]) == files
    assert {(s["source"], s["revision"], s["resolved_revision"], s["path"]) for s in card["data_sources"]} == {
        (DIALECT_URL, commit, commit, PICKLE)
    }
    # the id the same settings on the same bytes get without an origin file (as before origins were keyed) differs
    keyed = {
        "benchmark": card["benchmark"],
        "config": card["config"],
        "model": {k: v for k, v in card["model"].items() if k not in UNKEYED_IDENTITY_KEYS},
        "data": sorted(card["data_files"].values()),
        "templates": card["prompt_template_sha256"],
    }
    plain_id = hashlib.sha256(canonical_json(keyed).encode()).hexdigest()[:12]
    with_sources = {**keyed, "data_sources": [f"{DIALECT_URL}@{commit}:{PICKLE}"]}
    assert (
        card_path.parent.name
        == card["config_id"]
        == hashlib.sha256(canonical_json(with_sources).encode()).hexdigest()[:12]
        != plain_id
    )


def test_a_branch_given_as_revision_resolves_to_its_commit_and_drops_the_earlier_revisions_files(
    home, github_mirror, capsys
):
    """``--revision dialect=main`` on a Git source: the origin records the branch as asked and the commit it
    resolved to (which keys the runs); files an earlier fetch placed that this revision lacks are removed."""
    rows = _sample_rows()
    _dialect_source(github_mirror, home, dataset_dict_pickle(rows))
    assert _cli(capsys, "data", "fetch", "dialect")[0] == 0
    folder = home.data / "full" / "dialect"
    assert (folder / "east" / "food.jsonl").is_file()
    fewer = {d: {t: r for t, r in tasks.items() if t != "food"} for d, tasks in rows.items()}
    newer = make_git_repo(github_mirror / "mrpeerat" / "Thai_local_benchmark.git", {PICKLE: dataset_dict_pickle(fewer)})
    code, out, _ = _cli(capsys, "data", "fetch", "dialect", "--revision", "dialect=main")
    assert code == 0 and "fetched" in out
    origin = read_origin(folder)
    assert {e["revision"] for e in origin.values()} == {"main"}
    assert {e["resolved_revision"] for e in origin.values()} == {newer}
    assert not (folder / "east" / "food.jsonl").exists() and not any("food" in k for k in origin)
    assert sorted(origin) == sorted(f for f in DIALECT_FILES if not f.endswith("food.jsonl"))

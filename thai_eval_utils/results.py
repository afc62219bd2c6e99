"""Results store: per-item JSONL records appended as items finish, a run card and a summary per run.

Layout: ``<outputs>/runs/<model-slug>/<benchmark>/<config-id>/`` holding ``items.jsonl`` (one JSON
record per finished item, flushed and fsynced as it is written), ``run_card.json`` (how the
results were made: model identity, data file hashes, prompt template hashes, protocol options,
package versions, times) and ``summary.json``. ``config-id`` hashes everything that changes the
numbers, so a rerun with the same settings resumes in the same folder and a run with different
settings never mixes with old results. No secret is ever written: see :func:`redact`.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import hashlib
import importlib.metadata
import json
import os
import platform
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ThaiEvalDataError

#: Packages whose versions go into every run card.
RECORDED_PACKAGES = (
    "thai-eval",
    "torch",
    "transformers",
    "tokenizers",
    "accelerate",
    "gguf",
    "pythainlp",
    "sacrebleu",
    "rouge-score",
    "scikit-learn",
    "scipy",
    "numpy",
    "pandas",
    "openai",
)

#: Keys whose values are secrets and never land in a result file.
_SECRET_KEY = re.compile(
    r"^((.*[_-])?(api[_-]?key|secret|password|passwd|authori[sz]ation|bearer)"
    r"|((.*[_-])?(access|auth|hf|api|bearer|refresh|session)[_-]?)?token)$",
    re.I,
)
#: Values that look like API keys even under an innocent key.
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|hf_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_\-]{20,})")
_SLUG_BAD = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Score:
    """A score with its sample size, standard error and provenance signature.

    Example: ``Score.mean("th_arc/acc_norm", [1, 0, 1, 1])`` prints as
    ``th_arc/acc_norm = 0.7500 ± 0.2500 (n=4)``.
    """

    name: str
    value: float
    n: int
    stderr: float | None = None
    signature: str = ""

    @classmethod
    def mean(cls, name: str, values: Sequence[float], signature: str = "") -> Score:
        """Mean of ``values`` with the sample standard error ``std(ddof=1) / sqrt(n)`` (lm-eval's)."""
        vals = [float(v) for v in values]
        n = len(vals)
        if n == 0:
            return cls(name, float("nan"), 0, None, signature)
        mu = sum(vals) / n
        se = (sum((v - mu) ** 2 for v in vals) / (n - 1)) ** 0.5 / n**0.5 if n > 1 else None
        return cls(name, mu, n, se, signature)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "n": self.n, "stderr": self.stderr, "signature": self.signature}

    def __str__(self) -> str:
        se = f" ± {self.stderr:.4f}" if self.stderr is not None else ""
        sig = f" | {self.signature}" if self.signature else ""
        return f"{self.name} = {self.value:.4f}{se} (n={self.n}){sig}"


def outputs_dir() -> Path:
    """The outputs folder: ``$THAI_EVAL_OUTPUTS`` or ``outputs`` under the current directory."""
    return Path(os.environ.get("THAI_EVAL_OUTPUTS", "outputs"))


def slugify(name: str, max_len: int = 80) -> str:
    """A file-name-safe slug of a model name that can never escape its parent folder.

    Path separators, ``..`` and leading dots cannot survive, e.g.
    ``slugify("../../etc/passwd")`` -> ``"etc_passwd"``; long names keep a hash suffix.
    """
    slug = _SLUG_BAD.sub("_", name.strip()).strip("._-")
    slug = re.sub(r"\.{2,}", "_", slug)
    if not slug:
        slug = "model"
    if len(slug) > max_len:
        slug = slug[: max_len - 9] + "-" + sha256_text(name)[:8]
    return slug


def sha256_text(text: str) -> str:
    """Hex SHA-256 of a UTF-8 string (prompt templates, item keys)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def canonical_json(obj: Any) -> str:
    """Deterministic JSON used for hashing configurations."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def package_versions(names: Iterable[str] = RECORDED_PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (None when not installed), plus Python's."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def redact(obj: Any) -> Any:
    """A copy of ``obj`` with secret-looking keys dropped and key-like strings masked."""
    if isinstance(obj, Mapping):
        return {k: redact(v) for k, v in obj.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return _SECRET_VALUE.sub("<redacted>", obj)
    return obj


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(redact(obj), ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@dataclass
class RunStore:
    """One run's folder. Use :meth:`open`; then :meth:`completed`, :meth:`append`, :meth:`write_summary`."""

    root: Path
    card: dict[str, Any]

    @property
    def items_path(self) -> Path:
        return self.root / "items.jsonl"

    @property
    def card_path(self) -> Path:
        return self.root / "run_card.json"

    @property
    def summary_path(self) -> Path:
        return self.root / "summary.json"

    @property
    def config_id(self) -> str:
        return self.card["config_id"]

    @classmethod
    def open(
        cls,
        model_name: str,
        benchmark: str,
        config: Mapping[str, Any],
        *,
        model_identity: Mapping[str, Any] | None = None,
        data_files: Sequence[str | Path] = (),
        prompt_templates: Mapping[str, str] | None = None,
        outputs: str | Path | None = None,
    ) -> RunStore:
        """Open (create or resume) the run of ``model_name`` on ``benchmark`` with ``config``.

        Args:
            model_name: the model's display name; its slug names the folder.
            benchmark: e.g. ``"thai_h6/th_arc"``, ``"thaicli/judge"``, ``"dialect/generation"``.
            config: protocol options and settings: everything that changes the numbers.
            model_identity: name, source, revision or weights hash (see ``models``).
            data_files: input files whose SHA-256 is recorded and part of the config id.
            prompt_templates: name -> template text; their hashes are recorded and part of the id.
            outputs: the outputs folder (default :func:`outputs_dir`).
        """
        bench_parts = [slugify(p) for p in benchmark.split("/") if p]
        data_hashes = {str(p): sha256_file(p) for p in data_files}
        template_hashes = {k: sha256_text(v) for k, v in (prompt_templates or {}).items()}
        identity = redact(dict(model_identity or {"name": model_name}))
        keyed = {
            "benchmark": "/".join(bench_parts),
            "config": redact(dict(config)),
            "model": {k: v for k, v in identity.items() if k not in ("loaded_at", "load_seconds")},
            "data": sorted(data_hashes.values()),
            "templates": template_hashes,
        }
        config_id = sha256_text(canonical_json(keyed))[:12]
        root = Path(outputs or outputs_dir()) / "runs" / slugify(model_name)
        for part in bench_parts:
            root = root / part
        root = root / config_id
        root.mkdir(parents=True, exist_ok=True)
        card_path = root / "run_card.json"
        if card_path.exists():
            card = json.loads(card_path.read_text(encoding="utf-8"))
            card["resumed_at"] = [*card.get("resumed_at", []), _now()]
        else:
            card = {
                "model_name": model_name,
                "benchmark": keyed["benchmark"],
                "config_id": config_id,
                "model": identity,
                "config": keyed["config"],
                "data_files": data_hashes,
                "prompt_template_sha256": template_hashes,
                "created_at": _now(),
            }
        card["package_versions"] = package_versions()
        card["platform"] = {"machine": platform.machine(), "system": platform.system()}
        _write_json_atomic(card_path, card)
        store = cls(root=root, card=card)
        store._repair_torn_tail()
        return store

    def _repair_torn_tail(self) -> None:
        """Drop a last line cut off by a crash mid-write (no newline or not valid JSON)."""
        path = self.items_path
        if not path.exists():
            return
        data = path.read_bytes()
        if not data:
            return
        good = data.rfind(b"\n") + 1
        tail = data[good:]
        if tail.strip():
            with open(path, "r+b") as fh:
                fh.truncate(good)

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """Every stored record in file order."""
        if not self.items_path.exists():
            return
        with open(self.items_path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ThaiEvalDataError(f"corrupt record ({exc})", path=self.items_path, row=lineno) from exc

    def completed(self) -> dict[str, dict[str, Any]]:
        """Finished items keyed by their ``key`` (the last record wins)."""
        return {rec["key"]: rec for rec in self.iter_records()}

    def append(self, key: str, record: Mapping[str, Any]) -> None:
        """Append one finished item, flushed and fsynced so a crash never loses it."""
        line = json.dumps(redact({"key": key, **record}), ensure_ascii=False, default=str) + "\n"
        with open(self.items_path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Write ``summary.json`` (atomically) and stamp the run card's finish time."""
        _write_json_atomic(self.summary_path, {"config_id": self.config_id, "written_at": _now(), **summary})
        self.card["finished_at"] = _now()
        _write_json_atomic(self.card_path, self.card)

    def read_summary(self) -> dict[str, Any] | None:
        """The summary, or None when the run has not finished."""
        if not self.summary_path.exists():
            return None
        return json.loads(self.summary_path.read_text(encoding="utf-8"))


def list_runs(outputs: str | Path | None = None) -> list[dict[str, Any]]:
    """Every run under ``<outputs>/runs``: its folder, run card and summary (None if unfinished)."""
    base = Path(outputs or outputs_dir()) / "runs"
    runs = []
    for card_path in sorted(base.rglob("run_card.json")):
        summary_path = card_path.with_name("summary.json")
        runs.append(
            {
                "dir": card_path.parent,
                "card": json.loads(card_path.read_text(encoding="utf-8")),
                "summary": json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else None,
            }
        )
    return runs

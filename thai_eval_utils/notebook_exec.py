"""One notebook's execution with papermill (what :mod:`thai_eval_utils.notebook_runs` runs for each model and notebook):
the parameters a notebook declares, only those passed and never a secret, the kernel's environment, every secret
in use masked in the executed copy, and its HTML export. :func:`execute` never raises: it returns a
:class:`NotebookRun` saying how the notebook ended."""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thai_eval_utils.core.provenance import redact, scrub, scrub_strings
from thai_eval_utils.notebook_kernel import IpcKernelManager

#: Parameter names that hold secrets, found anywhere in the name (``judge_api_key``, ``hf_token``, ``db_password``);
#: a value is refused too when :func:`~thai_eval_utils.core.provenance.redact` would mask it.
_SECRET_NAME = re.compile(r"api[_-]?key|secret|passw(or)?d|bearer|authori[sz]ation|(^|_)token$", re.I)
#: A URL's userinfo with a password (``https://user:pw@host``).
_URL_PASSWORD = re.compile(r"^https?://[^/@\s]*:[^/@\s]*@")


@dataclass
class NotebookRun:
    """One notebook execution: where its executed copy is, what was passed, and how it ended."""

    notebook: str
    model: str | None
    output: str
    status: str  # "ok", "failed" or "missing"
    seconds: float = 0.0
    error: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    dropped_parameters: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def __str__(self) -> str:
        who = f"{self.model} / " if self.model else ""
        tail = f": {self.error}" if self.error else ""
        return f"[{self.status:>7}] {who}{self.notebook} ({self.seconds:.0f} s) -> {self.output}{tail}"


def notebook_parameters(path: str | Path) -> dict[str, dict[str, Any]]:
    """The parameters a notebook declares in its ``parameters`` cell: name -> info.

    papermill's ``inspect_notebook`` skips every line holding more than one ``=``, so a help comment
    such as ``limit = None  # first N items; None = all`` hides ``limit`` from it. The cell's top-level
    assignments are therefore also read with ``ast``; the union is returned.
    """
    import nbformat
    import papermill

    found: dict[str, dict[str, Any]] = {}
    nb = nbformat.read(str(path), as_version=4)
    cell = next((c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])), None)
    if cell is not None:
        with contextlib.suppress(SyntaxError):  # a non-Python cell: papermill's reading alone
            for node in ast.parse(cell.source).body:
                targets = (
                    node.targets
                    if isinstance(node, ast.Assign)
                    else [node.target]
                    if isinstance(node, ast.AnnAssign)
                    else []
                )
                for target in targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = {
                            "name": target.id,
                            "default": ast.get_source_segment(cell.source, node.value) if node.value else None,
                        }
    found.update(dict(papermill.inspect_notebook(str(path))))
    return found


def is_secret(name: str, value: Any = None) -> bool:
    """Whether a parameter looks like a secret: its name (``judge_api_key``, ``hf_token``), a string value that
    :func:`~thai_eval_utils.core.provenance.redact` would mask (an API key), a URL with a password, or such a
    string anywhere inside a mapping or list value (the ``options`` parameter)."""
    if _SECRET_NAME.search(name):
        return True
    if isinstance(value, str):
        return redact(value) != value or bool(_URL_PASSWORD.search(value))
    if isinstance(value, Mapping):
        return any(is_secret(str(k), v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(is_secret("", v) for v in value)
    return False


def filter_parameters(declared: Mapping[str, Any], parameters: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Split ``parameters`` into those the notebook declares and the names of the others (never passed).

    ``None`` values are dropped too (the notebook keeps its default). A secret-looking name or value
    (an API key) is refused: keys reach the kernels through the environment, never as parameters.
    """
    secret = [k for k, v in parameters.items() if is_secret(k, v)]
    if secret:
        raise ValueError(f"refusing to pass secret-looking parameter(s) {secret}; set API keys in the environment")
    kept = {k: v for k, v in parameters.items() if k in declared and v is not None}
    dropped = sorted(k for k in parameters if k not in declared)
    return kept, dropped


@contextlib.contextmanager
def _kernel_env(extra: Mapping[str, str] | None = None) -> Iterator[None]:
    """Kernels import the same ``thai_eval_utils`` as this process (its parent folder goes first on PYTHONPATH)
    and see ``extra`` (e.g. the judge key) in their environment; this process's environment is restored after."""
    root = str(Path(__file__).resolve().parent.parent)
    pythonpath = os.environ.get("PYTHONPATH")
    changes = {"PYTHONPATH": os.pathsep.join([root, *([pythonpath] if pythonpath else [])]), **(extra or {})}
    old = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def scrub_notebook(path: str | Path) -> bool:
    """Mask every secret in use (:func:`~thai_eval_utils.core.provenance.scrub`) in an executed notebook's
    sources, outputs and metadata; rewrites the file only if something was masked. Returns whether it was."""
    path = Path(path)
    if not path.is_file():
        return False
    nb = json.loads(path.read_text(encoding="utf-8"))
    clean = scrub_strings(nb)
    if clean == nb:
        return False
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(clean, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return True


def execute(
    notebook: str | Path,
    output: str | Path,
    parameters: Mapping[str, Any],
    *,
    cwd: str | Path,
    model: str | None = None,
    kernel_name: str | None = None,
    env: Mapping[str, str] | None = None,
) -> NotebookRun:
    """Execute one notebook with papermill, passing only the parameters it declares; never raises on failure.

    ``env`` is added to the kernel's environment (secrets go there, never into parameters). Every secret in
    use is masked in the executed copy and in the returned error text.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebook, output = Path(notebook), Path(output)
    run = NotebookRun(notebook.name, model, str(output), "ok")
    if not notebook.exists():
        run.status, run.error = "missing", f"no notebook at {notebook}"
        return run
    start = time.perf_counter()
    try:
        run.parameters, run.dropped_parameters = filter_parameters(notebook_parameters(notebook), parameters)
        output.parent.mkdir(parents=True, exist_ok=True)
        with _kernel_env(env):
            papermill.execute_notebook(
                str(notebook),
                str(output),
                parameters=run.parameters,
                cwd=str(cwd),
                kernel_name=kernel_name,
                progress_bar=False,
                kernel_manager_class=IpcKernelManager,
            )  # no TCP warning per notebook
    except PapermillExecutionError as exc:
        run.status, run.error = "failed", scrub(f"cell {exc.exec_count}: {exc.ename}: {exc.evalue}")
    except Exception as exc:  # noqa: BLE001 - a broken notebook or kernel must not stop the batch
        run.status, run.error = "failed", scrub(f"{type(exc).__name__}: {exc}")
    try:
        with _kernel_env(env):  # the kernel's secrets too
            scrub_notebook(output)
    except (OSError, ValueError) as exc:  # an unreadable executed copy: say so, it may hold a secret
        run.status, run.error = "failed", f"could not mask secrets in {output}: {type(exc).__name__}"
    run.seconds = time.perf_counter() - start
    return run


def export_html(notebook: str | Path, html: str | Path | None = None) -> Path:
    """Write an executed notebook as standalone HTML (nbconvert; images are embedded) beside it or at ``html``."""
    from nbconvert import HTMLExporter

    notebook = Path(notebook)
    target = Path(html) if html else notebook.with_suffix(".html")
    body, _ = HTMLExporter().from_filename(str(notebook))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(body, encoding="utf-8")
    return target


class _KnownParameterNoise(logging.Filter):
    """Drops papermill's warnings about help comments it cannot parse: :func:`notebook_parameters` reads them."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not (msg.startswith("Unable to parse line") or msg.startswith("Passed unknown parameter"))


for _name in ("papermill", "papermill.translators"):  # logger filters do not reach child loggers: both
    logging.getLogger(_name).addFilter(_KnownParameterNoise())

"""Batch runs: every benchmark notebook for every model with papermill, then the paper tables (HTML too).

Executed copies go to ``<outputs>/notebooks/<model-slug>/<notebook>.ipynb`` (a declared task's to
``task_<task>.ipynb`` there, ``Suite.executed_notebook``, when the caller names it; a run with labelled variants to
``<notebook>_<variant>.ipynb``, :func:`executed_copies`; notebooks that declare no
``model`` parameter run once, to ``<outputs>/notebooks/<notebook>.ipynb``). A rerun resumes: the
notebooks skip finished items through the run store (``core.store.RunStore``), so re-executing them is all it takes. One
failing model or notebook is recorded and the others still run. No secret reaches a file: a judge URL's
credentials are stripped from the ``judge_base_url`` parameter (its password goes to the kernels as
``$THAI_EVAL_JUDGE_API_KEY``, the judge's Bearer key), and every secret in use is masked in the executed notebooks
and ``batch_report.json``. Command line::

    python -m thai_eval_utils.notebook_runs --models "embedded /models/qwen" --limit 20
    python -m thai_eval_utils.notebook_runs --models /models/llama-70b --dtype bfloat16 --device-map auto
    python -m thai_eval_utils.notebook_runs --demo

The benchmark notebooks are the registry's suites' (:attr:`~thai_eval_utils.core.benchmark.Suite.notebooks`, in
suite order), each given its suite's own parameters (``Suite.notebook_parameters``); the demo's comparisons are
the suites' (``Suite.demo_comparison``). This module is the order of the runs and the parameters each notebook is
given; one notebook's execution (the
parameters it declares, the secret handling of those parameters and of the executed copy, the HTML export) is
:mod:`thai_eval_utils.notebook_exec`, whose names are importable from here too. The tables it ends with are built
in :mod:`thai_eval_utils.paper`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import DemoComparison, Suite
from thai_eval_utils.backend.client_options import JUDGE_KEY_ENV  # the kernels' judge key (backend.load_judge)
from thai_eval_utils.backend.model_sources import model_options  # torch-free (backend.models loads torch)
from thai_eval_utils.core.provenance import scrub_strings, slugify, split_credentials
from thai_eval_utils.notebook_exec import (  # noqa: F401 - one notebook's execution; its names are batch's too
    NotebookRun,
    execute,
    export_html,
    filter_parameters,
    notebook_parameters,
    scrub_notebook,
)


def benchmark_notebooks() -> tuple[str, ...]:
    """The benchmark notebooks under ``notebooks/``, in the order they run: every registered suite's, in suite
    order (also ``batch.BENCHMARK_NOTEBOOKS``)."""
    return tuple(dict.fromkeys(nb for suite in registry.suites().values() for nb in suite.notebooks))


def suite_parameters(options: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Notebook -> its suite's own parameters for a whole run (``Suite.notebook_parameters``) given the run's
    common ``options``."""
    return {
        nb: suite.notebook_parameters((), options) for suite in registry.suites().values() for nb in suite.notebooks
    }


def executed_copies(suite: Suite, variants: str | Sequence[str] | None = None) -> dict[str, str]:
    """Each of the suite's notebooks -> the file name of its executed copy (``Suite.executed_notebook``). A run with
    some of the suite's labelled variants (``Suite.variants``; ``variants``: the run's ``variant`` parameter, a
    list or a comma-separated string) keeps a copy of its own, the variants as a suffix in the suite's order
    (``thai_h6_gsm8k-chat.ipynb``), so that it never overwrites the published protocol's copy of the same model."""
    asked = variants.replace(",", " ").split() if isinstance(variants, str) else list(variants or ())
    suffix = "".join(f"_{v}" for v in suite.variants if v in asked)
    copies = {nb: suite.executed_notebook(nb) for nb in suite.notebooks}
    return {nb: f"{Path(name).stem}{suffix}{Path(name).suffix}" for nb, name in copies.items()}


def __getattr__(name: str) -> Any:
    """``BENCHMARK_NOTEBOOKS``: :func:`benchmark_notebooks` (read when asked, so a user's suites count)."""
    if name == "BENCHMARK_NOTEBOOKS":
        return benchmark_notebooks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The notebook that rebuilds the papers' tables and places the runs beside them; runs last.
PAPER_NOTEBOOK = "paper_tables.ipynb"
#: ``--demo``: the embedded model (shipped with the toolkit) on a few items per task, no judge.
DEMO_MODELS = ("embedded",)
DEMO_LIMIT = 2
#: ``--demo``: short, greedy generations, so a 2-core CPU finishes in minutes (passed only to notebooks that
#: declare them). Greedy lets the dialect notebook batch its prompts; the paper's seeded sampling (its default)
#: generates one prompt at a time so that every item is reproducible on its own.
#: A suite whose notebooks name these otherwise maps them (``Suite.notebook_parameters``); ``runs``: the suites that
#: repeat runs do two in the demo instead of their default; ``demo``: a suite may run a small slice of its tasks
#: (``Suite.notebook_parameters`` reads it; no notebook declares it).
DEMO_PARAMETERS = {"max_new_tokens": 48, "greedy": True, "runs": 2, "demo": True}
#: ``--demo``: a suite's notebook run again with other settings, then ``compare_runs.ipynb`` compares the two runs
#: (``Suite.demo_comparison``).
COMPARE_NOTEBOOK = "compare_runs.ipynb"


@dataclass
class NotebookRunsReport:
    """Every notebook run of a batch and where its products are."""

    runs: list[NotebookRun]
    outputs: str
    html: str | None = None

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs)

    @property
    def failures(self) -> list[NotebookRun]:
        return [r for r in self.runs if not r.ok]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "outputs": self.outputs, "html": self.html, "runs": [asdict(r) for r in self.runs]}

    def summary(self) -> str:
        """A few lines: each run's status, then where the tables, figures and executed notebooks are."""
        out = Path(self.outputs)
        lines = [str(r) for r in self.runs]
        lines += [
            f"{sum(r.ok for r in self.runs)}/{len(self.runs)} notebook runs succeeded.",
            f"tables:   {out / 'tables'}  (CSV, Markdown, LaTeX)",
            f"figures:  {out / 'figures'}  (PNG, SVG)",
            f"executed notebooks: {out / 'notebooks'}",
        ]
        if self.html:
            lines.append(f"paper tables as HTML (opens without Jupyter): {self.html}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _for_kernel(path: str | Path, nb_dir: Path) -> str:
    """A path given relative to this process's folder, as the kernels see it (their cwd is ``nb_dir``):
    relative to ``nb_dir`` inside the project (``../outputs``), absolute elsewhere."""
    target = Path(path).resolve()
    return os.path.relpath(target, nb_dir) if target.is_relative_to(nb_dir.parent) else str(target)


def _declares_model(path: Path) -> bool:
    """Whether a notebook runs once per model (it declares ``model``; a missing or unreadable one counts as yes)."""
    try:
        return "model" in notebook_parameters(path)
    except Exception:  # noqa: BLE001 - execute() records the problem per model
        return True


def run_models(
    models: Sequence[str],
    *,
    notebooks: Sequence[str] | None = None,
    limit: int | None = None,
    data: str | None = None,
    judge: str | None = None,
    judge_base_url: str | None = None,
    outputs: str | Path = "outputs",
    extra_parameters: Mapping[str, Any] | None = None,
    per_notebook: Mapping[str, Mapping[str, Any]] | None = None,
    executed: Mapping[str, str] | None = None,
    notebooks_dir: str | Path = "notebooks",
    paper_notebook: str | None = PAPER_NOTEBOOK,
    kernel_name: str | None = None,
    verbose: bool = True,
) -> NotebookRunsReport:
    """Execute each benchmark notebook for each model, then the paper-tables notebook and its HTML export.

    Args:
        models: model specs as ``models.load_model`` takes them (``"embedded"``, a folder, ``openai:<id>``).
        notebooks: notebook file names under ``notebooks_dir`` (None: :func:`benchmark_notebooks`).
        limit: items per task (``limit`` parameter); None = all.
        data: data folder (``data_source`` parameter); None keeps each notebook's default (the shipped samples).
        judge: ThaiCLI judge model (``judge_model``); ``judge_base_url`` its OpenAI-compatible endpoint. Credentials
            in that URL are stripped from the parameter; its password reaches the kernels as ``$THAI_EVAL_JUDGE_API_KEY``
            (the judge's Bearer key) unless that variable is already set.
        outputs: the outputs folder; passed to the notebooks as ``outputs_dir`` relative to ``notebooks_dir``.
        extra_parameters: more parameters, each passed to the notebooks that declare it.
        per_notebook: notebook name -> parameters for that notebook only (a suite's own,
            :func:`suite_parameters`), over ``extra_parameters``.
        executed: notebook name -> the file name of its executed copy under ``<outputs>/notebooks/<model>/``
            (``Suite.executed_notebook``: each declared task its own); default: the notebook's name.
        notebooks_dir: folder of the notebooks; also the kernels' working directory.
        paper_notebook: run last, once (None to skip); exported to HTML.
        kernel_name: Jupyter kernel (default: the notebook's).
        verbose: print each run's status as it ends and the summary.

    Returns:
        The :class:`NotebookRunsReport` (also written to ``<outputs>/notebooks/batch_report.json``).
    """
    nb_dir, out = Path(notebooks_dir).resolve(), Path(outputs).resolve()
    env: dict[str, str] = {}
    if judge_base_url is not None:
        judge_base_url, password = split_credentials(judge_base_url)
        if password and not os.environ.get(JUDGE_KEY_ENV):
            env[JUDGE_KEY_ENV] = password
    shared = {
        "limit": limit,
        "data_source": None if data is None else _for_kernel(data, nb_dir),
        "judge_model": judge,
        "judge_base_url": judge_base_url,
        "outputs_dir": _for_kernel(out, nb_dir),
        **(extra_parameters or {}),
    }
    runs: list[NotebookRun] = []

    def record(run: NotebookRun) -> None:
        runs.append(run)
        if verbose:
            print(run, flush=True)

    for name in benchmark_notebooks() if notebooks is None else notebooks:
        path = nb_dir / name
        per_model = _declares_model(path)
        for model in models if per_model else [None]:
            folder = out / "notebooks" / (slugify(model) if model else "")
            params = {**shared, **(per_notebook or {}).get(name, {}), **({"model": model} if model else {})}
            copy = folder / (executed or {}).get(name, name)
            record(execute(path, copy, params, cwd=nb_dir, model=model, kernel_name=kernel_name, env=env))
    report = NotebookRunsReport(runs, str(out))
    if paper_notebook:
        executed = out / "notebooks" / paper_notebook
        paper_run = execute(nb_dir / paper_notebook, executed, shared, cwd=nb_dir, kernel_name=kernel_name, env=env)
        record(paper_run)
        if executed.exists():
            try:
                report.html = str(export_html(executed))
            except Exception as exc:  # noqa: BLE001
                paper_run.status, paper_run.error = "failed", f"HTML export: {type(exc).__name__}: {exc}"
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    report_json = json.dumps(scrub_strings(report.to_dict()), indent=2, default=str)
    (out / "notebooks" / "batch_report.json").write_text(report_json + "\n")
    if verbose:
        print(report.summary(), flush=True)
    return report


def run_suites(
    models: Sequence[str],
    *,
    outputs: str | Path = "outputs",
    extra_parameters: Mapping[str, Any] | None = None,
    paper_notebook: str | None = PAPER_NOTEBOOK,
    verbose: bool = True,
    **options: Any,
) -> NotebookRunsReport:
    """Every registered suite's notebooks for every model, suite by suite (each with its own parameters and its own
    executed copies: two declared tasks of one model keep two notebooks), then the paper tables; ``options`` as
    :func:`run_models` takes them (limit, data, judge, notebooks_dir...). One report for the whole batch."""
    runs: list[NotebookRun] = []
    for suite in registry.suites().values():
        own = suite.notebook_parameters((), extra_parameters)
        part = run_models(
            models,
            notebooks=suite.notebooks,
            outputs=outputs,
            extra_parameters=extra_parameters,
            per_notebook={nb: own for nb in suite.notebooks},
            executed=executed_copies(suite, (extra_parameters or {}).get("variant")),
            paper_notebook=None,
            verbose=False,
            **options,
        )
        runs += part.runs
        for run in part.runs if verbose else ():
            print(run, flush=True)
    paper = run_models(
        [],
        notebooks=(),
        outputs=outputs,
        extra_parameters=extra_parameters,
        paper_notebook=paper_notebook,
        verbose=False,
        **options,
    )
    report = NotebookRunsReport(runs + paper.runs, paper.outputs, paper.html)
    out = Path(outputs).resolve()
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    (out / "notebooks" / "batch_report.json").write_text(
        json.dumps(scrub_strings(report.to_dict()), indent=2, default=str) + "\n"
    )
    if verbose:
        print(report.summary(), flush=True)
    return report


def demo_comparisons() -> list[tuple[Suite, DemoComparison]]:
    """The registered suites' demo comparisons (``Suite.demo_comparison``), in suite order."""
    return [(suite, plan) for suite in registry.suites().values() if (plan := suite.demo_comparison()) is not None]


def demo_comparison(
    model: str,
    *,
    limit: int | None,
    outputs: str | Path = "outputs",
    notebooks_dir: str | Path = "notebooks",
    extra_parameters: Mapping[str, Any] | None = None,
    verbose: bool = True,
    done: Sequence[str] | None = None,
) -> list[NotebookRun]:
    """The demo's comparisons: for each suite's :class:`~thai_eval_utils.core.benchmark.DemoComparison` (whose
    notebook is in ``done``, the notebooks that ran ok; None: every one), the notebook again with the plan's
    parameters (into ``<outputs>/demo_compare``, so the first run's tables stay), then ``compare_runs.ipynb`` on
    the two runs of the same model."""
    nb_dir, out = Path(notebooks_dir).resolve(), Path(outputs).resolve()
    out_b = out / "demo_compare"
    runs: list[NotebookRun] = []
    for suite, plan in demo_comparisons():
        if done is not None and plan.notebook not in done:
            continue
        rerun = {
            "limit": limit,
            **(extra_parameters or {}),
            **suite.notebook_parameters((), extra_parameters),
            "model": model,
            **plan.parameters,
            "outputs_dir": _for_kernel(out_b, nb_dir),
        }
        executed = out / "notebooks" / slugify(model) / f"{Path(plan.notebook).stem}_{plan.variant}.ipynb"
        runs.append(execute(nb_dir / plan.notebook, executed, rerun, cwd=nb_dir, model=model))
        compare = {
            "outputs_dir": _for_kernel(out, nb_dir),
            "model_a": model,
            "where_a": dict(plan.where_a),
            "runs_b": [_for_kernel(out_b / "runs", nb_dir)],
            "benchmarks": [suite.name],
            "name": f"compare_{slugify(model)}_{plan.name}",
        }
        runs.append(execute(nb_dir / COMPARE_NOTEBOOK, out / "notebooks" / COMPARE_NOTEBOOK, compare, cwd=nb_dir))
    if verbose:
        for r in runs:
            print(r, flush=True)
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status (1 if any notebook failed)."""
    parser = argparse.ArgumentParser(
        prog="python -m thai_eval_utils.notebook_runs", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--models", nargs="+", default=[], help='model specs, e.g. --models "embedded /path/to/model"')
    parser.add_argument("--limit", type=int, default=None, help="items per task (default: all)")
    parser.add_argument("--data", default=None, help="data folder passed as data_source (default: each notebook's)")
    parser.add_argument("--judge", default=None, help="judge model id (judge_model) of the notebooks that judge")
    parser.add_argument("--judge-base-url", default=None, help="the judge's OpenAI-compatible base URL")
    parser.add_argument(
        "--dtype",
        default=None,
        help="weights dtype of local models: float32, bfloat16, float16 or auto "
        "(default: float32 on CPU, bfloat16 on GPU)",
    )
    parser.add_argument(
        "--device-map", default=None, help='weight placement of local models, e.g. "auto" over all GPUs'
    )
    parser.add_argument("--outputs", default="outputs", help="outputs folder (default: outputs)")
    parser.add_argument("--notebooks-dir", default="notebooks", help="folder of the notebooks (default: notebooks)")
    parser.add_argument("--notebooks", nargs="+", default=None, help="benchmark notebooks to run (default: all)")
    parser.add_argument("--no-paper", action="store_true", help="skip the paper-tables notebook")
    parser.add_argument(
        "--demo",
        action="store_true",
        help=f"demo: models {' '.join(DEMO_MODELS)}, limit {DEMO_LIMIT}, {DEMO_PARAMETERS}",
    )
    args = parser.parse_args(argv)
    models = [m for spec in args.models for m in spec.split()]
    limit, extra = args.limit, {}
    if args.demo:
        models = models or list(DEMO_MODELS)
        limit = DEMO_LIMIT if limit is None else limit
        extra = dict(DEMO_PARAMETERS)
    if args.dtype is not None or args.device_map is not None:  # the notebooks' options parameter (run_options)
        try:  # a bad dtype fails now, not once per notebook
            extra["options"] = {"model": model_options(dtype=args.dtype, device_map=args.device_map)}
        except ValueError as exc:
            parser.error(str(exc))
    if not models:
        parser.error("give --models (or --demo)")
    common = dict(
        limit=limit,
        data=args.data,
        judge=args.judge,
        judge_base_url=args.judge_base_url,
        outputs=args.outputs,
        notebooks_dir=args.notebooks_dir,
        extra_parameters=extra,
        paper_notebook=None if args.no_paper else PAPER_NOTEBOOK,
    )
    if args.notebooks:  # the notebooks named, each with its suite's parameters
        report = run_models(models, notebooks=args.notebooks, per_notebook=suite_parameters(extra), **common)
    else:
        report = run_suites(models, **common)
    done = [r.notebook for r in report.runs if r.ok]  # the first runs to compare with
    compared = (
        demo_comparison(
            models[0],
            limit=limit,
            outputs=args.outputs,
            notebooks_dir=args.notebooks_dir,
            extra_parameters=extra,
            done=done,
        )
        if args.demo
        else []
    )
    return 0 if report.ok and all(r.ok for r in compared) else 1


if __name__ == "__main__":
    sys.exit(main())

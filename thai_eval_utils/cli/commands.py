"""The ``thai-eval`` subcommands: each has an ``add_<name>(subparsers)`` that declares its options (with an
example in its help) and a handler that returns the exit status and ends with a summary table.

``run`` is what ``make tables`` did with ``python -m thai_eval_utils.notebook_runs``: the benchmark notebooks for every
model through papermill (:func:`thai_eval_utils.notebook_runs.run_models`), then the paper-tables notebook. A rerun resumes:
the notebooks skip every item the results store already holds.

Benchmarks are the registry's suites (:mod:`thai_eval_utils.core.registry`): ``--benchmarks`` takes suite names or
``<suite>/<task>``, and ``--tasks-dir DIR`` adds the user's own task files (``thai-eval``'s entry point includes
them before any name is read, and the notebooks' kernels see them through ``$THAI_EVAL_TASKS``).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from tabulate import tabulate
from tqdm.auto import tqdm

from thai_eval_utils import notebook_runs
from thai_eval_utils.cli.dry_run import COLUMNS as DRY_RUN_COLUMNS
from thai_eval_utils.cli.dry_run import Tokenizer, dry_run_rows, load_tokenizer
from thai_eval_utils.cli.dry_run_cost import (
    add_costs,
    assumptions,
    cost_columns,
    find_price,
    price_arg,
    prices_file_arg,
)
from thai_eval_utils.cli.data_command import add_revision
from thai_eval_utils.cli.engine_args import add_engine_arguments, engine_specs, planned_servers, served_engine
from thai_eval_utils.cli.run_config import (
    RECORD_NAME,
    add_config,
    check_suite_options,
    config_text,
    notebook_options,
    resolved_config,
    write_config,
)
from thai_eval_utils.cli.runs_table import runs_table
from thai_eval_utils.core import registry
from thai_eval_utils.core.batch_files import batch_folders
from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.backend.model_sources import check_dtype
from thai_eval_utils.core.provenance import now_utc, outputs_dir, scrub_strings, slugify
from thai_eval_utils.core.runs import list_runs
from thai_eval_utils.export import FORMATS, export
from thai_eval_utils.paper.own_runs import skipped_runs
from thai_eval_utils.report.command import add_report_arguments, report_command
from thai_eval_utils.sources.catalogue import require_present
from thai_eval_utils.sources.locations import FULL
from thai_eval_utils.cli.thinking_args import add_thinking, thinking_parameters

#: The repository this package sits in (an editable install): its notebooks and shipped data.
REPO = Path(__file__).resolve().parents[2]
_FORMATTER = argparse.RawDescriptionHelpFormatter


def _outputs(args: argparse.Namespace) -> Path:
    """``--outputs``, else ``$THAI_EVAL_OUTPUTS``, else ``./outputs``."""
    return Path(args.outputs) if args.outputs else outputs_dir()


def _add_outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--outputs", default=None, metavar="DIR", help="outputs folder (default: $THAI_EVAL_OUTPUTS, else ./outputs)"
    )


def _benchmarks(text: str) -> list[str]:
    """``--benchmarks``: comma- or space-separated suite names or ``<suite>/<task>`` (checked against the registry
    by :func:`thai_eval_utils.cli.main`, after ``--tasks-dir`` has registered the user's suites)."""
    names = [b for b in text.replace(",", " ").split() if b]
    if not names:
        raise argparse.ArgumentTypeError(f"no benchmark given; choose from {_names()}")
    return names


def _names() -> str:
    """The registered names for help texts (a broken task file shows as its error, reported again when used)."""
    try:
        return ", ".join(registry.names())
    except ThaiEvalError as exc:
        return f"(the registry could not load: {exc})"


def _add_benchmarks(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--benchmarks",
        type=_benchmarks,
        default=None,
        metavar="LIST",
        help=f"comma-separated suites or <suite>/<task>: {_names()} (default: every suite)",
    )


def _add_tasks_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tasks-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of your own task files "
        "(*.py declaring SUITE, TASK or TASKS), or one such file; repeatable (also $THAI_EVAL_TASKS)",
    )


def use_tasks_dirs(dirs: Sequence[str]) -> None:
    """``--tasks-dir``: register the user's task files in this process (:func:`registry.include_path`) and add them
    to ``$THAI_EVAL_TASKS``, so the notebooks' kernels (which inherit the environment) see the same suites."""
    if not dirs:
        return
    paths = [str(Path(d).expanduser().resolve()) for d in dirs]
    registry.include_path(*paths)
    current = [p for p in os.environ.get(registry.TASKS_ENV, "").split(os.pathsep) if p]
    os.environ[registry.TASKS_ENV] = os.pathsep.join(dict.fromkeys([*current, *paths]))


def selected(args: argparse.Namespace) -> list[tuple[Suite, tuple[str, ...]]]:
    """The suites (and tasks) ``--benchmarks`` names; every suite when it is not given."""
    return registry.resolve(args.benchmarks or registry.default_benchmarks())


def _data_for(root: str | None, folder: str) -> str | None:
    """``--data DIR``: ``DIR/<folder>`` (a suite's ``data_folder``) when that folder exists (a data root like
    ``data/``), else ``DIR`` itself (one benchmark's folder); None keeps the notebook's default (the shipped samples)."""
    if root is None or root == FULL:
        return None
    sub = Path(root) / folder
    return str(sub) if folder and sub.is_dir() else root


def suite_data(args: argparse.Namespace, suite: Suite, tasks: tuple[str, ...]) -> str | None:
    """The data folder a suite runs on: ``--data full``: its fetched full data, checked present at the pinned (or
    ``--revision``) revision for the selected tasks; else :func:`_data_for`."""
    revisions = dict(getattr(args, "revision", None) or [])
    if args.data != FULL:
        if revisions:
            raise ThaiEvalError(
                "--revision applies to the full data sets: add --data full (and fetch them at that "
                "revision first: thai-eval data fetch ... --revision ...)"
            )
        return _data_for(args.data, suite.data_folder)
    return str(require_present(suite, tasks, revisions=revisions))


def print_table(frame: pd.DataFrame, title: str | None = None) -> None:
    """A summary table on stdout (``tabulate``'s plain grid; empty cells for missing values)."""
    if title:
        print(f"\n{title}")
    if frame.empty:
        print("(none)")
        return
    print(tabulate(frame.astype(object).where(frame.notna(), ""), headers="keys", tablefmt="simple", showindex=False))


# ---------------------------------------------------------------------------------------------------------- run
def add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run benchmarks on models (the notebooks via papermill), then the paper tables",
        description="Run the benchmark notebooks for every --model, then the paper tables. A rerun "
        "resumes: finished items are read back from the results store.",
        formatter_class=_FORMATTER,
        epilog="examples:\n  thai-eval run --model embedded --limit 2\n"
        f"  thai-eval run --model embedded --benchmarks {_first_suite()} --dry-run\n"
        "  thai-eval run --model embedded --tasks-dir my_tasks/ --benchmarks my_suite\n"
        "  thai-eval run --model /models/llama --model /models/qwen --dtype bfloat16 --device-map auto\n"
        "  thai-eval run --model completions:llama --base-url http://gpu:8000/v1 --tokenizer /models/llama\n"
        "  thai-eval run --model vllm:/models/llama --tp 2   # starts and stops the servers itself\n"
        "  thai-eval run --config docs/examples/eval.yaml --limit 2   # the file's settings, --limit overriding",
    )
    add_config(p)
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="SPEC",
        help='model spec (repeatable; required, here or as model.spec in --config): "embedded", a local HF folder, a .gguf file, "openai:<id>", '
        '"completions:<id>", "vllm:<folder or hub id>" or "sglang:<folder or hub id>" (servers started '
        "for the run and stopped after it)",
    )
    _add_benchmarks(p)
    _add_tasks_dir(p)
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        help="first N items per task (default: all); a limited run is marked partial in every table",
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="data root holding each suite's data folder ("
        f"{_data_folders()}), or one benchmark's folder, or 'full': the full data sets fetched by "
        "`thai-eval data fetch` at their pinned revisions; default: the shipped samples in data/",
    )
    add_revision(p)
    p.add_argument(
        "--judge",
        default=None,
        help="judge model id of the suites that judge (judge_model; default: the notebook's local demo judge)",
    )
    p.add_argument("--judge-base-url", default=None, help="the judge's OpenAI-compatible base URL")
    p.add_argument("--dtype", default=None, help="weights dtype of local models: float32, bfloat16, float16 or auto")
    p.add_argument("--device-map", default=None, help='weight placement of local models, e.g. "auto" over all GPUs')
    p.add_argument("--base-url", default=None, help="served models: the server URL (comma-separated replicas)")
    p.add_argument(
        "--tokenizer",
        default=None,
        help='served models: "embedded" or a tokenizer folder (token-id '
        "prompts; vllm:/sglang: models default to the model's folder); --dry-run counts tokens with it",
    )
    p.add_argument(
        "--order-tolerance",
        type=float,
        default=None,
        metavar="NATS",
        help="served models: the largest "
        "change of a log-likelihood with the request order that the order probe accepts (default 0.01)",
    )
    p.add_argument(
        "--no-order-probe",
        action="store_true",
        help="served models: skip the order probe (a few "
        "requests scored in two orders before a log-likelihood run, refusing prefix-cached servers whose "
        "numbers change); the run cards record that it was skipped",
    )
    p.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        metavar="N",
        help="cap every generation of every suite "
        "at N tokens; default: each protocol's own. A quick look, not the papers' protocol: the run configs "
        "record it",
    )
    p.add_argument(
        "--greedy", action="store_true", help="greedy generation where a protocol samples (lets it batch prompts)"
    )
    p.add_argument(
        "--runs",
        type=int,
        default=None,
        metavar="N",
        help="repeated runs, each with its own seed, for the "
        "suites that repeat their tasks (SEA-HELM: default its eight); other suites ignore it",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME",
        help="a labelled variant for instruct "
        f"and reasoning models, run instead of the published protocol where it applies ({_variant_names()}; "
        "repeatable): scored under its own task names and signatures, never in the averages or the paper "
        "tables (docs/protocol_notes.md)",
    )
    add_engine_arguments(p)
    add_thinking(p)
    _add_outputs(p)
    p.add_argument(
        "--batch",
        action="store_true",
        help="judge, and answer with an openai: model, through the OpenAI "
        "Batch API (half the price): submit, and a later run of the same command collects "
        "(docs/batch_mode.md; `thai-eval batch status|cancel`)",
    )
    p.add_argument(
        "--batch-wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --batch: wait this long for the batch before going on (default: look once)",
    )
    p.add_argument(
        "--batch-file-out",
        default=None,
        metavar="PATH",
        help="write the judge requests still needed to "
        "this Batch API JSONL file, an openai: model's answer requests to PATH's <stem>.answers.jsonl (no "
        "network; e.g. for `vllm run-batch`)",
    )
    p.add_argument(
        "--batch-file-in",
        default=None,
        metavar="PATH",
        help="read judge replies and answers from this batch output file (`vllm run-batch`'s) before anything else",
    )
    p.add_argument("--notebooks-dir", default=str(REPO / "notebooks"), metavar="DIR", help="the notebooks' folder")
    p.add_argument("--no-paper", action="store_true", help="skip the paper-tables notebook at the end")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print per task the documents, requests and tokens the run "
        "would compute (only the tokenizer is loaded, no weights), then exit",
    )
    p.add_argument(
        "--price-in",
        type=price_arg,
        default=None,
        metavar="USD",
        help="with --dry-run: US dollars per 1 "
        "million input tokens of the API model and judge (docs/batch_mode.md, Cost before the run)",
    )
    p.add_argument(
        "--price-out",
        type=price_arg,
        default=None,
        metavar="USD",
        help="with --dry-run: US dollars per 1 million output tokens",
    )
    p.add_argument(
        "--prices",
        type=prices_file_arg,
        default=None,
        metavar="FILE",
        help="with --dry-run: a JSON file "
        '{model id: {"input": USD, "output": USD}} per 1M tokens (as templates/prices.json); with --judge '
        "and no price, the shipped table prices the judge",
    )
    p.set_defaults(handler=cmd_run, suite_options=None, prices_file=None)  # suites / prices.file: --config only


def cmd_run(args: argparse.Namespace) -> int:
    models = [m for spec in args.model for m in spec.split()]
    check_suite_options(args, args.config)
    thinking_parameters(args)  # a bad thinking option fails here, once
    check_dtype(args.dtype)  # a bad dtype fails here, once, not in every notebook
    if args.dry_run:
        return _dry_run(args, models)
    out = _outputs(args)
    recorded = write_config(out, resolved_config(args))
    print(f"thai-eval: the resolved run configuration is in {recorded}")
    extra = {
        "max_new_tokens": args.max_new_tokens,
        "greedy": True if args.greedy else None,  # None: the notebook's default (batch drops it)
        "runs": args.runs,  # suites that repeat runs take it (Suite.notebook_parameters); None: their default
        "variant": _variants(args),  # the notebooks that declare it (Suite.variants); None: not passed
        "options": notebook_options(args),  # model loading, thinking, batch mode (thai_eval_utils.run_options)
    }
    start = now_utc()
    runs: list[notebook_runs.NotebookRun] = []
    engines = engine_specs(models)
    plain = [m for m in models if not engine_specs([m])]
    if plain:
        runs += _run_suites(args, plain, extra, out)
    for spec in engines:  # each served model's servers live through all its suites, then stop
        with served_engine(args, spec, out, _loglikelihood(args)) as (served, parameters):
            runs += _run_suites(args, [served], {**extra, "options": notebook_options(args, parameters)}, out)
    html = None
    if not args.no_paper:
        paper = notebook_runs.run_models([], notebooks=(), outputs=out, notebooks_dir=args.notebooks_dir, verbose=False)
        runs += paper.runs
        html = paper.html
    final = notebook_runs.NotebookRunsReport(runs, str(out.resolve()), html)
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    (out / "notebooks" / "batch_report.json").write_text(json.dumps(scrub_strings(final.to_dict()), indent=2) + "\n")
    print("\n" + final.summary())
    print_table(runs_table(out, since=start), f"runs written or resumed by this command (under {out / 'runs'}):")
    for line in batch_messages(out, since=start):  # a batch still running: how to collect it
        print(line)
    return 0 if final.ok else 1


def _variants(args: argparse.Namespace) -> list[str] | None:
    """``--variant``: each must be a variant of a selected suite (``Suite.variants``); None when none is asked."""
    if not args.variant:
        return None
    known = {v for suite, _ in selected(args) for v in suite.variants}
    unknown = [v for v in args.variant if v not in known]
    if unknown:
        raise ThaiEvalError(
            f"--variant {unknown[0]!r} is no variant of the selected benchmarks; they have: "
            f"{', '.join(sorted(known)) or 'none'}"
        )
    return list(dict.fromkeys(args.variant))


def _run_suites(
    args: argparse.Namespace, models: list[str], extra: dict[str, Any], out: Path
) -> list[notebook_runs.NotebookRun]:
    """Every selected suite's notebooks for ``models`` (no paper tables); each run's status as it ends."""
    runs: list[notebook_runs.NotebookRun] = []
    for suite, tasks in tqdm(selected(args), desc="benchmarks", unit="benchmark"):
        own = {**suite.notebook_parameters(tasks, extra), **(args.suite_options or {}).get(suite.name, {})}
        report = notebook_runs.run_models(
            models,
            notebooks=suite.notebooks,
            limit=args.limit,
            data=suite_data(args, suite, tasks),
            judge=args.judge,
            judge_base_url=args.judge_base_url,
            outputs=out,
            extra_parameters=extra,
            per_notebook={nb: own for nb in suite.notebooks},
            executed=notebook_runs.executed_copies(suite, extra["variant"]),  # a variant run's: its own copy
            notebooks_dir=args.notebooks_dir,
            paper_notebook=None,
            verbose=False,
        )
        for run in report.runs:
            tqdm.write(str(run))
        runs += report.runs
    return runs


def _loglikelihood(args: argparse.Namespace) -> bool:
    """Whether the selected suites, as run (with ``--variant``), score log-likelihoods (their dry-run rows count
    requests beyond generations), which turns the started servers' prefix caching off by default; True when that
    cannot be told."""
    if args.prefix_caching is not None:
        return True  # the flag decides; the servers get it either way
    try:
        suites = selected(args)
        data = {s.name: Path(suite_data(args, s, t) or REPO / "data" / s.data_folder) for s, t in suites}
        rows = dry_run_rows(suites, data, Tokenizer(None, "none"), limit=1, variants=_variants(args) or ())
    except Exception:  # noqa: BLE001 - unknown: keep the safe default (caching off)
        return True
    return any((r.get("requests") or 0) > (r.get("generations") or 0) for r in rows if r.get("benchmark") != "total")


def batch_messages(outputs: Path, *, since: str) -> list[str]:
    """What batch mode said in the runs since ``since`` (each run folder's ``batch_log.jsonl``: batches submitted,
    collected, still running with how to collect them; the judge's and the answers' alike), each line prefixed with
    its run folder."""
    lines = []
    for run in list_runs(outputs):
        for folder in batch_folders(run.dir):  # the run's own and its parts' (a judged metric's judge)
            where = folder.root.relative_to(Path(outputs) / "runs")
            lines += [f"{where}: {m}" for m in folder.messages(since)]
    return lines


def _dry_run(args: argparse.Namespace, models: Sequence[str]) -> int:
    suites = selected(args)
    data = {s.name: Path(suite_data(args, s, t) or REPO / "data" / s.data_folder) for s, t in suites}
    variants = _variants(args) or ()  # counted as the run would run them (Suite.dry_run)
    priced = args.judge is not None or any(v is not None for v in (args.price_in, args.price_out, args.prices))
    notes: list[str] = []
    for model in models:
        engine = engine_specs([model])
        tok = load_tokenizer(engine[0].model if engine else model, args.tokenizer)
        rows = dry_run_rows(
            suites, data, tok, limit=args.limit, max_new_tokens=args.max_new_tokens, runs=args.runs, variants=variants
        )
        columns = DRY_RUN_COLUMNS
        if priced:
            options = {"price_in": args.price_in, "price_out": args.price_out, "table": args.prices}
            model_price, judge_price = find_price(model, **options), find_price(args.judge, judge=True, **options)
            rows = add_costs(rows, tokenizer_source=tok.source, model=model_price, judge=judge_price)
            columns = cost_columns(DRY_RUN_COLUMNS)
            notes.append(f"{model}: {assumptions(model_price, judge_price)}")
        frame = pd.DataFrame(rows, columns=columns)
        print_table(
            frame,
            f"dry run for {model} (tokenizer: {tok.source}; limit: {args.limit or 'none'}); nothing "
            "was computed or written:",
        )
    print(
        "\nfed_tokens: what lm-eval would feed (one forward per request); tree_tokens: what thai-eval's engine runs "
        "(shared prefixes once). Generations add up to max_new_tokens each."
    )
    for line in notes:
        print(line)
    print(
        "\nthe resolved run configuration (thai-eval run --config takes this file; recorded in "
        f"{_outputs(args) / RECORD_NAME} when it runs):"
    )
    print(config_text(resolved_config(args)))
    for spec in engine_specs(models):
        print(
            f"\nservers `thai-eval run` would start for {spec.engine}:{spec.model} (none started; ports chosen then):"
        )
        for line in planned_servers(args, spec, _outputs(args), _loglikelihood(args)):
            print(f"  {line}")
    return 0


# --------------------------------------------------------------------------------------------------------- runs
def add_runs(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "runs",
        help="list the stored runs",
        formatter_class=_FORMATTER,
        description="The stored runs under <outputs>/runs: model, benchmark, task, config id, setting, "
        "items done / total, limit, partial, finished, date, folder.",
        epilog="examples:\n  thai-eval runs\n  thai-eval runs --model gemma --outputs /data/thai-eval",
    )
    p.add_argument("--model", action="append", default=[], help="only runs whose model name or folder contains this")
    p.add_argument("--csv", default=None, metavar="FILE", help="also write the table as CSV")
    _add_tasks_dir(p)
    _add_outputs(p)
    p.set_defaults(handler=cmd_runs)


def cmd_runs(args: argparse.Namespace) -> int:
    out = _outputs(args)
    table = runs_table(out, models=args.model)
    print_table(table.drop(columns=["where"]), f"{len(table)} runs under {out / 'runs'}:")
    print(
        "items: records stored; total: the split's documents x per_item (records per document: one per repeated "
        "run), so both count stored records"
    )
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"written: {args.csv}")
    return 0


# ------------------------------------------------------------------------------------------------------ compare
def add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two models' stored runs (paired bootstrap, Holm)",
        formatter_class=_FORMATTER,
        description="Run notebooks/compare_runs.ipynb on two models' latest stored runs: one row per "
        "headline score with the paired difference, its interval and Holm-adjusted p-value.",
        epilog="examples:\n  thai-eval compare embedded /models/qwen\n"
        f"  thai-eval compare embedded /models/qwen --benchmarks {_first_suite()} --resamples 2000",
    )
    p.add_argument("a", help="model A (name or spec as stored)")
    p.add_argument("b", help="model B")
    _add_benchmarks(p)
    _add_tasks_dir(p)
    p.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples (default 10000)")
    _add_outputs(p)
    p.add_argument("--notebooks-dir", default=str(REPO / "notebooks"), metavar="DIR", help="the notebooks' folder")
    p.set_defaults(handler=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    out = _outputs(args).resolve()
    nb_dir = Path(args.notebooks_dir).resolve()
    stem = slugify(f"compare_{args.a}_vs_{args.b}")
    params = {
        "model_a": args.a,
        "model_b": args.b,
        "n_resamples": args.resamples,
        "benchmarks": list(args.benchmarks or registry.default_benchmarks()),
        "outputs_dir": str(out),
        "name": stem,
    }
    with tqdm(total=1, desc="compare_runs.ipynb") as bar:
        run = notebook_runs.execute(
            nb_dir / notebook_runs.COMPARE_NOTEBOOK, out / "notebooks" / f"{stem}.ipynb", params, cwd=nb_dir
        )
        bar.update()
    print(run)
    table = out / "tables" / f"{stem}.csv"
    if run.ok and table.exists():
        print_table(pd.read_csv(table), f"{table}:")
    return 0 if run.ok else 1


# ------------------------------------------------------------------------------------------------------- tables
#: The columns of the skipped runs ``tables`` prints (the folder is in the notebook's table).
SKIPPED_SHOWN = ["model", "benchmark", "setting", "config_id", "finished", "reason", "detail"]


def add_tables(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tables",
        help="rebuild the papers' tables with the stored runs beside them",
        formatter_class=_FORMATTER,
        description="Run notebooks/paper_tables.ipynb: the published tables re-checked, this toolkit's "
        "runs below them (each model's latest finished run per benchmark and setting; partial runs "
        "marked), CSV/Markdown/LaTeX, figures and an HTML export; then the runs left out and why.",
        epilog="examples:\n  thai-eval tables\n  thai-eval tables --outputs /data/thai-eval",
    )
    _add_outputs(p)
    p.add_argument("--notebooks-dir", default=str(REPO / "notebooks"), metavar="DIR", help="the notebooks' folder")
    p.set_defaults(handler=cmd_tables)


def cmd_tables(args: argparse.Namespace) -> int:
    out = _outputs(args)
    with tqdm(total=1, desc=notebook_runs.PAPER_NOTEBOOK) as bar:
        report = notebook_runs.run_models(
            [], notebooks=(), outputs=out, notebooks_dir=args.notebooks_dir, verbose=False
        )
        bar.update()
    print(report.summary())
    written = sorted((out / "tables").glob("paper_*.csv")) if (out / "tables").is_dir() else []
    print_table(
        pd.DataFrame({"table": [p.name for p in written], "rows": [len(pd.read_csv(p)) for p in written]}),
        f"tables in {out / 'tables'}:",
    )
    print_table(skipped_runs(out)[SKIPPED_SHOWN], "stored runs not in the tables, and why:")
    return 0 if report.ok else 1


# ------------------------------------------------------------------------------------------------------- export
def add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="export stored runs for lm-eval's tools, the Thai LLM Leaderboard, Parquet or SEA-HELM",
        formatter_class=_FORMATTER,
        description="Write stored runs in another tool's format: lm-eval (results_<time>.json and "
        "samples_<task>_<time>.jsonl per task of the suites that export to it, lm-evaluation-harness "
        "0.4.13's schema), thai-llm-leaderboard (one results JSON per model), parquet (one details table "
        "per suite), SEA-HELM's run_<r>/ folders (run config, results JSON and per-row inference files, "
        "for the suites that export to it).",
        epilog="examples:\n  thai-eval export --format lm-eval\n"
        "  thai-eval export --format thai-llm-leaderboard --model gemma --to exports/leaderboard\n"
        "  thai-eval export --format parquet --to exports/parquet",
    )
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--model", action="append", default=[], help="only runs whose model name or folder contains this")
    p.add_argument("--to", default=None, metavar="DIR", help="target folder (default: <outputs>/exports/<format>)")
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="data to rebuild lm-eval's documents and arguments from, for records stored before they kept what "
        "was sent (default: the folder the run card names, else the shipped samples)",
    )
    _add_tasks_dir(p)
    _add_outputs(p)
    p.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    out = _outputs(args)
    to = Path(args.to) if args.to else out / "exports" / args.format
    files = export(args.format, to, outputs=out, models=args.model, data=args.data, progress=True)
    rows = [{"file": str(f), "bytes": os.path.getsize(f)} for f in files]
    print_table(pd.DataFrame(rows, columns=["file", "bytes"]), f"{len(files)} files written ({args.format}):")
    return 0 if files else 1


def add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="write the offline HTML report: leaderboard, figures, item browser, side by side",
        formatter_class=_FORMATTER,
        description="One self-contained HTML file of the stored runs (opens from disk, fetches nothing): "
        "a leaderboard with n and intervals beside the papers' rows, the figures, an item browser with "
        "Thai search, and two models side by side.",
        epilog="examples:\n  thai-eval report\n"
        '  thai-eval report --outputs outputs outputs/demo_compare --pair "embedded,embedded '
        '(fewshot_seed=7)" --screenshots outputs/report_screenshots',
    )
    add_report_arguments(p)
    _add_tasks_dir(p)
    p.set_defaults(handler=report_command)


def _first_suite() -> str:
    """A suite name for the help's examples."""
    try:
        return next(iter(registry.suites()), "SUITE")
    except ThaiEvalError:
        return "SUITE"


def _variant_names() -> str:
    """The registered suites' variants for the help text (``Suite.variants``)."""
    try:
        return ", ".join(f"{v} ({s.name})" for s in registry.suites().values() for v in s.variants) or "none"
    except ThaiEvalError:
        return "see each suite"


def _data_folders() -> str:
    try:
        return ", ".join(f"{s.data_folder}/" for s in registry.suites().values() if s.data_folder)
    except ThaiEvalError:
        return "one folder per suite"

"""The ``thai-eval`` command (``pyproject.toml`` ``[project.scripts]``; also ``python -m thai_eval_utils``).

Subcommands: ``run`` (papermill runs of the benchmark notebooks, then the paper tables; ``--dry-run`` prints what a
run would compute), ``runs`` (the stored runs), ``compare A B``, ``tables``, ``export``, ``report`` (the offline HTML report),
``batch status|cancel`` (the stored runs' Batch API batches), ``data list|fetch|verify`` (the full data sets, pinned). Each exits 0 on success,
1 when a run or notebook failed, 2 on a usage error, and ends with a summary table.

Built on the standard library's ``argparse``: subcommands, help texts and exit codes are all this command needs, and
it adds no dependency to a pinned environment (click or typer would be one more pin for no feature used here).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from thai_eval_utils import __version__
from thai_eval_utils.cli import batch_command, commands, data_command, run_config
from thai_eval_utils.core import registry
from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.core.provenance import scrub

EPILOG = """examples:
  thai-eval run --model embedded --limit 2
  thai-eval run --model embedded --dry-run
  thai-eval runs
  thai-eval compare embedded /models/qwen
  thai-eval export --format lm-eval --to exports/lm-eval
  thai-eval report --out outputs/report.html
  thai-eval batch status
  thai-eval data list
  thai-eval data fetch SUITE && thai-eval run --model embedded --data full --limit 2

Results go to --outputs, else $THAI_EVAL_OUTPUTS, else ./outputs (runs/, tables/, figures/, notebooks/)."""


def build_parser() -> argparse.ArgumentParser:
    """The command line: one sub-parser per subcommand, each with its own help and example."""
    parser = argparse.ArgumentParser(
        prog="thai-eval",
        description=f"Evaluate large language models in Thai: {_titles()}.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"thai-eval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands.add_run(sub)
    commands.add_runs(sub)
    commands.add_compare(sub)
    commands.add_tables(sub)
    commands.add_export(sub)
    commands.add_report(sub)
    batch_command.add_batch(sub)
    data_command.add_data(sub)
    return parser


def _titles() -> str:
    """The registered suites' short titles (the description)."""
    try:
        return ", ".join(s.label for s in registry.suites().values())
    except ThaiEvalError:
        return "benchmark suites"


def _tasks_dirs(argv: Sequence[str] | None) -> list[str]:
    """``--tasks-dir`` values, read before the command line is parsed (so help texts and ``--benchmarks`` see the
    suites they declare)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--tasks-dir", action="append", default=[])
    return pre.parse_known_args(sys.argv[1:] if argv is None else list(argv))[0].tasks_dir


def _apply_config(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]) -> None:
    """``run --config FILE``: the file's values set where the command line gave no option (the command line wins);
    its ``tasks_dir`` registered (unless ``--tasks-dir`` is given) before any benchmark name is read."""
    config = run_config.load_config(args.config)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
    given = run_config.given_options(sub, argv[argv.index(args.command) + 1 :])
    run_config.apply_config(args, config, given)
    if "tasks_dir" not in given:
        commands.use_tasks_dirs(args.tasks_dir)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (0 ok, 1 failure, 2 usage error). Errors print without a traceback
    and with every secret in use masked. ``--tasks-dir`` is read first: the user's suites are registered before
    any benchmark name is."""
    commands.use_tasks_dirs(_tasks_dirs(argv))
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "config", None):
            _apply_config(parser, args, sys.argv[1:] if argv is None else list(argv))
        if args.command == "run" and not args.model:
            parser.error("the following arguments are required: --model (or model.spec in --config)")
        if getattr(args, "benchmarks", None):
            try:
                registry.resolve(args.benchmarks)
            except registry.UnknownBenchmarkError as exc:
                parser.error(f"argument --benchmarks: {exc}")
        return int(args.handler(args))
    except (ThaiEvalError, ValueError, OSError, KeyError) as exc:
        print(f"thai-eval {args.command}: error: {scrub(f'{type(exc).__name__}: {exc}')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"thai-eval {args.command}: interrupted (stored items are kept; rerun to resume)", file=sys.stderr)
        return 130

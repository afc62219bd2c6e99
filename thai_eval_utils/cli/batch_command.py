"""``thai-eval batch status`` and ``thai-eval batch cancel`` (docs/batch_mode.md): the stored runs' batches
(from each run folder's ``batch.json``, no network) and cancelling the ones still running, keeping what came back.

A run's batches are on the endpoint ``batch.json`` records (public base URL and model id, never a key); the key comes
from ``$OPENAI_API_KEY`` as for every ``openai:`` model. Cancel a run's batches while no ``thai-eval run`` is polling
them; the requests a cancelled batch did not answer are sent once more by the next ``thai-eval run --batch``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from thai_eval_utils.backend.batch_api import OpenAIBatchTransport
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.cli.commands import print_table
from thai_eval_utils.core.batch_files import BatchFolder, batch_folders
from thai_eval_utils.core.batch_rounds import BatchMode, BatchReport, BatchRounds, read_state, running_ids
from thai_eval_utils.core.provenance import outputs_dir
from thai_eval_utils.core.runs import list_runs


def add_batch(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "batch",
        help="the stored runs' batches (OpenAI Batch API): status, cancel",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="status: every run folder with batches (state, batch ids, requests, replies "
        "collected), read from its batch.json (no network). cancel: cancel the running batches of the "
        "runs (--model/--run narrow them), wait up to --wait seconds and keep what came back; the next "
        "`thai-eval run --batch` sends the rest once more.",
        epilog="examples:\n  thai-eval batch status\n  thai-eval batch cancel --model gpt-4o-mini\n"
        "  thai-eval batch cancel --run outputs/runs/<model>/<suite>/<task>/<config id>",
    )
    p.add_argument("action", choices=("status", "cancel"))
    p.add_argument("--model", action="append", default=[], help="only runs whose model name or folder contains this")
    p.add_argument("--run", action="append", default=[], metavar="DIR", help="only this run folder (repeatable)")
    p.add_argument(
        "--wait",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="cancel: how long to wait for the batches to end and collect what came back (default 60)",
    )
    p.add_argument("--base-url", default=None, help="cancel: the endpoint, when not the one batch.json records")
    p.add_argument(
        "--outputs", default=None, metavar="DIR", help="outputs folder (default: $THAI_EVAL_OUTPUTS, else ./outputs)"
    )
    p.set_defaults(handler=cmd_batch)


def _folders(args: argparse.Namespace, outputs: Path) -> list[BatchFolder]:
    """The batch folders with a ``batch.json`` (a run's own, or a part's: a judged metric's judge), narrowed by
    ``--model`` and ``--run`` (the run folder)."""
    wanted = {Path(r).resolve() for r in args.run}
    out = []
    for run in list_runs(outputs):
        if wanted and run.dir.resolve() not in wanted:
            continue
        if args.model and not any(m in run.model_name or m in str(run.dir) for m in args.model):
            continue
        out += [f for f in batch_folders(run.dir) if f.state_path.exists()]
    return out


def status_table(folders: list[BatchFolder], outputs: Path) -> pd.DataFrame:
    """One row per batch folder: its folder under the runs, state, the current round's batch ids and requests,
    replies kept, batches made in all."""
    rows = []
    for folder in folders:
        state = read_state(folder)
        parts = state.get("parts") or []
        rows.append(
            {
                "run": str(folder.root.relative_to(outputs / "runs")),
                "state": state.get("state"),
                "batches": ", ".join(p["batch_id"] for p in parts if p.get("batch_id")) or "",
                "running": ", ".join(running_ids(state)) if state.get("state") == "submitted" else "",
                "requests": state.get("requests"),
                "replies_kept": len(folder.replies()),
                "batches_done": len(state.get("history") or []),
            }
        )
    return pd.DataFrame(
        rows, columns=["run", "state", "batches", "running", "requests", "replies_kept", "batches_done"]
    )


def cmd_batch(args: argparse.Namespace) -> int:
    outputs = Path(args.outputs) if args.outputs else outputs_dir()
    folders = _folders(args, outputs)
    if args.action == "status":
        print_table(status_table(folders, outputs), f"runs with batches under {outputs / 'runs'}:")
        return 0
    cancelled = 0
    for folder in folders:
        state = read_state(folder)
        if state.get("state") not in ("uploading", "submitted"):
            continue
        endpoint = state.get("endpoint") or {}
        model_id = endpoint.get("model")
        base_url = args.base_url or endpoint.get("base_url")
        if not model_id or not base_url:
            print(f"{folder.root}: batch.json names no endpoint; cancel its batches on the provider's site")
            continue
        transport = OpenAIBatchTransport(ApiModel(model_id, base_url=base_url, max_retries=2))
        where = folder.root.relative_to(outputs / "runs")
        mode = BatchMode(
            transport=transport, wait_s=args.wait, poll_s=2.0, echo=lambda text, where=where: print(f"{where}: {text}")
        )
        ids = BatchRounds(folder.root, mode, BatchReport(), time.monotonic() + max(0.0, args.wait)).cancel()
        cancelled += len(ids)
    print(f"{cancelled} batch(es) cancelled")
    return 0

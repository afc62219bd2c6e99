"""``thai-eval run --model vllm:MODEL`` / ``sglang:MODEL``: the servers' flags (``--tp``, ``--replicas``,
``--server-arg``, ``--server-deadline``, ``--prefix-caching``) and the servers' life around one model's notebooks.

The servers are started before the model's first notebook and stopped after its last (every suite of the
command); the notebooks get the model as ``completions:<name>`` with ``base_url`` (every replica) and
``tokenizer`` (``--tokenizer``, else the model's own folder) in their ``options`` parameter's ``model`` section,
and their kernels inherit :data:`~thai_eval_utils.backend.served.engines.ENGINE_ENV`, from which the run cards
record the engine, its version and its flags (docs/engines.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils.backend.served.engines import ENGINE_ENV, EngineSpec, parse_engine_spec
from thai_eval_utils.backend.served.launch import DEFAULT_DEADLINE_S, EngineLaunch

PREFIX_CACHING = {"on": True, "off": False}


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of the servers ``--model vllm:MODEL`` / ``sglang:MODEL`` starts."""
    g = p.add_argument_group("servers started by thai-eval (--model vllm:MODEL or sglang:MODEL; docs/engines.md)")
    g.add_argument("--tp", type=int, default=1, metavar="N", help="GPUs per server (tensor parallel size; default 1)")
    g.add_argument(
        "--replicas",
        type=int,
        default=None,
        metavar="N",
        help="servers to start (default: as many as the "
        "visible GPUs allow, GPUs // --tp; one on a machine without GPUs)",
    )
    g.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARGS",
        help="more flags for every server, "
        "passed through (repeatable), e.g. --server-arg '--max-model-len 8192' or --server-arg=--enforce-eager",
    )
    g.add_argument(
        "--server-deadline",
        type=float,
        default=DEFAULT_DEADLINE_S,
        metavar="SECONDS",
        help=f"seconds for the servers to load and answer (default {DEFAULT_DEADLINE_S:g})",
    )
    g.add_argument(
        "--prefix-caching",
        choices=sorted(PREFIX_CACHING),
        default=None,
        help="the servers' prefix "
        "caching (default: off when the run scores log-likelihoods, whose prompt log-probabilities it can "
        "change; else the engine's default)",
    )


def engine_specs(models: Sequence[str]) -> list[EngineSpec]:
    """The ``vllm:`` / ``sglang:`` models among ``models``, in order."""
    return [spec for m in models if (spec := parse_engine_spec(m)) is not None]


def server_args(args: argparse.Namespace) -> list[str]:
    """``--server-arg`` values split as a shell would (one value may hold a flag and its value)."""
    return [part for value in args.server_arg for part in shlex.split(value)]


def engine_launch(args: argparse.Namespace, spec: EngineSpec, outputs: Path, loglikelihood: bool) -> EngineLaunch:
    """The launch (not started) of ``spec``'s servers as the command line asks; logs under ``<outputs>/servers``."""
    return EngineLaunch(
        spec.engine,
        spec.model,
        tp=args.tp,
        replicas=args.replicas,
        extra_args=server_args(args),
        logs_dir=outputs / "servers",
        deadline_s=args.server_deadline,
        loglikelihood=loglikelihood,
        prefix_caching=PREFIX_CACHING.get(args.prefix_caching or ""),
    )


def tokenizer_for(model: str) -> str | None:
    """The tokenizer folder of a served model: its local folder, else a Hub id's cached snapshot (the engine has
    just downloaded it); None for a single file (a GGUF: pass ``--tokenizer``), or a Hub id not in the cache."""
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path.resolve())
    if path.exists():
        print(
            f"thai-eval: {model} is a file, not a model folder: prompts go as text; pass --tokenizer DIR for token ids",
            file=sys.stderr,
        )
        return None
    from huggingface_hub import snapshot_download  # heavy: only a Hub id needs it

    try:
        return snapshot_download(model, local_files_only=True)
    except Exception:  # noqa: BLE001 - not in this machine's cache (the engine may use another cache)
        print(
            f"thai-eval: {model!r} is not in the local Hugging Face cache: prompts go as text; pass --tokenizer DIR "
            "for token ids",
            file=sys.stderr,
        )
        return None


@contextlib.contextmanager
def served_engine(
    args: argparse.Namespace, spec: EngineSpec, outputs: Path, loglikelihood: bool
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Start ``spec``'s servers, yield the model spec and parameters its notebooks get, stop them on leaving."""
    launch = engine_launch(args, spec, outputs, loglikelihood)
    print(
        f"thai-eval: starting {len(launch.replicas)} {spec.engine} server(s) of {spec.model} (logs in "
        f"{launch.logs_dir}; deadline {launch.deadline_s:g} s)",
        file=sys.stderr,
    )
    with launch:
        print(
            f"thai-eval: {spec.engine} {launch.version} serves {launch.name!r} at {', '.join(launch.base_urls)}",
            file=sys.stderr,
        )
        tokenizer = args.tokenizer or tokenizer_for(spec.model)
        old = os.environ.get(ENGINE_ENV)
        os.environ.update(launch.environment())  # the kernels inherit it: the run cards record the servers
        try:
            yield f"completions:{launch.name}", {"base_url": ",".join(launch.base_urls), "tokenizer": tokenizer}
        finally:
            if old is None:
                os.environ.pop(ENGINE_ENV, None)
            else:
                os.environ[ENGINE_ENV] = old
            print(f"thai-eval: stopping the {spec.engine} servers of {spec.model}", file=sys.stderr)


def planned_servers(args: argparse.Namespace, spec: EngineSpec, outputs: Path, loglikelihood: bool) -> list[str]:
    """``--dry-run``: the command lines the run would start for ``spec`` (port 0: chosen at the start)."""
    launch = engine_launch(args, spec, outputs, loglikelihood)
    return [" ".join(shlex.quote(part) for part in cmd) for cmd in launch.commands()]

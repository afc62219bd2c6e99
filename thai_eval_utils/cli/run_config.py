"""``thai-eval run --config FILE``: one YAML file holding a run's configuration (docs/command.md, "A run
configuration file"; docs/examples/eval.yaml). Options given on the command line override the file's.

The file's keys (every one optional; :data:`SCHEMA`) map onto ``run``'s options; its ``model``, ``thinking`` and
``batch`` sections hold the same keys as the notebooks' ``options`` parameter (:mod:`thai_eval_utils.run_options`),
and ``suites`` holds each suite's own notebook parameters under the suite's name. An unknown key, a value of the
wrong type or a secret (an API key: those come from the environment) is refused with a
:class:`~thai_eval_utils.core.errors.ThaiEvalDataError` naming the file and the key path. The configuration a run
resolved (file and command line together) is written to ``<outputs>/run_config.yaml`` and shown by ``--dry-run``;
it never enters a run's config id (the notebooks' protocols do).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from thai_eval_utils.cli.dry_run_cost import prices_file_arg
from thai_eval_utils.cli.thinking_args import thinking_parameters
from thai_eval_utils.core import registry
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import now_utc, scrub_strings, split_credentials
from thai_eval_utils.notebook_exec import is_secret, notebook_parameters

#: ``--config``'s file name in the outputs folder: the configuration the last run resolved.
RECORD_NAME = "run_config.yaml"
#: A suite's notebook parameters the run sets itself (not a suite option).
COMMON_PARAMETERS = ("model", "options", "outputs_dir", "limit", "data_source")


@dataclass(frozen=True)
class Key:
    """One key of the file: the ``run`` option it sets (``option``: its flag, or the plain name of a value only the
    file sets), the types it takes and how its value becomes the option's (``to_arg``) and back (``from_arg``)."""

    option: str
    kinds: tuple[type, ...]
    to_arg: Callable[[Any], Any] = lambda v: v
    from_arg: Callable[[Any], Any] = lambda v: v

    @property
    def dest(self) -> str:
        """The option's attribute in the parsed arguments (``--batch-wait``: ``batch_wait``)."""
        return self.option.lstrip("-").replace("-", "_")


def _listed(value: Any) -> list[str]:
    """A string (space- or comma-separated) or a list of strings, as a list."""
    return [str(v) for v in value] if isinstance(value, list) else str(value).replace(",", " ").split()


def _not(value: Any) -> Any:
    return None if value is None else not value


def _on_off(value: Any) -> str:
    """``servers.prefix_caching``: on/off (or true/false, as YAML reads on/off) as ``--prefix-caching`` takes it."""
    text = {True: "on", False: "off"}.get(value, value)
    if text not in ("on", "off"):
        raise ValueError(f"servers.prefix_caching: expected on or off, got {value!r}")
    return text


STR, INT, NUM, BOOL, LIST = (str,), (int,), (int, float), (bool,), (str, list)
#: The file's keys: a :class:`Key`, or a section (a mapping of keys). The ``model``, ``thinking`` and ``batch``
#: sections take the notebooks' ``options`` keys (:data:`thai_eval_utils.run_options.SECTIONS`), ``model`` also
#: ``spec``; ``suites`` (suite name -> its notebooks' own parameters) is checked against the notebooks.
SCHEMA: dict[str, Any] = dict(
    model=dict(
        spec=Key("--model", LIST, _listed),
        dtype=Key("--dtype", STR),
        device_map=Key("--device-map", STR),
        base_url=Key("--base-url", STR),
        tokenizer=Key("--tokenizer", STR),
        order_tolerance=Key("--order-tolerance", NUM, float),
        order_probe=Key("--no-order-probe", BOOL, _not, _not),
    ),
    benchmarks=Key("--benchmarks", LIST, _listed),
    tasks_dir=Key("--tasks-dir", LIST, _listed),
    data=Key("--data", STR, lambda v: None if v == "samples" else v, lambda v: v or "samples"),
    revision=Key("--revision", (dict,), lambda v: [(str(k), str(r)) for k, r in v.items()], lambda v: dict(v) or None),
    limit=Key("--limit", INT),
    max_new_tokens=Key("--max-new-tokens", INT),
    greedy=Key("--greedy", BOOL),
    runs=Key("--runs", INT),
    variants=Key("--variant", LIST, _listed, lambda v: list(v) or None),
    thinking=dict(
        mode=Key("--thinking", STR),
        think_tags=Key("--think-tags", STR),
        max_thinking_tokens=Key("--max-thinking-tokens", INT),
        enable_thinking=Key("--enable-thinking", BOOL),
        stop_after_thinking=Key("--stop-after-thinking", BOOL),
    ),
    batch=dict(
        submit=Key("--batch", BOOL),
        wait_s=Key("--batch-wait", NUM, float),
        file_out=Key("--batch-file-out", STR),
        file_in=Key("--batch-file-in", STR),
    ),
    judge=dict(model=Key("--judge", STR), base_url=Key("--judge-base-url", STR)),
    servers=dict(
        tp=Key("--tp", INT),
        replicas=Key("--replicas", INT),
        server_args=Key("--server-arg", LIST, lambda v: v if isinstance(v, list) else [v], lambda v: list(v) or None),
        deadline_s=Key("--server-deadline", NUM, float),
        prefix_caching=Key("--prefix-caching", (bool, str), lambda v: _on_off(v)),
    ),
    prices=dict(input=Key("--price-in", NUM, float), output=Key("--price-out", NUM, float), file=Key("--prices", STR)),
    suites=Key("suite_options", (dict,)),
    outputs=Key("--outputs", STR),
    notebooks_dir=Key("--notebooks-dir", STR),
    paper=Key("--no-paper", BOOL, _not, _not),
)


def add_config(p: argparse.ArgumentParser) -> None:
    """``run --config FILE``."""
    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="a YAML run configuration (model, benchmarks, data, limit, suites' options, thinking, batch, judge, "
        "servers, outputs: docs/command.md); options given on the command line override it",
    )


def load_config(path: str | Path) -> dict[str, Any]:
    """The file's mapping, checked against :data:`SCHEMA` (keys, types, no secrets); ``{}`` for an empty file."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ThaiEvalDataError(f"cannot read the run configuration: {exc.strerror or exc}", path=path) from None
    except yaml.YAMLError as exc:
        raise ThaiEvalDataError(f"not valid YAML: {exc}", path=path) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ThaiEvalDataError(f"expected a mapping of keys {', '.join(SCHEMA)}", path=path)
    _refuse_secrets(data, path, "")
    _check(data, SCHEMA, path, "")
    return data


def _refuse_secrets(data: Any, path: str | Path, prefix: str) -> None:
    """A secret-looking key or value anywhere in the file is refused: keys come from the environment."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        where = f"{prefix}{key}" if isinstance(data, dict) else f"{prefix.rstrip('.')}[{key}]"
        if is_secret(str(key) if isinstance(data, dict) else "", value if isinstance(value, str) else None):
            raise ThaiEvalDataError(
                "a secret is never read from a run configuration (it would be recorded with the run): set API keys "
                "in the environment ($OPENAI_API_KEY, $THAI_EVAL_JUDGE_API_KEY) and leave them out of the file",
                path=path,
                field=where,
            )
        _refuse_secrets(value, path, f"{where}.")


def _check(data: Mapping[str, Any], schema: Mapping[str, Any], path: str | Path, prefix: str) -> None:
    """Every key of ``data`` known to ``schema``, every value of its key's types (None: the default)."""
    for key, value in data.items():
        where = f"{prefix}{key}"
        if key not in schema:
            raise ThaiEvalDataError(f"unknown key; allowed here: {', '.join(schema)}", path=path, field=where)
        spec = schema[key]
        if value is None:
            continue
        if isinstance(spec, dict):
            if not isinstance(value, dict):
                raise ThaiEvalDataError(
                    f"expected a mapping of {', '.join(spec)}, got {value!r}", path=path, field=where
                )
            _check(value, spec, path, f"{where}.")
        elif not isinstance(value, spec.kinds) or (isinstance(value, bool) and bool not in spec.kinds):
            kinds = " or ".join(k.__name__ for k in spec.kinds)
            raise ThaiEvalDataError(f"expected {kinds}, got {value!r}", path=path, field=where)
        elif isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise ThaiEvalDataError(f"expected a list of strings, got {value!r}", path=path, field=where)


def _keys(schema: Mapping[str, Any] = SCHEMA, prefix: str = "") -> list[tuple[str, Key]]:
    """Every (key path, :class:`Key`) of the schema, in order."""
    out: list[tuple[str, Key]] = []
    for name, spec in schema.items():
        out += _keys(spec, f"{prefix}{name}.") if isinstance(spec, dict) else [(f"{prefix}{name}", spec)]
    return out


def _get(data: Mapping[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)  # type: ignore[assignment]
    return data


def given_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> set[str]:
    """The ``dest`` of every option ``argv`` (the subcommand's own arguments) gives: parsed again with every default
    suppressed, so an option given with its default value still counts as given."""
    saved = [(a, a.default, a.required) for a in parser._actions]
    try:
        for action in parser._actions:
            action.default, action.required = argparse.SUPPRESS, False
        given, _ = parser.parse_known_args(list(argv))
    finally:
        for action, default, required in saved:
            action.default, action.required = default, required
    return set(vars(given)) - set(parser._defaults)  # set_defaults' values (the handler) are no option given


def apply_config(args: argparse.Namespace, config: Mapping[str, Any], given: set[str]) -> argparse.Namespace:
    """``args`` with each of the file's values set, except where the command line gave the option (``given``)."""
    for dotted, key in _keys():
        value = _get(config, dotted)
        if value is not None and key.dest not in given:
            setattr(args, key.dest, key.to_arg(value))
    if "prices" not in given and isinstance(getattr(args, "prices", None), str):
        args.prices_file = args.prices  # recorded by resolved_config; the table itself is read here, once
        try:
            args.prices = prices_file_arg(args.prices)
        except argparse.ArgumentTypeError as exc:
            raise ThaiEvalDataError(str(exc), path=getattr(args, "config", None), field="prices.file") from None
    return args


def check_suite_options(args: argparse.Namespace, config_path: str | Path | None) -> dict[str, dict[str, Any]]:
    """``suites``: each name a registered suite, each key a parameter its notebooks declare (not a common one)."""
    options = getattr(args, "suite_options", None) or {}
    suites = registry.suites()
    for name, values in options.items():
        if name not in suites:
            allowed = ", ".join(suites)
            raise ThaiEvalDataError(f"unknown suite; allowed: {allowed}", path=config_path, field=f"suites.{name}")
        if not isinstance(values, dict):
            raise ThaiEvalDataError(f"expected a mapping, got {values!r}", path=config_path, field=f"suites.{name}")
        declared = _suite_parameters(suites[name].notebooks, Path(args.notebooks_dir))
        for key in values:
            if key not in declared:
                raise ThaiEvalDataError(
                    f"unknown key; allowed here: {', '.join(declared)}", path=config_path, field=f"suites.{name}.{key}"
                )
    return options


def _suite_parameters(notebooks: Sequence[str], folder: Path) -> list[str]:
    """The parameters a suite's notebooks declare, less those the run sets itself."""
    names: dict[str, None] = {}
    for nb in notebooks:
        names.update(dict.fromkeys(notebook_parameters(folder / nb)))
    return [n for n in names if n not in COMMON_PARAMETERS]


def notebook_options(args: argparse.Namespace, served: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The notebooks' ``options`` parameter of this run (:mod:`thai_eval_utils.run_options`; paths absolute for
    the kernels; ``served``: the base URL and tokenizer of the servers ``run`` started); None when all default."""

    def path(p: str | None) -> str | None:
        return str(Path(p).resolve()) if p else None

    sections = {
        "model": {
            "dtype": args.dtype,
            "device_map": args.device_map,
            "base_url": args.base_url,
            "tokenizer": args.tokenizer,
            "order_tolerance": args.order_tolerance,
            "order_probe": False if args.no_order_probe else None,
            **(served or {}),
        },
        "thinking": {("mode" if k == "thinking" else k): v for k, v in thinking_parameters(args).items()},
        "batch": {
            "submit": True if args.batch else None,
            "wait_s": args.batch_wait,
            "file_out": path(args.batch_file_out),
            "file_in": path(args.batch_file_in),
        },
    }
    kept = {name: {k: v for k, v in keys.items() if v is not None} for name, keys in sections.items()}
    kept = {name: keys for name, keys in kept.items() if keys}
    return kept or None


def resolved_config(args: argparse.Namespace) -> dict[str, Any]:
    """The run's configuration as a file of :data:`SCHEMA` would hold it (every value set, credentials stripped
    from URLs, secrets masked): what ``--dry-run`` shows and ``<outputs>/run_config.yaml`` records."""
    out: dict[str, Any] = {}
    for dotted, key in _keys():
        value = getattr(args, key.dest, None)
        value = key.from_arg(value) if value is not None or dotted == "data" else None  # data None: the samples
        if dotted == "prices.file" and value is not None:
            value = getattr(args, "prices_file", None)  # the table was read: its file, when the config named it
        if dotted.endswith("base_url") and isinstance(value, str):
            value = split_credentials(value)[0]
        if value is None or value == [] or value == {}:
            continue
        node = out
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return scrub_strings(out)


def config_text(config: Mapping[str, Any]) -> str:
    """The configuration as YAML (keys in the schema's order)."""
    return yaml.safe_dump(dict(config), sort_keys=False, allow_unicode=True, default_flow_style=False)


def write_config(outputs: Path, config: Mapping[str, Any]) -> Path:
    """Record the resolved configuration in ``<outputs>/run_config.yaml`` (the last run's; a comment says when)."""
    outputs.mkdir(parents=True, exist_ok=True)
    target = outputs / RECORD_NAME
    body = config_text(config)
    target.write_text(f"# thai-eval run, resolved configuration, {now_utc()}\n{body}", encoding="utf-8")
    return target

"""The shared run options of the benchmark notebooks: one ``options`` parameter (a dict) instead of the same loose
parameters in every notebook. Its sections are the run configuration file's (``thai-eval run --config``,
docs/command.md), so a file feeds the notebooks the same mapping:

``model``
    how the model loads: ``dtype``, ``device_map`` (local models), ``base_url`` (API and served models),
    ``tokenizer``, ``order_tolerance``, ``order_probe`` (served models; ``completions:<id>``).
``thinking``
    models that think: ``mode`` ("strip", "lighteval", "lm-eval" or "off"), ``think_tags`` ("OPEN,CLOSE"),
    ``max_thinking_tokens``, ``enable_thinking``, ``stop_after_thinking``.
``batch``
    the OpenAI Batch API and offline batch files: ``submit``, ``wait_s``, ``file_out``, ``file_in``. The judge's
    requests go to ``file_out``, the answers' to ``<file_out stem>.answers.jsonl`` (another model's requests).

An empty mapping (or None) is every default. :func:`run_options` checks the mapping and returns the typed pieces
a notebook uses: the keyword options of ``load_model``, the :class:`~thai_eval_utils.tasks.thinking.ThinkingOption`
and the :class:`BatchSettings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.backend.model_sources import model_options
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.tasks.thinking import ThinkingOption, thinking_option

#: Each section's keys and the types a value may have (None is always allowed: the default).
SECTIONS: dict[str, dict[str, tuple[type, ...]]] = dict(
    model=dict(
        dtype=(str,),
        device_map=(str, dict),
        base_url=(str,),
        tokenizer=(str,),
        order_tolerance=(int, float),
        order_probe=(bool,),
    ),
    thinking=dict(
        mode=(str,),
        think_tags=(str, list),
        max_thinking_tokens=(int,),
        enable_thinking=(bool,),
        stop_after_thinking=(bool,),
    ),
    batch=dict(submit=(bool,), wait_s=(int, float), file_out=(str,), file_in=(str,)),
)
#: The model options only served models (``completions:<id>``) take, and those API models take too.
SERVED_ONLY = ("tokenizer", "order_tolerance", "order_probe")
REMOTE = ("base_url",)
#: The loose notebook parameters the ``options`` mapping replaced -> the key that holds them now.
REPLACED = {
    "dtype": "model.dtype",
    "device_map": "model.device_map",
    "base_url": "model.base_url",
    "order_tolerance": "model.order_tolerance",
    "order_probe": "model.order_probe",
    "thinking": "thinking.mode",
    "think_tags": "thinking.think_tags",
    "max_thinking_tokens": "thinking.max_thinking_tokens",
    "enable_thinking": "thinking.enable_thinking",
    "stop_after_thinking": "thinking.stop_after_thinking",
    "answers_batch": "batch.submit",
    "answers_batch_wait_s": "batch.wait_s",
    "answers_batch_file_out": "batch.file_out",
    "answers_batch_file_in": "batch.file_in",
    "judge_batch": "batch.submit",
    "judge_batch_wait_s": "batch.wait_s",
    "judge_batch_file_out": "batch.file_out",
    "judge_batch_file_in": "batch.file_in",
}


@dataclass(frozen=True)
class BatchSettings:
    """Batch mode of one run: ``submit`` through the Batch API (waiting ``wait_s`` seconds), or write the requests
    still needed to ``file_out`` / read replies from ``file_in`` (offline, e.g. ``vllm run-batch``)."""

    submit: bool = False
    wait_s: float = 0.0
    file_out: str | None = None
    file_in: str | None = None

    @property
    def active(self) -> bool:
        """Whether any batch option is set (else every call is live)."""
        return bool(self.submit or self.file_out or self.file_in)

    def judge(self) -> dict[str, Any]:
        """Keyword arguments of a judge's batch (``thaicli.judge.judge_batch``): ``file_out`` as given."""
        return {"submit": self.submit, "file_out": self.file_out, "file_in": self.file_in, "wait_s": self.wait_s}

    def answers(self) -> dict[str, Any]:
        """Keyword arguments of ``backend.batch_model.run_answers``: the answers' requests go to
        ``<file_out stem>.answers<suffix>`` (the judge's file holds another model's requests)."""
        return {**self.judge(), "file_out": answers_file(self.file_out)}


def answers_file(file_out: str | None) -> str | None:
    """Where the answers' batch requests go when the judge's go to ``file_out``.

    Example:
        >>> answers_file("/tmp/judge.jsonl")
        '/tmp/judge.answers.jsonl'
    """
    if file_out is None:
        return None
    path = Path(file_out)
    return str(path.with_suffix("")) + ".answers" + (path.suffix or ".jsonl")


@dataclass(frozen=True)
class RunOptions:
    """The typed pieces of an ``options`` mapping (:func:`run_options`)."""

    model: dict[str, Any]
    thinking: ThinkingOption
    batch: BatchSettings

    def load_options(self, spec: str, **own: Any) -> dict[str, Any]:
        """Keyword options of ``load_model(spec, ...)``: the ``model`` section (None values dropped, ``dtype``
        checked) with ``own`` (a notebook's own, e.g. ``add_bos_token``); ``base_url`` only for API and served
        models, ``tokenizer`` and the order probe's options only for served ones (a local model refuses them)."""
        served = spec.startswith("completions:")
        remote = served or spec.startswith("openai:")
        keep = {k: v for k, v in self.model.items() if (k not in SERVED_ONLY or served) and (k not in REMOTE or remote)}
        return model_options(**keep, **own)


def check_options(options: Mapping[str, Any] | None, where: str = "options") -> dict[str, dict[str, Any]]:
    """``options`` checked: known sections and keys, values of their types; a copy with None values dropped.
    Raises :class:`ThaiEvalDataError` naming the key path and the allowed keys."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ThaiEvalDataError(f"expected a mapping of {sorted(SECTIONS)}, got {type(options).__name__}", path=where)
    out: dict[str, dict[str, Any]] = {}
    for section, values in options.items():
        if section not in SECTIONS:
            raise ThaiEvalDataError(f"unknown key; allowed: {', '.join(SECTIONS)}", path=where, field=str(section))
        if values is None:
            continue
        if not isinstance(values, Mapping):
            raise ThaiEvalDataError(f"expected a mapping, got {values!r}", path=where, field=section)
        out[section] = _check_section(section, values, where)
    return out


def _check_section(section: str, values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One section's keys and value types checked; None values dropped."""
    allowed = SECTIONS[section]
    for key, value in values.items():
        field = f"{section}.{key}"
        if key not in allowed:
            raise ThaiEvalDataError(f"unknown key; allowed: {', '.join(allowed)}", path=where, field=field)
        kinds = allowed[key]
        if value is not None and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
            names = " or ".join(k.__name__ for k in kinds)
            raise ThaiEvalDataError(f"expected {names}, got {value!r}", path=where, field=field)
    return {k: v for k, v in values.items() if v is not None}


def refuse_replaced(namespace: Mapping[str, Any]) -> None:
    """Refuse a loose parameter the ``options`` mapping replaced (``papermill -p dtype bfloat16``: papermill
    injects it whether or not the notebook declares it), naming the key that holds it now."""
    old = sorted(name for name in REPLACED if name in namespace)
    if old:
        moved = ", ".join(
            f"{name} -> options[{REPLACED[name].split('.')[0]!r}][{REPLACED[name].split('.')[1]!r}]" for name in old
        )
        raise ThaiEvalDataError(
            f"these parameters are now keys of the options parameter (docs/notebooks.md): {moved}", field=old[0]
        )


def run_options(
    options: Mapping[str, Any] | None,
    *,
    namespace: Mapping[str, Any] | None = None,
    stop_after_thinking: bool = True,
) -> RunOptions:
    """The typed pieces of a notebook's ``options`` parameter.

    Args:
        options: the mapping (sections ``model``, ``thinking``, ``batch``; None or {} = every default).
        namespace: the notebook's globals: a loose parameter the mapping replaced is refused
            (:func:`refuse_replaced`).
        stop_after_thinking: False for the notebooks whose runners do not take it (``thinking.stop_after_thinking``
            is then ignored there, as those notebooks always did).

    Example:
        >>> o = run_options({"model": {"dtype": "bfloat16"}, "thinking": {"mode": "off"}, "batch": {"wait_s": 5}})
        >>> o.load_options("embedded"), o.thinking.strip, o.batch.wait_s
        ({'dtype': 'bfloat16'}, False, 5.0)
    """
    if namespace is not None:
        refuse_replaced(namespace)
    checked = check_options(options)
    think = dict(checked.get("thinking", {}))
    if not stop_after_thinking:
        think.pop("stop_after_thinking", None)
    mode = think.pop("mode", None)
    try:
        option = thinking_option(mode, **think)
    except ValueError as exc:
        raise ThaiEvalDataError(str(exc), path="options", field="thinking") from None
    batch = checked.get("batch", {})
    settings = BatchSettings(
        submit=bool(batch.get("submit", False)),
        wait_s=float(batch.get("wait_s", 0.0)),
        file_out=batch.get("file_out"),
        file_in=batch.get("file_in"),
    )
    return RunOptions(model=dict(checked.get("model", {})), thinking=option, batch=settings)

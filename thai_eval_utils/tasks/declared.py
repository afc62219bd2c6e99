"""Declared tasks: a task whose prompt, choices, gold and metric can be said as data is declared, not
coded, as an lm-evaluation-harness task YAML or a SEA-HELM ``config.yaml`` declares it.

:class:`MultipleChoiceTask` is lm-eval's ``output_type: multiple_choice`` (``doc_to_text`` = ``prompt``,
``doc_to_choice`` = ``choices``, ``doc_to_target`` = ``gold``, ``target_delimiter``, ``num_fewshot`` over a
``fewshot_split`` taken first-n); :class:`GenerationTask` is ``output_type: generate_until`` with a metric from
:data:`~.metrics.GENERATION_METRICS`. Both are frozen: the declaration is the task's identity, recorded whole in
every run card. Files are read relative to the task file (``base_dir``, set when the registry loads the file).

Every field is checked for its type and range when the declaration is made, before anything runs: a wrong one is a
:class:`~thai_eval_utils.core.errors.ThaiEvalDataError` naming the field and saying what was expected and what was
found (the registry adds the task file's path). ``stop`` and ``metrics`` take one string or a list of strings.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
import copy
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.protocols import stop_strings
from thai_eval_utils.tasks.items import Row, template_fields
from thai_eval_utils.tasks.shaping import FirstN, ReplyFilter, Sampler
from thai_eval_utils.tasks.metrics import (
    GENERATION_METRICS,
    MC_METRICS,
    TIES,
    Metric,
    declared_form,
    qualified_name,
    resolve_metric,
)
from thai_eval_utils.tasks.declared_suite import DeclaredSuite

#: lm-eval's defaults: the text between a context and its continuation, and between few-shot examples.
LM_EVAL_TARGET_DELIMITER = " "
LM_EVAL_FEWSHOT_DELIMITER = "\n\n"


#: Fields added after declarations were first stored, with their defaults: a declaration leaves such a field out
#: while it has its default, so the stored runs of tasks declared before keep their config ids.
ADDED_FIELDS: dict[str, Any] = {"process_docs": None, "filters": (), "requests": None}


def recorded(value: Any) -> Any:
    """A declaration's value as plain data: a dataclass (``FewShot``) as its declaration, a function or class of
    code by its qualified name (``{"function": "module:qualname"}``: stable across processes), else a copy."""
    if hasattr(value, "declaration") and callable(value.declaration):
        return value.declaration()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if callable(value):
        return {"function": qualified_name(value)}
    if isinstance(value, (list, tuple)):
        return type(value)(recorded(v) for v in value)
    return copy.deepcopy(value)


# ----------------------------------------------------------------------------------------------- field checks
def _refused(name: str, expected: str, value: Any) -> ThaiEvalDataError:
    """The error of a field with a wrong value: what was expected and what was found (its type and value)."""
    return ThaiEvalDataError(f"expected {expected}, got {type(value).__name__} {value!r:.60}", field=name)


def _text(value: Any, name: str, *, empty: bool = False, optional: bool = False) -> None:
    """``value`` is a string, not blank unless ``empty``; or None when ``optional``."""
    if optional and value is None:
        return
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise _refused(name, ("text" if empty else "non-empty text") + (" or None" if optional else ""), value)


def _texts(value: Any, name: str, expected: str, *, one: bool, at_least: int = 0) -> tuple[str, ...]:
    """A list or tuple of non-empty strings (at least ``at_least``) as a tuple; a single string is one of them
    when ``one`` (never its characters), refused otherwise."""
    if one and isinstance(value, str):
        value = (value,)
    if (
        not isinstance(value, (list, tuple))
        or len(value) < at_least
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        raise _refused(name, expected, value)
    return tuple(value)


def _integer(value: Any, name: str, minimum: int, *, optional: bool = False) -> int | None:
    """``value`` as an int of at least ``minimum`` (a bool is no integer); None passes when ``optional``."""
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise _refused(name, f"an integer >= {minimum}" + (" or None" if optional else ""), value)
    return int(value)


def _number(value: Any, name: str, low: float, high: float, *, open_low: bool = False) -> float:
    """``value``, a finite number in ``[low, high]`` (``(low, high]`` when ``open_low``; a bool is no number), as
    given when it is a plain int or float (the declaration keys its runs: ``0`` stays ``0``), else as a float."""
    ok = (
        not isinstance(value, bool)
        and isinstance(value, numbers.Real)
        and math.isfinite(value)
        and (value > low if open_low else value >= low)
        and value <= high
    )
    if not ok:
        where = f"{'(' if open_low else '['}{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
        raise _refused(name, f"a number {'in ' if math.isfinite(high) else ''}{where}", value)
    return value if type(value) in (int, float) else float(value)


@dataclass(frozen=True)
class FewShot:
    """``n`` examples from ``file`` (relative to the task file) before every item; each example is the prompt, the
    target delimiter and its gold choice (or reference), joined by ``delimiter``. ``sampler`` chooses the rows
    (:mod:`.shaping`): None or :class:`~.shaping.FirstN`, the first n rows; :class:`~.shaping.RandomSample`,
    lm-eval's seeded random draw per item (the item itself left out when ``file`` is the task's data)."""

    file: str
    n: int
    delimiter: str = LM_EVAL_FEWSHOT_DELIMITER
    sampler: Sampler | None = None

    def __post_init__(self) -> None:
        _text(self.file, "fewshot.file")
        object.__setattr__(self, "n", _integer(self.n, "fewshot.n", 0))
        _text(self.delimiter, "fewshot.delimiter", empty=True)
        if self.sampler is not None and not isinstance(self.sampler, Sampler):
            raise _refused("fewshot.sampler", "a Sampler (FirstN(), RandomSample(seed)) or None", self.sampler)

    @property
    def chooser(self) -> Sampler:
        """The sampler in force (None: first n)."""
        return self.sampler or FirstN()

    def declaration(self) -> dict[str, Any]:
        """``file``, ``n``, ``delimiter`` and, unless it is first-n (as every declaration before samplers), the
        sampler's spec."""
        out: dict[str, Any] = {"file": self.file, "n": self.n, "delimiter": self.delimiter}
        if self.chooser != FirstN():
            out["sampler"] = self.chooser.declaration()
        return out


class _Declared:
    """What both kinds share: the field checks, file paths, the declaration as a record, ``as_suite``."""

    name: str
    data: str
    id_field: str | None
    base_dir: str | None
    fewshot: FewShot | None
    target_delimiter: str
    title: str
    version: str
    metrics: Sequence[str | Metric]
    kind: str
    process_docs: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None

    def _check_common(self) -> None:
        """Check the fields both kinds have: each one's type (and ``name``'s form)."""
        if not isinstance(self.name, str) or not self.name or "/" in self.name or self.name != self.name.strip():
            raise _refused("name", "a task name without '/' or surrounding spaces", self.name)
        _text(self.data, "data", empty=True)  # empty: the items come as rows (a benchmark's own loader)
        _text(self.target_delimiter, "target_delimiter", empty=True)
        if self.fewshot is not None and not isinstance(self.fewshot, FewShot):
            raise _refused("fewshot", "FewShot(file, n) or None", self.fewshot)
        _text(self.id_field, "id_field", optional=True)
        _text(self.title, "title", empty=True)
        _text(self.version, "version")
        _text(self.base_dir, "base_dir", optional=True)
        if self.process_docs is not None and not callable(self.process_docs):
            raise _refused("process_docs", "a function (rows -> rows) or None", self.process_docs)

    def _check_metrics(self, known: Sequence[str]) -> None:
        """``metrics``: one name, one :class:`~.metrics.Metric` or a list of them; each name in ``known``, each
        object of this kind of task, no two with the same name (a record holds each value under its name)."""
        metrics = (self.metrics,) if isinstance(self.metrics, (str, Metric)) else self.metrics
        if (
            not isinstance(metrics, (list, tuple))
            or not metrics
            or not all(isinstance(m, Metric) or (isinstance(m, str) and m.strip()) for m in metrics)
        ):
            raise _refused("metrics", "a metric name or a list of them", self.metrics)
        unknown = [m for m in metrics if isinstance(m, str) and m not in known]
        kind = self.kind.replace("_", "-")
        if unknown:
            raise ThaiEvalDataError(
                f"unknown {kind} metric(s) {unknown}; choose from {', '.join(known)}", field="metrics"
            )
        wrong = [m for m in metrics if isinstance(m, Metric) and m.task_kind != self.kind]
        if wrong:
            raise ThaiEvalDataError(
                f"{wrong[0]!r} is a {wrong[0].task_kind.replace('_', '-')} metric, not a {kind} one", field="metrics"
            )
        names = [resolve_metric(m, self.kind).name for m in metrics]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice or not all(isinstance(n, str) and n and "/" not in n for n in names):
            raise ThaiEvalDataError(f"every metric needs its own name without '/' (twice: {twice})", field="metrics")
        object.__setattr__(self, "metrics", tuple(metrics))

    @property
    def scorers(self) -> tuple[Metric, ...]:
        """The declared metrics as objects (a name: its default object), in order."""
        return tuple(resolve_metric(m, self.kind) for m in self.metrics)

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The declared metrics' names, in order (the records' and the summary's keys)."""
        return tuple(m.name for m in self.scorers)

    def path(self, relative: str) -> Path:
        """``relative`` under the task file's folder (``base_dir``), else as given."""
        p = Path(relative).expanduser()
        return p if p.is_absolute() or self.base_dir is None else Path(self.base_dir) / p

    @property
    def data_path(self) -> Path:
        return self.path(self.data)

    def data_files(self) -> list[Path]:
        """The files a run reads (their hashes key the run)."""
        return [self.data_path, *([self.path(self.fewshot.file)] if self.fewshot and self.fewshot.n else [])]

    def declaration(self) -> dict[str, Any]:
        """The declaration as plain data (without ``base_dir``: a moved folder resumes its runs)."""
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name == "base_dir" or (f.name in ADDED_FIELDS and value == ADDED_FIELDS[f.name]):
                continue  # a field added later, at its default: the runs declared before keep their ids
            out[f.name] = tuple(declared_form(m, self.kind) for m in value) if f.name == "metrics" else recorded(value)
        return out

    def bind(self, source: str | Path) -> Any:
        """This task with its files read relative to ``source`` (the task file or its folder)."""
        src = Path(source).expanduser().resolve()
        return replace(self, base_dir=str(src.parent if src.suffix == ".py" or src.is_file() else src))  # type: ignore[type-var]

    def with_data_folder(self, folder: str | Path | None) -> Any:
        """This task reading its data files from ``folder`` when that folder holds its data file (``thai-eval run
        --data ROOT`` passes ``ROOT/<task>`` or ``ROOT``), else unchanged (the files beside the task file)."""
        if folder is None or not (Path(folder).expanduser() / self.data).is_file():
            return self
        return self.bind(folder)

    def with_max_new_tokens(self, cap: int | None) -> Any:
        """This task with its generation budget capped at ``cap`` (``thai-eval run --max-new-tokens``; the capped
        declaration keys another run); unchanged for ``cap`` None or a multiple-choice task, which generates nothing."""
        if cap is None or self.kind != "generation":
            return self
        return replace(self, max_new_tokens=min(self.max_new_tokens, int(cap)))  # type: ignore[type-var]

    def as_suite(self, source: str | Path | None = None) -> Suite:
        """The task as a one-task :class:`~thai_eval_utils.core.benchmark.Suite` (what the registry lists)."""
        return DeclaredSuite(self.bind(source) if source is not None else self, source)


@dataclass(frozen=True)
class MultipleChoiceTask(_Declared):
    """A multiple-choice task scored by log-likelihood (lm-eval ``output_type: multiple_choice``).

    Args:
        name: the task's name (the suite and ``--benchmarks`` name; runs are stored as ``<name>/<name>``).
        data: the items: a JSONL, JSON, CSV or Parquet file relative to the task file.
        prompt: the context, a template with ``{field}`` placeholders (lm-eval ``doc_to_text``).
        choices: a field holding the list of choice texts, or a list of fields each holding one choice.
        gold: the field holding the gold choice: its index (int), its text, or one of ``labels``.
        target_delimiter: put between the context and each choice (lm-eval's " ").
        fewshot: first-n examples from a split file (:class:`FewShot`), or None (zero-shot).
        metrics: one or a list of ``acc``, ``acc_norm`` (lm-eval's: per character of the choice, delimiter excluded).
        labels: the labels of the choices in order (``("A", "B", "C", "D")``) when gold is written as a label.
        ties: "first" (lm-eval: the first of tied best choices is the prediction) or "split" (1/k on a k-way tie).
        id_field: the field that names an item (unique); None: the row number.
        title: a title for tables; version: the task's version (recorded, exported).
        requests: (doc, its context) -> its ``(context, continuation)`` requests, when each choice changes the
            context (Winogrande's partial scoring: each option fills the blank, the rest of the sentence is scored);
            None: lm-eval's ``(context, target_delimiter + choice)`` per choice.
    """

    name: str
    data: str
    prompt: str | Callable[[Row], str]
    choices: str | Sequence[str] | Callable[[Row], Sequence[str]]
    gold: str | Callable[[Row], Any]
    target_delimiter: str = LM_EVAL_TARGET_DELIMITER
    fewshot: FewShot | None = None
    metrics: Sequence[str | Metric] = ("acc", "acc_norm")
    labels: Sequence[str] = ()
    ties: str = "first"
    id_field: str | None = "id"
    title: str = ""
    version: str = "1"
    base_dir: str | None = None
    process_docs: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    requests: Callable[[Row, str], Sequence[tuple[str, str]]] | None = None

    kind = "multiple_choice"

    def __post_init__(self) -> None:
        self._check_common()
        if not callable(self.prompt):
            _text(self.prompt, "prompt")
            template_fields(self.prompt)
        if callable(self.choices):
            pass
        elif not isinstance(self.choices, str) or not self.choices.strip():
            object.__setattr__(
                self,
                "choices",
                _texts(
                    self.choices, "choices", "a field name or a list of at least 2 field names", one=False, at_least=2
                ),
            )
        if not callable(self.gold):
            _text(self.gold, "gold")
        self._check_metrics(MC_METRICS)
        labels = _texts(self.labels, "labels", 'a list of labels (e.g. ("A", "B", "C", "D"))', one=False)
        if labels and isinstance(self.choices, tuple) and len(labels) != len(self.choices):
            raise ThaiEvalDataError(
                f"expected one label per choice field ({len(self.choices)}), got {len(labels)} labels", field="labels"
            )
        object.__setattr__(self, "labels", labels)
        if not isinstance(self.ties, str) or self.ties not in TIES:
            raise _refused("ties", f"one of {TIES}", self.ties)
        if self.requests is not None and not callable(self.requests):
            raise _refused(
                "requests", "a function (doc, context -> (context, continuation) pairs) or None", self.requests
            )


@dataclass(frozen=True)
class GenerationTask(_Declared):
    """A generation task scored against a reference (lm-eval ``output_type: generate_until``).

    Args:
        name, data, id_field, title, version: as :class:`MultipleChoiceTask`.
        prompt: a template with ``{field}`` placeholders (sent with ``model.generate``), or chat messages
            (``[{"role": "user", "content": "... {field} ..."}]``, sent with ``model.chat``).
        reference: the field holding the reference text.
        metrics: one name or a list of names in :data:`~.metrics.GENERATION_METRICS` (exact_match, rougeL, chrf, bleu).
        max_new_tokens, stop, temperature, top_p, seed: decoding (``max_new_tokens`` >= 1; ``stop``: one stop
            string or a list of them, the text cut before the first; temperature >= 0, 0: greedy; top_p in (0, 1];
            ``seed`` >= 0 or None seeds every item's sampling, so an item's text does not depend on its batch).
        extra: anything else to record with the declaration (a mapping with text keys).
        fewshot: examples before each item (:class:`FewShot`): a plain prompt gets prompt + target delimiter +
            reference each; a chat gets each example as two turns before its last message (lm-eval's
            ``fewshot_as_multiturn``: the last message filled with the example's row, then its reference).
    """

    name: str
    data: str
    prompt: str | Sequence[Mapping[str, str]] | Callable[[Row], str]
    reference: str | Callable[[Row], str]
    metrics: Sequence[str | Metric] = ("exact_match",)
    max_new_tokens: int = 256
    stop: Sequence[str] = ()
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 1234
    fewshot: FewShot | None = None
    target_delimiter: str = LM_EVAL_TARGET_DELIMITER
    id_field: str | None = "id"
    title: str = ""
    version: str = "1"
    base_dir: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    process_docs: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    filters: Sequence[ReplyFilter] = ()

    kind = "generation"

    def __post_init__(self) -> None:
        self._check_common()
        self._check_prompt()
        if not callable(self.reference):
            _text(self.reference, "reference")
        filters = (self.filters,) if isinstance(self.filters, ReplyFilter) else self.filters
        if not isinstance(filters, (list, tuple)) or not all(isinstance(f, ReplyFilter) for f in filters):
            raise _refused("filters", "a reply filter or a list of them (RegexExtract, AnswerTag)", self.filters)
        object.__setattr__(self, "filters", tuple(filters))
        self._check_metrics(list(GENERATION_METRICS))
        checked = {
            "max_new_tokens": _integer(self.max_new_tokens, "max_new_tokens", 1),
            "stop": stop_strings(self.stop),  # one string is one stop string, never its characters
            "temperature": _number(self.temperature, "temperature", 0.0, math.inf),
            "top_p": _number(self.top_p, "top_p", 0.0, 1.0, open_low=True),
            "seed": _integer(self.seed, "seed", 0, optional=True),
        }
        if not isinstance(self.extra, Mapping) or not all(isinstance(k, str) for k in self.extra):
            raise _refused("extra", "a mapping with text keys", self.extra)
        for name, value in {**checked, "extra": dict(self.extra)}.items():
            object.__setattr__(self, name, value)

    def _check_prompt(self) -> None:
        """``prompt``: a template text, or chat messages (exactly ``role`` and ``content`` text each; few-shot
        examples then go in as turns); every template's fields well formed; or a function (doc -> the prompt text)."""
        if callable(self.prompt):
            return
        if isinstance(self.prompt, str):
            _text(self.prompt, "prompt")
        elif (
            isinstance(self.prompt, (list, tuple)) and self.prompt and all(isinstance(m, Mapping) for m in self.prompt)
        ):
            messages = tuple(dict(m) for m in self.prompt)
            bad = [
                m for m in messages if set(m) != {"role", "content"} or not all(isinstance(v, str) for v in m.values())
            ]
            if bad:
                raise _refused("prompt", "chat messages with exactly 'role' and 'content' text", bad[0])
            object.__setattr__(self, "prompt", messages)
        else:
            raise _refused(
                "prompt", 'a template text or a list of chat messages ({"role": ..., "content": ...})', self.prompt
            )
        for text in self.templates().values():
            template_fields(text)

    @property
    def is_chat(self) -> bool:
        return isinstance(self.prompt, (list, tuple))

    def templates(self) -> dict[str, str]:
        """Template name -> text (recorded by hash in the run card; a function: its qualified name)."""
        if callable(self.prompt):
            return {"prompt": qualified_name(self.prompt)}
        if isinstance(self.prompt, str):
            return {"prompt": self.prompt}
        return {f"message_{i}_{m['role']}": m["content"] for i, m in enumerate(self.prompt)}


DeclaredTask = MultipleChoiceTask | GenerationTask

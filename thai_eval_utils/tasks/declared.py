"""Declared tasks (issue 29): a task whose prompt, choices, gold and metric can be said as data is declared, not
coded, as an lm-evaluation-harness task YAML or a SEA-HELM ``config.yaml`` declares it.

:class:`MultipleChoiceTask` is lm-eval's ``output_type: multiple_choice`` (``doc_to_text`` = ``prompt``,
``doc_to_choice`` = ``choices``, ``doc_to_target`` = ``gold``, ``target_delimiter``, ``num_fewshot`` over a
``fewshot_split`` taken first-n); :class:`GenerationTask` is ``output_type: generate_until`` with a metric from
:data:`~.metrics.GENERATION_METRICS`. Both are frozen: the declaration is the task's identity, recorded whole in
every run card. Files are read relative to the task file (``base_dir``, set when the registry loads the file).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.tasks.items import template_fields
from thai_eval_utils.tasks.metrics import GENERATION_METRICS, MC_METRICS, TIES
from thai_eval_utils.tasks.declared_suite import DeclaredSuite

#: lm-eval's defaults: the text between a context and its continuation, and between few-shot examples.
LM_EVAL_TARGET_DELIMITER = " "
LM_EVAL_FEWSHOT_DELIMITER = "\n\n"


@dataclass(frozen=True)
class FewShot:
    """``n`` examples from ``file`` (relative to the task file), the first n rows, before every item; each
    example is the prompt, the target delimiter and its gold choice (or reference), joined by ``delimiter``."""

    file: str
    n: int
    delimiter: str = LM_EVAL_FEWSHOT_DELIMITER


class _Declared:
    """What both kinds share: the name checks, file paths, the declaration as a record, ``as_suite``."""

    name: str
    data: str
    id_field: str | None
    base_dir: str | None
    fewshot: FewShot | None

    def _check_name(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name or self.name != self.name.strip():
            raise ThaiEvalDataError(f"a task needs a name without '/' or surrounding spaces (got {self.name!r})",
                                    field="name")

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
        out = asdict(self)  # type: ignore[call-overload]
        out.pop("base_dir", None)
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
        metrics: from ``acc``, ``acc_norm`` (lm-eval's: per character of the choice, delimiter excluded).
        labels: the labels of the choices in order (``("A", "B", "C", "D")``) when gold is written as a label.
        ties: "first" (lm-eval: the first of tied best choices is the prediction) or "split" (1/k on a k-way tie).
        id_field: the field that names an item (unique); None: the row number.
        title: a title for tables; version: the task's version (recorded, exported).
    """

    name: str
    data: str
    prompt: str
    choices: str | Sequence[str]
    gold: str
    target_delimiter: str = LM_EVAL_TARGET_DELIMITER
    fewshot: FewShot | None = None
    metrics: Sequence[str] = ("acc", "acc_norm")
    labels: Sequence[str] = ()
    ties: str = "first"
    id_field: str | None = "id"
    title: str = ""
    version: str = "1"
    base_dir: str | None = None

    kind = "multiple_choice"

    def __post_init__(self) -> None:
        self._check_name()
        for name in ("choices", "metrics", "labels"):
            value = getattr(self, name)
            if not isinstance(value, str):
                object.__setattr__(self, name, tuple(value))
        unknown = [m for m in self.metrics if m not in MC_METRICS]
        if unknown or not self.metrics:
            raise ThaiEvalDataError(f"unknown multiple-choice metric(s) {unknown}; choose from {', '.join(MC_METRICS)}",
                                    field="metrics")
        if self.ties not in TIES:
            raise ThaiEvalDataError(f"ties must be one of {TIES}, got {self.ties!r}", field="ties")
        template_fields(self.prompt)


@dataclass(frozen=True)
class GenerationTask(_Declared):
    """A generation task scored against a reference (lm-eval ``output_type: generate_until``).

    Args:
        name, data, id_field, title, version: as :class:`MultipleChoiceTask`.
        prompt: a template with ``{field}`` placeholders (sent with ``model.generate``), or chat messages
            (``[{"role": "user", "content": "... {field} ..."}]``, sent with ``model.chat``).
        reference: the field holding the reference text.
        metrics: names in :data:`~.metrics.GENERATION_METRICS` (exact_match, rougeL, chrf, bleu).
        max_new_tokens, stop, temperature, top_p, seed: decoding (temperature 0: greedy; ``seed`` seeds every
            item's sampling, so an item's text does not depend on its batch).
        fewshot: first-n examples (prompt + target delimiter + reference) before each plain prompt.
    """

    name: str
    data: str
    prompt: str | Sequence[Mapping[str, str]]
    reference: str
    metrics: Sequence[str] = ("exact_match",)
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

    kind = "generation"

    def __post_init__(self) -> None:
        self._check_name()
        for name in ("metrics", "stop"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if not isinstance(self.prompt, str):
            messages = tuple(dict(m) for m in self.prompt)
            bad = [m for m in messages if set(m) != {"role", "content"} or not all(isinstance(v, str) for v in m.values())]
            if bad or not messages:
                raise ThaiEvalDataError("chat prompt messages need exactly 'role' and 'content' text", field="prompt")
            if self.fewshot is not None:
                raise ThaiEvalDataError("few-shot examples go with a plain prompt (write them as chat turns instead)",
                                        field="fewshot")
            object.__setattr__(self, "prompt", messages)
        for text in self.templates().values():
            template_fields(text)
        unknown = [m for m in self.metrics if m not in GENERATION_METRICS]
        if unknown or not self.metrics:
            raise ThaiEvalDataError(f"unknown generation metric(s) {unknown}; choose from {', '.join(GENERATION_METRICS)}",
                                    field="metrics")
        if self.max_new_tokens < 1:
            raise ThaiEvalDataError("max_new_tokens must be at least 1", field="max_new_tokens")

    @property
    def is_chat(self) -> bool:
        return not isinstance(self.prompt, str)

    def templates(self) -> dict[str, str]:
        """Template name -> text (recorded by hash in the run card)."""
        if isinstance(self.prompt, str):
            return {"prompt": self.prompt}
        return {f"message_{i}_{m['role']}": m["content"] for i, m in enumerate(self.prompt)}


DeclaredTask = MultipleChoiceTask | GenerationTask

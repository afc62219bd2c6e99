"""Declared tasks: a multiple-choice or generation task written as data in the user's own file, run
on the package's engines, run loop and store, and read by every consumer through the registry like a shipped
benchmark. ``docs/adding_a_task.md`` shows both kinds.

- ``declared``: :class:`MultipleChoiceTask`, :class:`GenerationTask`, :class:`FewShot` (frozen declarations);
- ``items``: the data file read and validated whole (file, row and field named), the prompts filled;
- ``metrics``: metrics as objects (:class:`Metric`: per item, or over the corpus by sufficient statistics): lm-eval's
  ``acc`` / ``acc_norm`` (the package's one implementation), exact match, ROUGE-L, token F1, BLEU, chrF;
- ``runner``: :func:`run_task` (resumable), :class:`TaskRun`;
- ``judged``: :class:`~.judged.JudgedMetric`, a generation metric scored by an LLM judge (``judging``);
- ``shaping``: what code says where data cannot: few-shot samplers (``FirstN``, ``RandomSample``) and reply
  filters (``RegexExtract``, ``AnswerTag``); prompt, choices, gold, reference and process_docs may be functions;
- ``declared_suite``: :class:`DeclaredSuite`, the task as a registry suite (``task.as_suite(source)``);
- ``thinking``: models that think: :class:`ThinkingOption`, :func:`split_reply` (the cut every
  generation task scores), :func:`thinking_option` (from the CLI flags / notebook parameters);
- ``language``: answers in Thai: :func:`reply_stats` (unclosed thinking and the Thai rate of a run's
  replies, for any suite's summary), :func:`is_mainly_thai`.

Layering: above ``core``, ``stats``, ``backend`` and ``judging``, below the benchmark packages (which may use its
metrics and runner).
"""

from __future__ import annotations

from pathlib import Path

from thai_eval_utils.core.registry import get_suite, include_path, suites
from thai_eval_utils.tasks.declared import FewShot, GenerationTask, MultipleChoiceTask
from thai_eval_utils.tasks.items import load_items
from thai_eval_utils.tasks.metrics import (
    GENERATION_METRICS,
    Bleu,
    ChoiceMetric,
    ChrF,
    ExactMatch,
    LoglikelihoodAccuracy,
    Metric,
    RougeL,
    TokenF1,
    multiple_choice,
)
from thai_eval_utils.tasks.runner import TaskRun, run_task
from thai_eval_utils.tasks.declared_suite import DeclaredSuite
from thai_eval_utils.tasks.language import is_mainly_thai, reply_stats
from thai_eval_utils.tasks.thinking import ThinkingOption, split_reply, thinking_option


def task_named(name: str, tasks_dir: str | Path | None = None) -> MultipleChoiceTask | GenerationTask:
    """The declared task ``name`` as the registry found it (bound to its file's folder). ``tasks_dir`` (a task file
    or a folder of them) is included first unless the registry already has ``name`` (``thai-eval run --tasks-dir``
    hands its folders to the notebooks' kernels as ``$THAI_EVAL_TASKS``: including the same file again would
    register the name twice)."""
    if tasks_dir is not None and name not in suites():
        include_path(tasks_dir)
    suite = get_suite(name)
    if not isinstance(suite, DeclaredSuite):
        raise TypeError(f"{name!r} is a shipped suite ({suite!r}), not a declared task")
    return suite.task


__all__ = [
    "GENERATION_METRICS",
    "Bleu",
    "ChoiceMetric",
    "ChrF",
    "DeclaredSuite",
    "ExactMatch",
    "LoglikelihoodAccuracy",
    "Metric",
    "RougeL",
    "TokenF1",
    "FewShot",
    "GenerationTask",
    "MultipleChoiceTask",
    "TaskRun",
    "ThinkingOption",
    "is_mainly_thai",
    "load_items",
    "multiple_choice",
    "reply_stats",
    "run_task",
    "split_reply",
    "task_named",
    "thinking_option",
]

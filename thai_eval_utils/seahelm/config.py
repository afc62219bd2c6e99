"""SEA-HELM v1.2.1's Thai task table (spec ``seahelm_thai.md`` 1.1-1.3, 3.1-3.3): each task's results key,
competency, aggregation group, metric, shot counts, ``max_tokens`` and prompt pieces, read from the package data
``prompts/th_tasks.json`` (extracted verbatim from each task's ``config.yaml`` at @6844e6c by
``benchmarks/seahelm_extract_prompts.py``), and the eight run seeds.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass
from functools import cache
from typing import Any

#: The SEA-HELM code commit the prompts, metrics and aggregation follow (tag v1.2.1).
SEAHELM_COMMIT = "6844e6c"
#: The official eight run seeds, run r uses SEEDS[r] (``run_evaluation.slurm:23``; spec 3.3).
SEEDS = (25008113, 42008474, 15226423, 28126671, 19128282, 39305000, 17765035, 23194592)
#: The official number of runs (``docs/score_calculations.md:7``).
N_RUNS = len(SEEDS)
#: Base models: stop strings of the non-logprob tasks (``seahelm_tasks/constants.yaml:4-5``).
BASE_STOP = ("\n\n",)
#: Added to every task's max_tokens for reasoning models (``reasoning_generation_config.yaml:3``).
MAX_THINK_TOKENS = 20000
#: The tasks the Thai ``seahelm`` list runs after alias expansion (``task_config.yaml:20``), in that order, plus
#: Belebele (a Thai entry in no list) and the ``-logprobs`` twins (``seahelm_logprobs``, spec 1.1).
DEFAULT_TASKS = (
    "sentiment",
    "qa",
    "toxicity",
    "translation-en-xx",
    "translation-xx-en",
    "abssum",
    "causal",
    "nli",
    "if-eval",
    "thai_exam_a_level",
    "thai_exam_ic",
    "thai_exam_onet",
    "thai_exam_tgat",
    "thai_exam_tpat1",
    "mt-bench-judge",
)


@dataclass(frozen=True)
class TaskConfig:
    """One Thai task as its ``config.yaml`` sets it (the ``th`` language entry merged into the task's keys)."""

    key: str
    name: str
    competency: str
    metric_class: str
    metric: str
    max_tokens: int
    preamble: str
    task_template: str
    answer_template: str
    answer_tag: str
    shots_instruct: int | None
    shots_base: int | None
    aggregation_group: str | None = None
    max_n_runs: int | None = None
    use_logprobs: bool = False
    filepath: str | None = None
    example_filepath: str | None = None
    source: str = ""

    @property
    def is_logprobs(self) -> bool:
        """A ``-logprobs`` twin (its strategy is chosen by the name, ``src/seahelm_evaluation.py:499``)."""
        return "logprobs" in self.key

    @property
    def parent(self) -> str:
        """The task whose prompts and data a ``-logprobs`` twin shares (itself otherwise)."""
        return self.key.removesuffix("-logprobs")

    def shots(self, base: bool) -> int | None:
        """``fewshot_num_examples[base|instruct]`` (None: not configured, pitfall P7)."""
        return self.shots_base if base else self.shots_instruct

    def runs(self, n_runs: int, *, reasoning: bool = False) -> list[int]:
        """The run indices this task runs out of ``n_runs``: those below ``max_n_runs`` (run 0 only for the
        ``-logprobs`` twins), every run for reasoning models (``src/task_config.py:141-161``)."""
        if self.max_n_runs is None or reasoning:
            return list(range(n_runs))
        return list(range(min(n_runs, self.max_n_runs)))

    def templates(self) -> dict[str, str]:
        """The prompt pieces by name (their hashes key the run)."""
        return {k: getattr(self, k) for k in ("preamble", "task_template", "answer_template", "answer_tag")}


@cache
def _raw() -> dict[str, Any]:
    path = importlib.resources.files("thai_eval_utils.seahelm") / "prompts" / "th_tasks.json"
    return json.loads(path.read_text(encoding="utf-8"))


def constants() -> dict[str, Any]:
    """SEA-HELM's ``seahelm_tasks/constants.yaml`` (skip lists, default shot counts, stop tokens)."""
    return dict(_raw()["constants"])


@cache
def task_configs() -> dict[str, TaskConfig]:
    """Every Thai task this package knows, by results key (SEA-HELM's list order, then Belebele and the twins)."""
    out = {}
    for key, c in _raw()["tasks"].items():
        pt, shots = c["prompt_template"], c.get("fewshot_num_examples") or {}
        out[key] = TaskConfig(
            key=key,
            **{k: c[k] for k in ("name", "competency", "metric_class", "metric")},
            max_tokens=int(c["max_tokens"]),
            **{k: pt[k] for k in ("preamble", "task_template", "answer_template", "answer_tag")},
            shots_instruct=shots.get("instruct"),
            shots_base=shots.get("base"),
            **{k: c.get(k) for k in ("aggregation_group", "max_n_runs", "filepath", "example_filepath")},
            use_logprobs=bool(c.get("use_logprobs", False)),
            source=c.get("source", ""),
        )
    return out


def task_config(key: str) -> TaskConfig:
    """One task's configuration; a ``KeyError`` listing the known keys."""
    table = task_configs()
    if key not in table:
        raise KeyError(f"unknown SEA-HELM Thai task {key!r}; known: {', '.join(table)}")
    return table[key]

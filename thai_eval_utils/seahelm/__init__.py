"""SEA-HELM v1.2.1's Thai tasks (AI Singapore; spec ``seahelm_thai.md``): prompts verbatim from its configs, answers
read after its answer tags, its metric classes, repeated runs with its eight seeds and the standard error its
aggregation notebook computes. ``run_suite`` / ``run_task`` run them; the registry's suite is :mod:`.suite`."""

from thai_eval_utils.seahelm.config import SEEDS, task_config, task_configs
from thai_eval_utils.seahelm.runner import Protocol, TaskRun, run_suite, run_task

__all__ = ["SEEDS", "Protocol", "TaskRun", "run_suite", "run_task", "task_config", "task_configs"]

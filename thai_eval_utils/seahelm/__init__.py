"""SEA-HELM v1.2.1's Thai tasks (AI Singapore; spec ``seahelm_thai.md``): prompts verbatim from its configs, answers
read after its answer tags, its metric classes, repeated runs with its eight seeds and the standard error its
aggregation notebook computes. ``run_suite`` / ``run_seahelm_task`` run them; the registry's suite is :mod:`.suite`."""

from thai_eval_utils.seahelm.config import SEEDS, task_config, task_configs
from thai_eval_utils.seahelm.runner import Protocol, SeahelmTaskRun, run_suite, run_seahelm_task

__all__ = ["SEEDS", "Protocol", "SeahelmTaskRun", "run_suite", "run_seahelm_task", "task_config", "task_configs"]

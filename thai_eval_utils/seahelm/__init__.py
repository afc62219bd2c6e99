"""SEA-HELM v1.2.1's Thai tasks (AI Singapore; spec ``seahelm_thai.md``): prompts verbatim from its configs, answers
read after its answer tags, its metric classes, repeated runs with its eight seeds and the standard error its
aggregation notebook computes. ``run_suite`` / ``run_task`` run them; the registry's suite is :mod:`.suite`."""

from thai_eval_utils.seahelm.config import SEEDS, task_config, task_configs
from thai_eval_utils.seahelm.runner import EXTERNAL_RUNNERS, Protocol, TaskRun, run_suite, run_task
from thai_eval_utils.seahelm.ifeval_run import run_ifeval
from thai_eval_utils.seahelm.mt_bench_run import run_mt_bench

# IF-Eval and the MT-Bench judge run through their own modules (their checks and the one judge).
EXTERNAL_RUNNERS.update({"if-eval": run_ifeval, "mt-bench-judge": run_mt_bench})

__all__ = ["SEEDS", "Protocol", "TaskRun", "run_ifeval", "run_mt_bench", "run_suite", "run_task", "task_config",
           "task_configs"]

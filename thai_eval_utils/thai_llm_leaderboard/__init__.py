"""The Thai LLM Leaderboard (SCB 10X, VISTEC, SEACrowd; runner scbdatax/seacrowd-eval), scored as its runner scores
it (spec thai_llm_leaderboard.md). This part: the six log-likelihood tasks (NLU and exams) and the corrected variants
of XNLI and M3Exam; :mod:`.suite` is what the registry reads."""

from thai_eval_utils.thai_llm_leaderboard.data import TaskData, load_task
from thai_eval_utils.thai_llm_leaderboard.protocol import LEADERBOARD, NLUProtocol, runner_max_length
from thai_eval_utils.thai_llm_leaderboard.runner import NLURun, run_nlu_task, score_task
from thai_eval_utils.thai_llm_leaderboard.tasks import CORRECTED_TASKS, NLU_TASKS, RUNNER_TASKS, nlu_task

__all__ = [
    "CORRECTED_TASKS",
    "LEADERBOARD",
    "NLURun",
    "NLUProtocol",
    "NLU_TASKS",
    "RUNNER_TASKS",
    "TaskData",
    "load_task",
    "nlu_task",
    "run_nlu_task",
    "runner_max_length",
    "score_task",
]

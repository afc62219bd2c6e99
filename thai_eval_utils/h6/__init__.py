"""Thai-H6 (Kim et al., arXiv 2410.04795, section 3): six tasks scored as the Open LLM Leaderboard ran
lm-evaluation-harness.

- ``protocol``: every option that changes a number as one object (``H6Protocol``; ``LEADERBOARD``, ``LM_EVAL``).
- ``prompts``: the templates and each task's query text, answer choices and gold index.
- ``tasks``: ``H6Task`` per task (its declaration with the protocol applied): few-shot pools, requests, the model
  call, per-document scoring.
- ``metrics``: acc, acc_norm, mc1, mc2, GSM8K answer extraction, MMLU macro average.
- ``fewshot``: the few-shot samplers (leaderboard replay, lm-eval 0.4.13, first-n).
- ``evaluation``: ``evaluate`` one task with resume, ``evaluate_tasks``; ``average``: the H6 average (Table 4).
- ``data``: loaders for the official parquet layout and flat files.
- ``variants``: labelled variants for instruct and reasoning models (GSM8K in the chat template, the choice tasks
  asked for a letter): own task names and signatures, never in the H6 average (``H6Protocol.variants``).
"""

from thai_eval_utils.h6.average import AVERAGE_COLUMN, TASKS, H6Score, paper_results, run_row, run_tag, thai_h6_score
from thai_eval_utils.h6.data import H6_TASKS, H6TaskData, load_h6_task
from thai_eval_utils.h6.evaluation import (
    DocumentRequests,
    H6Result,
    document_requests,
    evaluate,
    evaluate_tasks,
    scores_frame,
)
from thai_eval_utils.h6.protocol import LEADERBOARD, LM_EVAL, VARIANTS, H6Protocol, protocol_from

__all__ = [
    "AVERAGE_COLUMN",
    "H6_TASKS",
    "LEADERBOARD",
    "LM_EVAL",
    "TASKS",
    "VARIANTS",
    "DocumentRequests",
    "H6Protocol",
    "H6Result",
    "H6Score",
    "H6TaskData",
    "document_requests",
    "evaluate",
    "evaluate_tasks",
    "load_h6_task",
    "paper_results",
    "protocol_from",
    "run_row",
    "run_tag",
    "scores_frame",
    "thai_h6_score",
]

"""ThaiCLI (Kim et al., arXiv 2410.04795, section 4): cultural alignment judged by an LLM.

- ``answers``: the evaluated model answers every question (resumable): a declared generation task
  (``answers_task``) run by :func:`thai_eval_utils.tasks.run_task`.
- ``judge_prompt``: the versioned judge prompt and the reply parser (``SCORE_PATTERN``, ``parse_judgement``), declared
  as a :class:`~thai_eval_utils.judging.JudgeRubric` (``thaicli_rubric``) and as the answers task's judged metric
  (``thaicli_metric``: 16 attempts, then 0).
- ``judge``: judging any chat model's way (API, local in-process, served) with :func:`thai_eval_utils.judging.judge_items`
  (16 attempts, then 0); ``scores``: the factoid / instruction / ThaiCLI scores; ``judge_summary``: the judging run's
  summary and items table, and the judge's noise floor from repeated judgements (``judge_answers(..., repeats=k)``).
- ``judge_order``: the effect of the order of the two references in the prompt (``judge_both_orders``).
- ``judge_free``: the offline, judge-free log-likelihood variant: an ordinary two-choice declared task
  (:mod:`thai_eval_utils.tasks`, lm-eval's acc_norm) that ``loglikelihood_preferences`` runs, and its aggregation.
- ``demo_judge_server``: a local ``transformers serve`` judge for the offline demo; ``open_judge`` (also
  ``"local:<spec>"``: a local model judging in-process).
- ``data``: the ThaiCLI loader.
"""

from thai_eval_utils.thaicli.answers import generate_answers, select_items
from thai_eval_utils.thaicli.data import THAICLI_FORMATS, load_thaicli
from thai_eval_utils.thaicli.judge import JudgeParams, JudgeRun, judge_answers
from thai_eval_utils.thaicli.scores import ThaiCLIScores, item_means, thaicli_scores
from thai_eval_utils.thaicli.judge_free import judge_free_scores, judge_vs_loglik, loglikelihood_preferences
from thai_eval_utils.thaicli.judge_order import OrderEffect, judge_both_orders, order_effect
from thai_eval_utils.thaicli.judge_prompt import (
    build_messages,
    judge_template,
    parse_judgement,
    thaicli_rubric,
)

__all__ = [
    "THAICLI_FORMATS",
    "JudgeParams",
    "JudgeRun",
    "OrderEffect",
    "ThaiCLIScores",
    "build_messages",
    "generate_answers",
    "item_means",
    "judge_answers",
    "judge_both_orders",
    "judge_free_scores",
    "judge_template",
    "judge_vs_loglik",
    "load_thaicli",
    "loglikelihood_preferences",
    "order_effect",
    "parse_judgement",
    "select_items",
    "thaicli_rubric",
    "thaicli_scores",
]

"""ThaiCLI (Kim et al., arXiv 2410.04795, section 4): cultural alignment judged by an LLM.

- ``answers``: the evaluated model answers every question (resumable).
- ``judge_prompt``: the versioned judge prompt and the reply parser (``SCORE_PATTERN``, ``parse_judgement``).
- ``judge``: the judging loop (16 attempts, then 0) and the factoid / instruction scores.
- ``judge_cache``: the append-only judgement cache.
- ``judge_free``: the offline, judge-free log-likelihood variant.
- ``demo_judge_server``: a local ``transformers serve`` judge for the offline demo.
- ``data``: the ThaiCLI loader.
"""

from thai_eval_utils.thaicli.answers import generate_answers, select_items
from thai_eval_utils.thaicli.data import THAICLI_FORMATS, load_thaicli
from thai_eval_utils.thaicli.judge import (
           JudgeParams,
           JudgeRun,
           ThaiCLIScores,
           judge_answers,
           thaicli_scores,
)
from thai_eval_utils.thaicli.judge_free import (
           judge_free_scores,
           judge_vs_loglik,
           loglikelihood_preferences,
)
from thai_eval_utils.thaicli.judge_prompt import build_messages, parse_judgement

__all__ = ["THAICLI_FORMATS", "JudgeParams", "JudgeRun", "ThaiCLIScores", "build_messages", "generate_answers",
           "judge_answers", "judge_free_scores", "judge_vs_loglik", "load_thaicli", "loglikelihood_preferences",
           "parse_judgement", "select_items", "thaicli_scores"]

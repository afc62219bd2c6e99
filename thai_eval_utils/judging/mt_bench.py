"""MT-Bench single-answer grading as a rubric (Zheng et al., arXiv 2306.05685; FastChat
``fastchat/llm_judge/data/judge_prompts.jsonl`` "single-v1", ``fastchat/llm_judge/common.py``): a second judge is a
declaration (issue 29). Only the declaration: the MT-Bench Thai benchmark that uses it comes with a later issue.

FastChat reads the rating with ``\\[\\[(\\d+\\.?\\d*)\\]\\]``, then, where that matches nowhere, with the backup
``\\[(\\d+\\.?\\d*)\\]``; a reply matching neither scores -1 (``show_result.py`` drops -1 from the means). It asks
once (no parse retries) and checks no range: the prompt asks for 1 to 10, and a rating outside is kept as FastChat
keeps it.
"""

from __future__ import annotations

import re

from thai_eval_utils.judging.rubric import JudgeParams, JudgeRubric, ReplyParser

#: FastChat ``common.py``: ``one_score_pattern`` and ``one_score_pattern_backup`` (tried in this order).
RATING_PATTERN = re.compile(r"\[\[(\d+\.?\d*)\]\]")
RATING_PATTERN_BACKUP = re.compile(r"\[(\d+\.?\d*)\]")
#: FastChat's rating of a judgement without one (``rating = -1``).
NO_RATING = -1.0

MT_BENCH_PARSER = ReplyParser(patterns=(RATING_PATTERN, RATING_PATTERN_BACKUP), score_range=None,
                              fallback_score=NO_RATING, fallback_status="no_rating")  # fmt: skip

#: judge_prompts.jsonl "single-v1": system prompt and prompt template (``{question}``/``{answer}`` as ``${...}``).
SINGLE_V1_SYSTEM = "You are a helpful assistant."
SINGLE_V1_USER = (
    "[Instruction]\nPlease act as an impartial judge and evaluate the quality of the response provided by an AI "
    "assistant to the user question displayed below. Your evaluation should consider factors such as the helpfulness, "
    "relevance, accuracy, depth, creativity, and level of detail of the response. Begin your evaluation by providing a "
    "short explanation. Be as objective as possible. After providing your explanation, you must rate the response on "
    "a scale of 1 to 10 by strictly following this format: \"[[rating]]\", for example: \"Rating: [[5]]\".\n\n"
    "[Question]\n${question}\n\n[The Start of Assistant's Answer]\n${answer}\n[The End of Assistant's Answer]"
)

#: FastChat's judge settings: temperature 0, 2,048 tokens, one call.
MT_BENCH_SINGLE = JudgeRubric.declare("mt_bench_single", "single-v1", system=SINGLE_V1_SYSTEM, user=SINGLE_V1_USER,
                                      fields=("question", "answer"), parser=MT_BENCH_PARSER,
                                      params=JudgeParams(max_tokens=2048, temperature=0.0, seed=0, max_calls=1))  # fmt: skip

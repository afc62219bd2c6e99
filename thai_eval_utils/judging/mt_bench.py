"""MT-Bench single-answer grading as a rubric (Zheng et al., arXiv 2306.05685; FastChat
``fastchat/llm_judge/data/judge_prompts.jsonl`` "single-v1", ``fastchat/llm_judge/common.py``): a second judge is a
declaration. The four single-answer templates are declared here (single-v1, single-math-v1 and their
multi-turn forms, verbatim from FastChat @0e6d3e4, which scbdatax/seacrowd-eval copies as
``evaluation/mt_bench_data/judge_prompt.jsonl``); the Thai LLM Leaderboard's MT-Bench Thai uses them
(:mod:`thai_eval_utils.thai_llm_leaderboard.mt_bench`).

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

MT_BENCH_PARSER = ReplyParser(
    patterns=(RATING_PATTERN, RATING_PATTERN_BACKUP),
    score_range=None,
    fallback_score=NO_RATING,
    fallback_status="no_rating",
)

#: judge_prompts.jsonl "single-v1": system prompt and prompt template (``{question}``/``{answer}`` as ``${...}``).
SINGLE_V1_SYSTEM = "You are a helpful assistant."
SINGLE_V1_USER = (
    "[Instruction]\nPlease act as an impartial judge and evaluate the quality of the response provided by an AI "
    "assistant to the user question displayed below. Your evaluation should consider factors such as the helpfulness, "
    "relevance, accuracy, depth, creativity, and level of detail of the response. Begin your evaluation by providing a "
    "short explanation. Be as objective as possible. After providing your explanation, you must rate the response on "
    'a scale of 1 to 10 by strictly following this format: "[[rating]]", for example: "Rating: [[5]]".\n\n'
    "[Question]\n${question}\n\n[The Start of Assistant's Answer]\n${answer}\n[The End of Assistant's Answer]"
)

#: FastChat's judge settings: temperature 0, 2,048 tokens, one call.
MT_BENCH_SINGLE = JudgeRubric.declare(
    "mt_bench_single",
    "single-v1",
    system=SINGLE_V1_SYSTEM,
    user=SINGLE_V1_USER,
    fields=("question", "answer"),
    parser=MT_BENCH_PARSER,
    params=JudgeParams(max_tokens=2048, temperature=0.0, seed=0, max_calls=1),
)


#: judge_prompts.jsonl "single-math-v1" system prompt and prompt template.
SINGLE_MATH_V1_SYSTEM = "You are a helpful assistant."
SINGLE_MATH_V1_USER = (
    "[Instruction]\nPlease act as an impartial judge and evaluate the quality of the response provided by "
    "an AI assistant to the user question displayed below. Your evaluation should consider correctness "
    "and helpfulness. You will be given a reference answer and the assistant's answer. Begin your "
    "evaluation by comparing the assistant's answer with the reference answer. Identify and correct any "
    "mistakes. Be as objective as possible. After providing your explanation, you must rate the response "
    'on a scale of 1 to 10 by strictly following this format: "[[rating]]", for example: "Rating: '
    '[[5]]".\n\n[Question]\n${question}\n\n[The Start of Reference Answer]\n${ref_answer_1}\n[The End of '
    "Reference Answer]\n\n[The Start of Assistant's Answer]\n${answer}\n[The End of Assistant's Answer]"
)

#: judge_prompts.jsonl "single-v1-multi-turn" system prompt and prompt template.
SINGLE_V1_MULTI_TURN_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the response provided by an AI "
    "assistant to the user question displayed below. Your evaluation should consider factors such as the "
    "helpfulness, relevance, accuracy, depth, creativity, and level of detail of the response. You "
    "evaluation should focus on the assistant's answer to the second user question. Begin your "
    "evaluation by providing a short explanation. Be as objective as possible. After providing your "
    "explanation, you must rate the response on a scale of 1 to 10 by strictly following this format: "
    '"[[rating]]", for example: "Rating: [[5]]".\n\n'
)
SINGLE_V1_MULTI_TURN_USER = (
    "<|The Start of Assistant A's Conversation with User|>\n\n### User:\n${question_1}\n\n### Assistant A:\n"
    "${answer_1}\n\n### User:\n${question_2}\n\n### Assistant A:\n${answer_2}\n\n<|The End of Assistant A's "
    "Conversation with User|>"
)

#: judge_prompts.jsonl "single-math-v1-multi-turn" system prompt and prompt template.
SINGLE_MATH_V1_MULTI_TURN_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the response provided by an AI "
    "assistant to the user question. Your evaluation should consider correctness and helpfulness. You "
    "will be given a reference answer and the assistant's answer. You evaluation should focus on the "
    "assistant's answer to the second question. Begin your evaluation by comparing the assistant's "
    "answer with the reference answer. Identify and correct any mistakes. Be as objective as possible. "
    "After providing your explanation, you must rate the response on a scale of 1 to 10 by strictly "
    'following this format: "[[rating]]", for example: "Rating: [[5]]".\n\n'
)
SINGLE_MATH_V1_MULTI_TURN_USER = (
    "<|The Start of Reference Answer|>\n\n### User:\n${question_1}\n\n### Reference answer:\n${ref_answer_1}\n\n"
    "### User:\n${question_2}\n\n### Reference answer:\n${ref_answer_2}\n\n<|The End of Reference Answer|>\n\n\n"
    "<|The Start of Assistant A's Conversation with User|>\n\n### User:\n${question_1}\n\n### Assistant A:\n"
    "${answer_1}\n\n### User:\n${question_2}\n\n### Assistant A:\n${answer_2}\n\n<|The End of Assistant A's "
    "Conversation with User|>"
)

#: FastChat's settings for every single-answer template: temperature 0, 2,048 tokens, one call.
_PARAMS = JudgeParams(max_tokens=2048, temperature=0.0, seed=0, max_calls=1)
MT_BENCH_SINGLE_MATH = JudgeRubric.declare(
    "mt_bench_single_math",
    "single-math-v1",
    system=SINGLE_MATH_V1_SYSTEM,
    user=SINGLE_MATH_V1_USER,
    fields=("question", "ref_answer_1", "answer"),
    parser=MT_BENCH_PARSER,
    params=_PARAMS,
)
MT_BENCH_SINGLE_MULTI_TURN = JudgeRubric.declare(
    "mt_bench_single_multi_turn",
    "single-v1-multi-turn",
    system=SINGLE_V1_MULTI_TURN_SYSTEM,
    user=SINGLE_V1_MULTI_TURN_USER,
    fields=("question_1", "answer_1", "question_2", "answer_2"),
    parser=MT_BENCH_PARSER,
    params=_PARAMS,
)
MT_BENCH_SINGLE_MATH_MULTI_TURN = JudgeRubric.declare(
    "mt_bench_single_math_multi_turn",
    "single-math-v1-multi-turn",
    system=SINGLE_MATH_V1_MULTI_TURN_SYSTEM,
    user=SINGLE_MATH_V1_MULTI_TURN_USER,
    fields=("question_1", "ref_answer_1", "question_2", "ref_answer_2", "answer_1", "answer_2"),
    parser=MT_BENCH_PARSER,
    params=_PARAMS,
)
#: The four single-answer rubrics by FastChat's template name.
MT_BENCH_RUBRICS = {
    r.version: r
    for r in (MT_BENCH_SINGLE, MT_BENCH_SINGLE_MATH, MT_BENCH_SINGLE_MULTI_TURN, MT_BENCH_SINGLE_MATH_MULTI_TURN)
}


def template_name(*, math: bool, multi_turn: bool) -> str:
    """FastChat's single-answer template name: ``single-v1`` or ``single-math-v1`` (with a reference answer),
    ``-multi-turn`` for the second turn (``gen_judgment.py`` make_judge_single)."""
    return ("single-math-v1" if math else "single-v1") + ("-multi-turn" if multi_turn else "")

"""One judge for any model: a judge is a rubric (versioned templates, a reply parser, call settings) and
any model that can ``chat`` (local in-process, served, API); judging runs on the run loop with the store, a shared
judgement cache, resume, repeats and unjudged records for failed calls. A layer beside ``stats``: imports only
``core``; the benchmark subpackages import it.

- ``rubric``: :class:`JudgeRubric`, :class:`ReplyParser`, :class:`JudgeParams`.
- ``judge``: :class:`Judge` (rubric + model + attempts policy) and ``judge_one``.
- ``sessions``: how a judgement calls a model (an API's async session, or an in-process model in batches).
- ``run``: :func:`judge_items`, prepare / call / finish; ``cache``: the append-only :class:`JudgementCache`.
- ``mt_bench``: MT-Bench single-answer grading (FastChat ``[[rating]]``, -1 on no parse), a second declaration.

Instances: ThaiCLI's judge (:func:`thai_eval_utils.thaicli.judge_prompt.thaicli_rubric`).
"""

from thai_eval_utils.judging.cache import JudgementCache, is_final, judgement_key
from thai_eval_utils.judging.judge import Judge, judge_one
from thai_eval_utils.judging.rubric import JudgeParams, JudgeRubric, ReplyParser
from thai_eval_utils.judging.run import JudgeOutcome, Judgement, judge_items
from thai_eval_utils.judging.sessions import BatchingSession, Reply, open_session

__all__ = [
    "BatchingSession",
    "Judge",
    "JudgeOutcome",
    "JudgeParams",
    "JudgeRubric",
    "Judgement",
    "JudgementCache",
    "Reply",
    "ReplyParser",
    "is_final",
    "judge_items",
    "judge_one",
    "judgement_key",
    "open_session",
]

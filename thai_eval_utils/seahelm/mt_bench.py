"""SEA-HELM's Thai multi-turn task, ``mt-bench-judge`` (spec ``seahelm_thai.md`` 4.7, A.1; aisingapore/SEA-HELM
@6844e6c ``seahelm_tasks/multi_turn/mt_bench_judge/``): the model answers two turns (the second sees its own first
answer), then a judge grades each answer against the row's criteria, one judgement per criterion.

- **Answers** (:func:`generate_answers`): turn 1 is the first prompt as the one user message; turn 2 is turn 1, the
  model's first answer (its thinking cut) as the assistant message, and the second prompt (spec 2.2 step 5).
- **Judge prompts** (:func:`judge_items_of`): for criterion i of turn t, a system message (SEA-HELM's
  ``system_prompt``) and a user message (``criteria_prompt.turn_<t+1>``) filled with the transcript, the answer and
  the criterion (``mtbench_judge_dataloader.py:11-84``). The texts are SEA-HELM's, verbatim, in
  ``judge_prompts/mt_bench_judge.json`` (package data); the judge is the package's one judge
  (:mod:`thai_eval_utils.judging`: store, cache, resume, repeats), on any chat model. SEA-HELM's judge is
  ``openai/gpt-oss-120b`` (:data:`DEFAULT_JUDGE`) with 16,384 tokens, reasoning effort high and vLLM's default
  temperature 1.0, the run's seed; one call per criterion.
- **Scores** (``mtbench_judge_metric.py:39-239``): the LAST ``<classification>\\s*(\\w+)\\s*</classification>`` of
  the judge's reply, mapped CLASS_UNMET 0, SLIGHTLY 0.25, MODERATELY 0.5, MAJORLY 0.75, EXACTLY 1.0, anything else
  (or no tag) 0; a turn's score is the mean of its criteria (0.0 when it has none), a row's the mean of its two
  turns; ``average_criteria_score`` = 100 x the mean row score; ``categories`` = mean row score per category (0-1).

A first answer that is missing (its thinking never closed) is SEA-HELM's ``None``: a turn-1 judge prompt prints it
as ``None`` and every turn-2 criterion of the row is skipped (its transcript cannot be built), so turn 2 scores 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from importlib import resources
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.judging.rubric import JudgeParams, JudgeRubric, ReplyParser
from thai_eval_utils.tasks.thinking import ThinkingOption, split_reply

TASK = "mt-bench-judge"
PRIMARY = "average_criteria_score"
#: SEA-HELM's judge (``config.yaml:13``); any chat model may judge instead (the run card names the one used).
DEFAULT_JUDGE = "openai/gpt-oss-120b"
#: ``mtbench_judge_metric.py:57-58``: the classification tag (the last one in the reply counts).
CLASSIFICATION = re.compile(r"<classification>\s*(\w+)\s*</classification>")
#: ``mtbench_judge_metric.py:81``: the reflection (the last one; no newline inside).
REFLECTION = re.compile(r"<reflection>(.*?)</reflection>")
#: The conversation kind that is the only difference between the two turn templates.
KINDS = ("single-turn", "multi-turn")


@lru_cache(maxsize=None)
def prompts(name: str = "mt_bench_judge") -> dict[str, Any]:
    """SEA-HELM's judge configuration (``judge_prompts/<name>.json``: its prompt texts verbatim, the classes, the
    judge and its settings)."""
    text = resources.files("thai_eval_utils").joinpath(f"seahelm/judge_prompts/{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def _as_template(text: str, fields: Sequence[str]) -> str:
    """A ``str.format`` text with ``fields`` as a :class:`string.Template` text (``$`` escaped first)."""
    out = text.replace("$", "$$")
    for f in fields:
        out = out.replace("{" + f + "}", "${" + f + "}")
    left = re.search(r"(?<!\$)\{\w*\}", out)
    if left:
        raise ValueError(f"unexpected format field left in a judge template: {left.group(0)}")
    return out


# ------------------------------------------------------------------------------------------------- rubric
@dataclass(frozen=True)
class ClassificationParser(ReplyParser):
    """SEA-HELM's reading of a criteria judgement: the last classification tag of the reply (after a closed
    thinking block is cut; an unclosed one reads as no tag) mapped to its score; an unknown class scores 0; a reply
    without a tag is the fallback (score 0, status ``no_classification``)."""

    classes: tuple[tuple[str, float], ...] = ()

    def parse(self, text: str | None) -> tuple[float, str] | None:
        if not text:
            return None
        label = extract_classification(text)
        if label is None:
            return None
        return float(dict(self.classes).get(label, 0.0)), extract_reflection(text) or ""

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "classes": [list(c) for c in self.classes], "last_match": True}


def _last(pattern: re.Pattern[str], text: str | None) -> str | None:
    """The last match of ``pattern`` in the reply after its thinking (None without one), stripped."""
    answer = split_reply(text).answer if text else None
    found = pattern.findall(answer) if answer else []
    return found[-1].strip() if found else None


def extract_classification(text: str | None) -> str | None:
    """The last classification tag's class name (``mtbench_judge_metric.py:39-62``), None without one."""
    return _last(CLASSIFICATION, text)


def extract_reflection(text: str | None) -> str | None:
    """The last reflection's text, stripped (``mtbench_judge_metric.py:64-84``)."""
    return _last(REFLECTION, text)


def judge_params(seed: int | None = 0) -> JudgeParams:
    """SEA-HELM's judge settings: 16,384 tokens, vLLM's default temperature 1.0 and top-p 1.0 (SEA-HELM sends none),
    the run's seed, one call (no retry: an unreadable reply scores 0). ``reasoning_effort: high`` is a gpt-oss
    setting no :class:`JudgeParams` carries: give it to the judge model."""
    kwargs = prompts()["judge_generation_kwargs"]
    return JudgeParams(max_tokens=int(kwargs["max_tokens"]), temperature=1.0, top_p=1.0, seed=seed, max_calls=1)


@lru_cache(maxsize=16)
def rubric(params: JudgeParams | None = None) -> JudgeRubric:
    """The criteria judge as a :class:`JudgeRubric`: SEA-HELM's system prompt and turn template with the fields
    ``conversation`` (``single-turn`` / ``multi-turn``: the two turn templates differ only there), ``transcript``,
    ``response`` and ``keyPointText``. Raises ValueError if the two templates differ otherwise."""
    cfg = prompts()
    t1, t2 = cfg["criteria_prompt"]["turn_1"], cfg["criteria_prompt"]["turn_2"]
    if t2.count(KINDS[1]) != 1 or t2.replace(KINDS[1], KINDS[0]) != t1:
        raise ValueError("SEA-HELM's two criteria templates differ in more than the conversation kind")
    fields = ("transcript", "response", "keyPointText")
    user = _as_template(t2, fields).replace(KINDS[1], "${conversation}")
    parser = ClassificationParser(
        patterns=(CLASSIFICATION,),
        score_range=None,
        fallback_score=0.0,
        fallback_status="no_classification",
        explanation=REFLECTION,
        classes=tuple((k, float(v)) for k, v in cfg["classifications"].items()),
    )
    return JudgeRubric.declare(
        "seahelm_mt_bench_judge",
        "seahelm-6844e6c",
        system=_as_template(cfg["system_prompt"], ()),
        user=user,
        fields=("conversation", *fields),
        parser=parser,
        params=params or judge_params(),
    )


# ------------------------------------------------------------------------------------------------- rows
@dataclass(frozen=True)
class MTBenchRow:
    """One mt-bench-judge row (spec 2.1): the two turns' prompt fields, the criteria ``(turn 0|1, text)`` and the
    category."""

    id: str
    prompts: tuple[dict[str, Any], ...]
    criteria: tuple[tuple[int, str], ...]
    category: str
    language: str = "th"

    def turn_text(self, turn: int) -> str:
        """``task_template.format(**prompts[turn])`` with SEA-HELM's Thai template ``{text}``."""
        return prompts()["task_template"].format(**self.prompts[turn])

    def key_point(self, i: int) -> str:
        """Criterion i as the judge sees it: ``criterion.format(**prompts[0])`` (``mtbench_judge_dataloader.py:63-65``)."""
        return self.criteria[i][1].format(**self.prompts[0])


def parse_row(rec: Mapping[str, Any], *, path: str | None = None, row: int = 0) -> MTBenchRow:
    """One record in SEA-HELM's row contract (``id``, ``prompts`` of two turns, ``criteria``, ``metadata.category``),
    checked: a criterion that cannot be formatted (a brace) raises here, not mid-run (SEA-HELM: spec P16)."""
    bad = partial(ThaiEvalDataError, path=path, row=row)
    ps, crit, meta = rec.get("prompts"), rec.get("criteria"), rec.get("metadata")
    if (
        not isinstance(ps, list)
        or len(ps) != 2
        or not all(isinstance(p, Mapping) and isinstance(p.get("text"), str) and p["text"].strip() for p in ps)
    ):
        raise bad("expected two turns, each {'text': <non-empty text>}", field="prompts")
    if not isinstance(crit, list) or not crit:
        raise bad("expected a non-empty list of {turn, criterion}", field="criteria")
    for c in crit:
        if not isinstance(c, Mapping) or c.get("turn") not in (0, 1) or not isinstance(c.get("criterion"), str):
            raise bad(f"bad criterion {c!r}: turn 0 or 1 and a text", field="criteria")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("category"), str):
        raise bad("missing metadata.category", field="metadata")
    if rec.get("id") is None:
        raise bad("missing", field="id")
    if "_" in str(rec["id"]):  # SEA-HELM splits custom ids on "_" into three parts (spec P16)
        raise bad(f"id {str(rec['id'])!r} contains '_', which SEA-HELM's judgement ids cannot carry", field="id")
    criteria = tuple((int(c["turn"]), c["criterion"]) for c in crit)
    out = MTBenchRow(
        str(rec["id"]), tuple(dict(p) for p in ps), criteria, meta["category"], str(meta.get("language") or "th")
    )
    for i in range(len(criteria)):
        try:
            out.key_point(i)
        except (KeyError, IndexError, ValueError) as exc:
            raise bad(
                f"criterion {i} cannot be formatted with the first turn's fields ({exc!r})", field="criteria"
            ) from None
    return out


# ------------------------------------------------------------------------------------------------- answers
def turn_messages(row: MTBenchRow, turn: int, first_answer: str | None = None) -> list[dict[str, str]]:
    """The conversation of turn 0 or turn 1 (spec 2.2: each user message stripped; in turn 1 the first answer as the
    assistant message, ``""`` when it is missing)."""
    first = [{"role": "user", "content": row.turn_text(0).strip()}]
    if turn == 0:
        return first
    return [
        *first,
        {"role": "assistant", "content": first_answer or ""},
        {"role": "user", "content": row.turn_text(1).strip()},
    ]


def answered(raw: str | None, thinking: ThinkingOption) -> str | None:
    """The answer a judge and the next turn see: the reply with its thinking cut; None for no reply or a thinking
    block that never closed (SEA-HELM's ``None``)."""
    return None if raw is None else split_reply(raw, thinking).answer


# ------------------------------------------------------------------------------------------------- judge items
@dataclass(frozen=True)
class CriterionItem:
    """One judgement to make: row ``row``, criterion ``index`` of turn ``turn``, SEA-HELM's custom id and the texts."""

    row: int
    index: int
    turn: int
    custom_id: str
    texts: dict[str, str] = field(default_factory=dict)


def judge_items_of(
    rows: Sequence[MTBenchRow], answers: Sequence[tuple[str | None, str | None]]
) -> tuple[list[CriterionItem], list[str]]:
    """The judgements of every row (``mtbench_judge_dataloader.py:14-82``), in row then criterion order, and the
    custom ids of the criteria SEA-HELM skips (turn 2 of a row without a first answer). ``answers``: per row the
    two answers as the judge sees them (thinking cut; None when missing)."""
    items, skipped = [], []
    for r, (row, (a1, a2)) in enumerate(zip(rows, answers, strict=True)):
        for i, (turn, _) in enumerate(row.criteria):
            cid = f"{row.id}_turn{turn}_criteria{i}"
            if turn == 0:
                transcript, response = "[User]\n" + row.turn_text(0), a1
            elif a1 is None:
                skipped.append(cid)
                continue
            else:
                transcript = (
                    "[User]\n" + row.turn_text(0) + "\n\n[Assistant (fixed)]\n" + a1 + "\n\n[User]\n" + row.turn_text(1)
                )
                response = a2
            texts = {
                "conversation": KINDS[turn],
                "transcript": transcript,
                "response": str(response),
                "keyPointText": row.key_point(i),
            }
            items.append(CriterionItem(r, i, turn, cid, texts))
    return items, skipped


# ------------------------------------------------------------------------------------------------- scores
def row_scores(row: MTBenchRow, judged: Mapping[str, float | None]) -> dict[str, Any]:
    """A row's scores from its judgements (custom id -> score 0-1; None, a judgement never made, counts 0 as
    SEA-HELM's empty reply does): ``scores`` per turn in SEA-HELM's order (custom ids sorted as strings),
    ``turn_scores`` (mean per turn, 0.0 without criteria) and ``final_scores`` (their mean: always both turns)."""
    scores, turn_scores = [], []
    for turn in range(2):
        ids = sorted(cid for cid in judged if cid.split("_")[1] == f"turn{turn}" and cid.split("_")[0] == row.id)
        values = [float(judged[c] or 0.0) for c in ids]
        scores.append(values)
        turn_scores.append(sum(values) / len(values) if values else 0.0)
    return {"scores": scores, "turn_scores": turn_scores, "final_scores": sum(turn_scores) / len(turn_scores)}


def mt_bench_metrics(finals: Sequence[float], categories: Sequence[str]) -> dict[str, Any]:
    """``categories`` (mean row score per category, 0-1, sorted by name) and ``average_criteria_score`` (100 x the
    mean row score) (``get_judge_metrics``, ``mtbench_judge_metric.py:196-239``)."""
    by: dict[str, list[float]] = {}
    for value, cat in zip(finals, categories, strict=True):
        by.setdefault(cat, []).append(float(value))
    return {
        "categories": {c: sum(v) / len(v) for c, v in sorted(by.items())},
        PRIMARY: (sum(finals) / len(finals) if finals else 0.0) * 100,
    }


def scored_rows(
    rows: Sequence[MTBenchRow], items: Sequence[CriterionItem], scores: Mapping[str, float | None]
) -> list[dict[str, Any]]:
    """Per row: id, category and :func:`row_scores` over the row's judgement ids (``scores``: custom id -> score)."""
    out = []
    for r, row in enumerate(rows):
        judged = {it.custom_id: scores.get(it.custom_id) for it in items if it.row == r}
        out.append({"id": row.id, "category": row.category, **row_scores(row, judged)})
    return out

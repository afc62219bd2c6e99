"""A small real results store for the report tests: the real run functions (Thai-H6, ThaiCLI answers and judge,
dialect generation) with two fake models on a few items of the shipped data, as tests/test_compare_runs.py makes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fake_openai_server import FakeOpenAIServer, PerAnswerScript, Reply
from fakes import FakeModel

from thai_eval_utils import h6
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.dialect import generation as D
from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.thaicli.answers import generate_answers
from thai_eval_utils.thaicli.data import load_thaicli
from thai_eval_utils.thaicli.judge import judge_answers

REPO = Path(__file__).resolve().parents[1]
H6_DATA = REPO / "data" / "thai_h6"
H6_TASKS = ["th_arc", "th_truthfulqa", "th_winogrande", "th_gsm8k"]
#: The judge's API key: it must never reach the report.
JUDGE_KEY = "sk-" + "reportfake0123456789abcdef"


def score_a(context: str, continuation: str) -> tuple[float, bool]:
    """Model A's log-likelihoods: a fixed pseudo-random function of the texts."""
    return -((sum(map(ord, context[-40:])) * 31 + sum(map(ord, continuation))) % 97) / 10.0, False


def score_b(context: str, continuation: str) -> tuple[float, bool]:
    """Model B prefers the shortest continuation."""
    return -float(len(continuation)), False


def make_store(out: Path, *, limit: int = 5) -> Path:
    """Write runs of ``model-a`` and ``model-b`` under ``out/runs``; returns ``out``."""
    for name, score, gen in (("model-a", score_a, "คำตอบคือ 42"), ("model-b", score_b, "ไม่ทราบ")):
        h6.evaluate_tasks(
            FakeModel(name, score=score, complete=lambda p, g=gen: g),
            str(H6_DATA),
            H6_TASKS,
            limit=limit,
            outputs=out,
            progress=False,
        )
    items = D.select_items(
        load_dialect(REPO / "data" / "dialect", dialects=["center", "east"]),
        tasks=["qa", "translation_en_to_dialect"],
        limit=3,
    )
    D.run_generation(
        FakeModel("model-a", reply=lambda m: m[0]["content"][-30:]), items, outputs=out, greedy=True, progress=False
    )
    D.run_generation(
        FakeModel("model-b", reply=lambda m: m[0]["content"][:30]), items, outputs=out, greedy=True, progress=False
    )
    cli = load_thaicli(REPO / "data" / "thaicli").groupby("format").head(3).reset_index(drop=True)
    script = PerAnswerScript(
        {"ข้าวเหนียว": [Reply("<score>5</score><explanation>พอใช้</explanation>")] * 6},
        default=Reply("<score>7</score><explanation>ตอบดีมาก</explanation>"),
    )
    with FakeOpenAIServer(script) as srv:
        judge = ApiModel("fake-judge", base_url=srv.base_url, api_key=JUDGE_KEY, concurrency=2)
        for name, answer in (("model-a", "กรุงเทพมหานคร"), ("model-b", "ข้าวเหนียว")):
            answers = generate_answers(FakeModel(name, reply=lambda m, a=answer: a), cli, outputs=out, progress=False)
            judge_answers(answers, judge, outputs=out, progress=False)
    return out


_SHARED: dict[str, Path] = {}


def shared_store(tmp_path_factory) -> Path:
    """One store per test session for every report test module (made on first use)."""
    if "store" not in _SHARED:
        _SHARED["store"] = make_store(tmp_path_factory.mktemp("report_store"))
    return _SHARED["store"]


#: Hostile text: markup, a script, an inline handler, an entity and GSM8K's calculator annotation.
#: A report that parsed it as HTML would set ``window.__pwned`` or the page title, or make a bold or image element.
PAYLOAD = (
    "<img src=x onerror=\"window.__pwned=1;document.title='PWNED'\"> <script>window.__pwned=2</script> "
    "<b>หนา</b> &amp; <<3*4=12>> 3 > 2"
)
#: A model name carrying markup and a handler.
HOSTILE_MODEL = '<b>evil</b><img src=x onerror="window.__pwned=3">'


def _hostile_arc(data: Path) -> Path:
    """A copy of the shipped Thai-H6 data whose first ARC test question starts with :data:`PAYLOAD`."""
    shutil.copytree(H6_DATA, data)
    path = data / "h6" / "th_arc_challenge" / "th_arc_challenge_test.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows[0]["question"] = PAYLOAD + " " + rows[0]["question"]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return data


def make_hostile_store(out: Path) -> Path:
    """A store whose question, model output, judge reply and model name carry :data:`PAYLOAD`:
    Thai-H6 ARC and GSM8K and ThaiCLI runs of :data:`HOSTILE_MODEL` and ``model-b``; returns ``out``."""
    data = _hostile_arc(out / "data_thai_h6")
    for name, output in ((HOSTILE_MODEL, PAYLOAD), ("model-b", "ไม่ทราบ")):
        h6.evaluate_tasks(
            FakeModel(name, score=score_a, complete=lambda p, o=output: o),
            str(data),
            ["th_arc", "th_gsm8k"],
            limit=2,
            outputs=out,
            progress=False,
        )
    cli = load_thaicli(REPO / "data" / "thaicli").groupby("format").head(1).reset_index(drop=True)
    script = PerAnswerScript({}, default=Reply(f"<score>6</score><explanation>{PAYLOAD}</explanation>"))
    with FakeOpenAIServer(script) as srv:
        judge = ApiModel("fake-judge", base_url=srv.base_url, api_key=JUDGE_KEY, concurrency=2)
        for name in (HOSTILE_MODEL, "model-b"):
            answers = generate_answers(FakeModel(name, reply=lambda m: PAYLOAD), cli, outputs=out, progress=False)
            judge_answers(answers, judge, outputs=out, progress=False)
    return out


def shared_hostile_store(tmp_path_factory) -> Path:
    """One hostile store per test session (made on first use)."""
    if "hostile" not in _SHARED:
        _SHARED["hostile"] = make_hostile_store(tmp_path_factory.mktemp("hostile_store"))
    return _SHARED["hostile"]

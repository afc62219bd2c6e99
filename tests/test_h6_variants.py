"""The labelled Thai-H6 variants (``h6.variants``): GSM8K through the chat template (``gsm8k-chat``) and the choice
tasks asked for a letter (``generative-mc``, ``tasks.generative_mc``): what the model is sent, how a reply is read
(after the thinking block), that every signature, config and table names the variant, and that no average, export
or paper table takes them in. The paper's tasks run as before (their own tests are unchanged)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import FakeModel

from thai_eval_utils import h6
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.h6.evaluation import stored_requests
from thai_eval_utils.h6 import variants as V
from thai_eval_utils.h6.protocol import LEADERBOARD
from thai_eval_utils.tasks import generative_mc as MC
from thai_eval_utils.tasks.thinking import thinking_option

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "thai_h6"
CHAT = LEADERBOARD.replace(variants="gsm8k-chat")
GMC = LEADERBOARD.replace(variants=["generative-mc"])

#: The generative-mc prompt of the first Thai ARC item of data/thai_h6, written out by hand.
ARC_0_PROMPT = (
    "เวลาเช้าตรู่ที่อากาศเย็นเรามักสังเกตเห็นหยดน้ำ เกาะอยู่ตามใบหญ้า\n"
    "เพราะอุณหภูมิของอากาศลดต่ำลงจนทำให้ไอน้ำ กลั่นตัวเป็นน้ำ ได้เราเรียก\n"
    "“จุดน้ำค้าง” หากจุดน้ำค้างมีค่าสูงนั่นคือปริมาณน้ำ ในอากาศขณะนั้นมีมาก\n"
    "\n"
    "ข้อความข้างต้นมีคำสันธานกี่คำ\n"
    "\n"
    "A. ๑ ค\u0e4d\u0e32\n"  # the data's own spelling: NIKHAHIT + SARA AA, not SARA AM
    "B. ๓ คำ\n"
    "C. ๔ คำ\n"
    "D. ๕ คำ\n"
    "E. ๖ คำ\n"
    "\n"
    "ตอบคำถามข้างต้นโดยเลือกตัวเลือกที่ถูกต้องเพียงข้อเดียว บรรทัดสุดท้ายของคำตอบต้องอยู่ในรูปแบบ "
    '"คำตอบ: X" โดย X คือตัวอักษรของตัวเลือก (A, B, C, D หรือ E)'
)


def _card(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / "run_card.json").read_text())


# ------------------------------------------------------------------------------------------------ gsm8k-chat
def test_gsm8k_chat_sends_the_few_shot_examples_as_turns(tmp_path):
    model = FakeModel("chatter", reply=lambda m: "ไข่ 3 x 7 = 21 ฟอง = 1.75 โหล #### 7")
    res = h6.evaluate(model, "th_gsm8k", DATA, CHAT, limit=1, outputs=tmp_path, progress=False)
    pool = h6.load_h6_task(DATA, "th_gsm8k").fewshot_pool
    ((kind, settings),) = model.calls
    assert kind == "chat" and settings == {
        "n": 1,
        "max_new_tokens": 256,
        "temperature": 0.0,
        "stop": ["Question:", "</s>", "<|im_end|>"],
    }  # lm-eval's, not LB's ":"
    messages = model.inputs[0][0]
    shots = res.table["shots"].iloc[0]
    assert len(shots) == 5 and [m["role"] for m in messages] == ["user", "assistant"] * 5 + ["user"]
    assert messages[0] == {"role": "user", "content": f"Question: {pool[shots[0]]['question']}\nAnswer:"}
    assert messages[1] == {"role": "assistant", "content": pool[shots[0]]["answer"]}
    assert messages[-1] == {
        "role": "user",
        "content": "Question: แคลร์ทำออมเล็ตใส่ไข่ 3 ฟองเป็นมื้อเช้าทุกวัน ใน 4 สัปดาห์ เธอจะกินไข่ไปกี่โหล\nAnswer:",
    }
    assert res.task == "th_gsm8k.chat" and res.table["exact_match"].tolist() == [1.0]
    sig = res.headline.signature
    assert sig.startswith("th_gsm8k.chat|shots:5|sampler:lb|seed:42|bos:no|variant:gsm8k-chat|stops:Question:+")
    assert res.config["variant"] == "gsm8k-chat" and res.config["task"] == "th_gsm8k.chat"
    assert _card(res.run_dir)["benchmark"] == "thai_h6/th_gsm8k.chat"
    assert h6.scores_frame([res])["task"].tolist() == ["th_gsm8k (chat)"] * 2


def test_gsm8k_chat_reads_the_answer_after_the_thinking_block(tmp_path):
    docs = [
        {"question": "ไข่ 10 ฟอง แตก 3 ฟอง", "answer": "#### 7"},
        {"question": "แมว 1 ตัว มาเพิ่ม 2 ตัว", "answer": "#### 3"},
    ]
    replies = {
        "ไข่": "<think>ลองดู #### 5 ไม่ใช่ แตก 3</think>เหลือ 7 ฟอง #### 7",
        "แมว": "<think>1 + 2 #### 3</think>คิดว่า #### 4",
    }
    model = FakeModel(reply=lambda m: next(v for k, v in replies.items() if k in m[-1]["content"]))
    protocol = CHAT.replace(num_fewshot=0)
    res = h6.evaluate(model, "th_gsm8k", docs, protocol, outputs=tmp_path, progress=False)
    assert res.table["exact_match"].tolist() == [1.0, 0.0]  # the #### inside each block is not the answer
    assert res.table["strict"].tolist() == ["7", "4"]
    raw = h6.evaluate(
        model, "th_gsm8k", docs, protocol.replace(thinking=thinking_option("off")), outputs=tmp_path, progress=False
    )
    assert raw.table["exact_match"].tolist() == [0.0, 1.0] and raw.run_dir != res.run_dir


def test_gsm8k_chat_on_a_local_model_renders_its_chat_template(tiny_local_model, tmp_path):
    res = h6.evaluate(
        tiny_local_model,
        "th_gsm8k",
        DATA,
        CHAT.replace(max_new_tokens=4, num_fewshot=1),
        limit=1,
        outputs=tmp_path,
        progress=False,
    )
    assert res.task == "th_gsm8k.chat" and len(res.table) == 1 and isinstance(res.table["generation"].iloc[0], str)
    assert res.headline.signature.startswith("th_gsm8k.chat|")


# ------------------------------------------------------------------------------------------------ generative-mc
def test_generative_mc_prompt_of_a_thai_arc_item(tmp_path):
    model = FakeModel(reply=lambda m: "คำตอบ: B")
    res = h6.evaluate(model, "th_arc", DATA, GMC, limit=1, outputs=tmp_path, progress=False)
    assert model.inputs[0] == [[{"role": "user", "content": ARC_0_PROMPT}]]
    assert model.calls[0] == ("chat", {"n": 1, "max_new_tokens": 256, "temperature": 0.0})  # no stop strings
    rec = res.table.iloc[0]
    assert (rec["gold"], rec["pred"], rec["acc"], rec["generation"]) == (1, 1, 1.0, "คำตอบ: B")
    assert res.task == "th_arc.generative-mc" and res.config["variant"] == "generative-mc"
    assert res.headline.signature.startswith("th_arc.generative-mc|shots:0|sampler:none|bos:no|variant:generative-mc")
    assert h6.scores_frame([res])["task"].tolist() == ["th_arc (generative-mc)"]


@pytest.mark.parametrize(
    "reply, n, expected",
    [
        ("คำตอบ: C", 4, 2),
        ("คำตอบคือข้อ B เพราะว่า...", 4, 1),
        ("ข้อ A ผิด ข้อ B ผิด\nคำตอบ: D", 4, 3),  # the letter after the last cue
        ("The answer is (B).", 4, 1),
        ("Answer: **C**", 4, 2),
        ("ANSWER：d A", 4, 0),  # the letter is upper case: "d" is no answer
        ("An apple a day. Answer: B", 2, 1),  # "An" and "a" are no letters
        ("B12 is a vitamin; answer: A", 4, 0),
        ("ตอบ E", 4, None),  # E is not among four choices
        ("ไม่แน่ใจ", 4, None),
    ],
)
def test_extract_letter(reply, n, expected):
    assert MC.extract_letter(reply, n) == expected


def test_a_letter_inside_the_thinking_block_is_not_the_answer():
    assert MC.score("<think>คำตอบ: A ดูน่าจะใช่... ไม่ใช่</think>คำตอบ: B", gold=1, n=4) == {
        "gold": 1,
        "pred": 1,
        "acc": 1.0,
    }
    assert MC.score("<think>Answer: B", gold=1, n=4) == {"gold": 1, "pred": None, "acc": 0.0}  # never closed
    assert MC.score("<think>Answer: B", gold=1, n=4, thinking=thinking_option("off"))["pred"] == 1


def test_truthfulqa_choices_are_shuffled_by_question():
    spec = V.BY_VARIANT["generative-mc"]["th_truthfulqa"]
    docs = h6.load_h6_task(DATA, "th_truthfulqa").docs
    golds = [spec.options(d)[1] for d in docs]
    assert golds == [1, 1, 1, 1, 0, 1, 2, 2, 1, 2, 1, 1]  # not always A, as the data's order would make it
    for d, g in zip(docs, golds):
        assert spec.options(d)[0][g] == d["mc1_targets"]["choices"][0]  # the true target, moved
    assert spec.options(docs[0]) == spec.options(docs[0])  # fixed by the question
    assert MC.shuffled(["x", "y", "z"], 0, "q") == (["y", "x", "z"], 1)


def test_every_choice_task_runs_as_a_letter_question_outside_the_average(tmp_path):
    model = FakeModel(reply=lambda m: "<think>คำตอบ: A</think>คำตอบ: B")
    results = h6.evaluate_tasks(model, DATA, h6.TASKS, GMC, limit=1, outputs=tmp_path, progress=False)
    assert list(results) == [f"{t}.generative-mc" for t in h6.TASKS[:5]] + ["th_gsm8k"]
    assert {kind for kind, _ in model.calls} == {"chat", "generate"}
    for name, res in results.items():
        if name != "th_gsm8k":
            assert res.headline.signature.startswith(f"{name}|") and "|variant:generative-mc|" in res.headline.signature
            assert res.table["pred"].tolist() == [1] * len(res.table)  # B, never the A weighed in the thinking
    score = h6.thai_h6_score(results)
    assert list(score.tasks) == ["th_gsm8k"] and score.partial  # the variants never enter the average
    assert h6.paper_results(results) == {"th_gsm8k": results["th_gsm8k"]}
    with pytest.raises(ValueError, match="never enters the H6 average"):
        h6.thai_h6_score({k: v for k, v in results.items() if k != "th_gsm8k"})


def test_variant_option_and_names():
    assert CHAT.variants == ("gsm8k-chat",) and LEADERBOARD.replace(variants="gsm8k-chat,generative-mc").variants == (
        "gsm8k-chat",
        "generative-mc",
    )
    with pytest.raises(ValueError, match="unknown Thai-H6 variant 'chat'"):
        LEADERBOARD.replace(variants=["chat"])
    assert V.spec_for("th_arc", LEADERBOARD).name == "th_arc" and V.spec_for("th_arc", CHAT).name == "th_arc"
    assert V.spec_for("gsm8k", CHAT).name == "th_gsm8k.chat" and V.spec_for("th_gsm8k", GMC).name == "th_gsm8k"
    assert V.label("th_mmlu.generative-mc") == "th_mmlu (generative-mc)" and V.label("th_mmlu") == "th_mmlu"
    assert not any(V.is_variant(t) for t in h6.TASKS)


# ----------------------------------------------------------------------- stored runs: tables, exports, compare
def test_stored_variant_runs_stay_out_of_the_tables_and_exports(tmp_path):
    from thai_eval_utils.core import registry
    from thai_eval_utils.core.runs import list_runs
    from thai_eval_utils.paper.own_runs import run_records, skipped_runs
    from thai_eval_utils.stats.cells import Bootstrap

    model = FakeModel("m", reply=lambda m: "คำตอบ: B", complete=lambda p: " #### 7")
    h6.evaluate(model, "th_gsm8k", DATA, LEADERBOARD, limit=1, outputs=tmp_path, progress=False)
    h6.evaluate(model, "th_gsm8k", DATA, CHAT, limit=1, outputs=tmp_path, progress=False)
    h6.evaluate(model, "th_arc", DATA, GMC, limit=1, outputs=tmp_path, progress=False)
    runs = {r.task: r for r in list_runs(tmp_path)}
    suite = registry.get_suite("thai_h6")
    assert sorted(runs) == ["th_arc.generative-mc", "th_gsm8k", "th_gsm8k.chat"]
    assert all(suite.holds_headlines(r) for r in runs.values())  # compare pairs each in a row of its own
    heads = [h for r in runs.values() for h in suite.headlines(r)]
    assert {h.stratum: h.variant for h in heads} == {
        "th_arc.generative-mc": "generative-mc",
        "th_gsm8k": "",
        "th_gsm8k.chat": "gsm8k-chat",
    }
    cells = suite.leaderboard_cells("m", heads, Bootstrap(n_resamples=20))
    assert [c["column"] for c in cells] == ["th_gsm8k", "thai_h6_avg"]  # the leaderboard: the paper's run only
    assert suite.leaderboard_results(runs["th_gsm8k.chat"]) == {} and suite.lm_eval_task(runs["th_gsm8k.chat"]) is None
    assert suite.item_views(runs["th_arc.generative-mc"], [], None, {}, []) == []
    assert suite.leaderboard_results(runs["th_gsm8k"]) == {"th_gsm8k": {"exact_match": 1.0, "flexible_match": 1.0}}
    records = run_records(tmp_path)
    assert records["benchmark"].tolist() == ["thai_h6/th_gsm8k"]  # Table 4 holds the paper's run only
    skipped = skipped_runs(tmp_path).set_index("benchmark")
    assert skipped.loc["thai_h6/th_gsm8k.chat", "reason"] == "not in the papers' tables"
    assert (
        skipped.loc["thai_h6/th_arc.generative-mc", "detail"]
        == "th_arc.generative-mc is a labelled variant, not the paper's protocol"
    )


# ------------------------------------------------------------------------------------------- thai-eval run
def test_cli_variant_reaches_the_notebook_and_is_checked():
    from thai_eval_utils.cli import build_parser
    from thai_eval_utils.cli.commands import _variants
    from thai_eval_utils.core.errors import ThaiEvalError
    from thai_eval_utils.notebook_exec import notebook_parameters

    parser = build_parser()
    assert _variants(parser.parse_args(["run", "--model", "embedded"])) is None  # not passed: the paper's tasks
    args = parser.parse_args(
        [
            "run",
            "--model",
            "embedded",
            "--benchmarks",
            "thai_h6",
            "--variant",
            "gsm8k-chat",
            "--variant",
            "generative-mc",
        ]
    )
    assert _variants(args) == ["gsm8k-chat", "generative-mc"]
    assert "variant" in notebook_parameters(REPO / "notebooks" / "thai_h6.ipynb")
    with pytest.raises(ThaiEvalError, match="'gsm8k-chat' is no variant of the selected benchmarks; they have: none"):
        _variants(
            parser.parse_args(["run", "--model", "embedded", "--benchmarks", "thaicli", "--variant", "gsm8k-chat"])
        )


def test_notebook_runs_both_variants_outside_table_4(tmp_path, tiny_model_dir):
    import shutil

    import pandas as pd
    import papermill

    from thai_eval_utils.backend.models import GEMMA3_CHAT_TEMPLATE

    model_dir = tmp_path / "tiny-chat"
    shutil.copytree(tiny_model_dir, model_dir)
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    (model_dir / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": GEMMA3_CHAT_TEMPLATE}))
    out = tmp_path / "outputs"
    papermill.execute_notebook(
        str(REPO / "notebooks" / "thai_h6.ipynb"),
        str(tmp_path / "thai_h6.ipynb"),
        cwd=str(REPO / "notebooks"),
        progress_bar=False,
        parameters={
            "model": str(model_dir),
            "data_source": str(DATA),
            "limit": 1,
            "tasks": ["th_arc", "th_gsm8k"],
            "max_new_tokens": 4,
            "variant": ["gsm8k-chat", "generative-mc"],
            "outputs_dir": str(out),
        },
    )
    assert not list((out / "tables").glob("thai_h6_table4_*"))  # only variants ran: no Table 4 row
    scores = pd.read_csv(next((out / "tables").glob("thai_h6_scores_*.csv")))
    assert scores["task"].tolist() == ["th_arc (generative-mc)", "th_gsm8k (chat)", "th_gsm8k (chat)"]
    assert all("|variant:" in s for s in scores["signature"])


@pytest.mark.parametrize(
    "task, protocol",
    [
        ("th_arc", LEADERBOARD),
        ("th_truthfulqa", LEADERBOARD),
        ("th_winogrande", LEADERBOARD),
        ("th_gsm8k", LEADERBOARD.replace(max_new_tokens=8)),
        ("th_gsm8k", CHAT.replace(max_new_tokens=8)),
        ("th_arc", GMC),
    ],
)
def test_each_record_keeps_what_was_sent_and_rebuilds_its_prompt_hash(task, protocol, tmp_path):
    """Every task's record keeps its prompt (``context``), Winogrande's per-choice ``requests`` and a chat's
    ``messages``; from them and ``doc_row`` alone, :func:`stored_requests` rebuilds requests of the stored hash."""
    model = FakeModel(score=lambda c, x: (-float(len(x)), False), reply=lambda m: "The answer is A. #### 1")
    res = h6.evaluate(model, task, DATA, protocol, limit=2, outputs=tmp_path, progress=False)
    spec = V.spec_for(task, protocol)
    built = {d.index: d.requests for d in h6.document_requests(task, DATA, protocol, limit=2)}
    records = StoredRun.from_dir(res.run_dir).records()
    assert len(records) == 2
    for rec in records:
        want = built[rec["doc"]]
        assert rec["context"] == want.prompt
        assert ("requests" in rec) == (task == "th_winogrande")
        assert rec.get("messages", []) == [{"role": r, "content": c} for r, c in want.messages]
        assert stored_requests(spec, rec) == want and want.sha256 == rec["prompt_sha256"]
        assert stored_requests(spec, {**rec, "context": rec["context"] + " "}) is None  # not what was sent


# ------------------------------------------------------------------------- dry run, executed copies, compare
class _Chars:
    """A tokenizer for counting: one token per character; a chat is its turns rendered ``role: content``, one per
    line, with the generation prompt ``assistant:``."""

    source = "characters"
    tokenizer = None

    def count(self, texts):
        return sum(len(t) for t in texts)

    def count_requests(self, requests, *, add_bos_token=False):
        return {"fed": sum(len(c) + len(x) for c, x in requests), "tree": 0}

    def count_chats(self, chats):
        return sum(len("".join(f"{m['role']}: {m['content']}\n" for m in chat) + "assistant:") for chat in chats)


def test_dry_run_counts_what_the_variants_run():
    """``run --dry-run --variant``: each task the variant applies to is counted as the variant runs it (its own
    name, its chat turns as generations); the others as the paper's. Counts by hand from the requests built."""
    from thai_eval_utils.cli.dry_run import dry_run_rows
    from thai_eval_utils.core import registry

    suite = registry.get_suite("thai_h6")
    (chat_doc,) = h6.document_requests("th_gsm8k", DATA, CHAT, limit=1)
    (arc_doc,) = h6.document_requests("th_arc", DATA, LEADERBOARD, limit=1)
    chat = [{"role": r, "content": c} for r, c in chat_doc.requests.messages]
    assert len(chat) == 11  # five examples as user and assistant turns, then the question
    want_chat = len("".join(f"{m['role']}: {m['content']}\n" for m in chat) + "assistant:")
    arc_fed = sum(len(c) + len(x) for c, x in arc_doc.requests.requests)

    def rows(variants):
        out = dry_run_rows([(suite, ("th_arc", "th_gsm8k"))], {"thai_h6": DATA}, _Chars(), limit=1, variants=variants)
        return {r["task"]: r for r in out}

    chat_rows = rows(["gsm8k-chat"])
    assert list(chat_rows) == ["th_arc", "th_gsm8k.chat", ""]  # the variant's own name, the total last
    assert chat_rows["th_gsm8k.chat"]["fed_tokens"] == want_chat
    assert chat_rows["th_gsm8k.chat"]["prompt_chars"] == sum(len(m["content"]) for m in chat)
    assert (chat_rows["th_gsm8k.chat"]["generations"], chat_rows["th_gsm8k.chat"]["max_new_tokens"]) == (1, 256)
    assert (
        chat_rows["th_arc"]["fed_tokens"] == arc_fed and chat_rows["th_arc"]["requests"] == 5
    )  # the paper's: one per choice, A to E
    mc_rows = rows(["generative-mc"])
    assert list(mc_rows) == ["th_arc.generative-mc", "th_gsm8k", ""]
    arc = mc_rows["th_arc.generative-mc"]
    assert arc["fed_tokens"] == len(f"user: {ARC_0_PROMPT}\nassistant:") and arc["generations"] == 1
    assert "requests" not in arc  # no log-likelihood request: the letter is generated
    assert mc_rows[""]["requests"] is None and mc_rows[""]["generations"] == 2
    paper = rows([])  # no variant: as before
    assert list(paper) == ["th_arc", "th_gsm8k", ""] and paper["th_arc"]["fed_tokens"] == arc_fed


def test_cli_dry_run_takes_the_variant(tiny_model_dir, tmp_path, capsys):
    """``thai-eval run --dry-run --variant gsm8k-chat``: the table's GSM8K row is the chat variant's, its prompt
    tokens the chat template's rendering of the turns (as ``LocalModel.render_chat`` renders them)."""
    import shutil

    from transformers import AutoTokenizer

    from thai_eval_utils.backend.models import GEMMA3_CHAT_TEMPLATE
    from thai_eval_utils.cli import main

    model_dir = tmp_path / "tiny-chat"
    shutil.copytree(tiny_model_dir, model_dir)
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    (model_dir / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": GEMMA3_CHAT_TEMPLATE}))
    argv = ["run", "--model", str(model_dir), "--benchmarks", "thai_h6/th_gsm8k", "--limit", "1", "--dry-run"]
    assert main([*argv, "--variant", "gsm8k-chat"]) == 0
    text = capsys.readouterr().out
    rows = {line.split()[1]: line.split()[2:] for line in text.splitlines() if line.startswith("thai_h6 ")}
    (doc,) = h6.document_requests("th_gsm8k", DATA, CHAT, limit=1)
    tok = AutoTokenizer.from_pretrained(model_dir)
    rendered = tok.apply_chat_template(
        [{"role": r, "content": c} for r, c in doc.requests.messages], tokenize=False, add_generation_prompt=True
    )
    assert list(rows) == ["th_gsm8k.chat"]
    assert rows["th_gsm8k.chat"][:2] == ["1", str(len(tok(rendered, add_special_tokens=False)["input_ids"]))]
    assert rows["th_gsm8k.chat"][-2:] == ["1", "256"]
    assert main(argv) == 0 and "th_gsm8k " in capsys.readouterr().out  # without --variant: the paper's task


def test_a_variant_run_keeps_its_own_executed_notebook(tmp_path, monkeypatch):
    """The same model run with the paper's protocol, then with ``--variant``: two executed copies, the paper's under
    its own name (``thai_h6.ipynb``), the variant's with the variants as a suffix, in the suite's order."""
    from thai_eval_utils import notebook_runs
    from thai_eval_utils.cli import main

    seen = []

    def fake_execute(path, copy, params, **kw):
        seen.append((copy.relative_to(tmp_path / "out"), params.get("variant")))
        return notebook_runs.NotebookRun(path.name, kw.get("model"), str(copy), "ok")

    monkeypatch.setattr(notebook_runs, "execute", fake_execute)
    argv = ["run", "--model", "m", "--benchmarks", "thai_h6", "--no-paper", "--outputs", str(tmp_path / "out")]
    assert main(argv) == 0
    assert main([*argv, "--variant", "generative-mc", "--variant", "gsm8k-chat"]) == 0
    assert main([*argv, "--variant", "gsm8k-chat"]) == 0
    assert seen == [
        (Path("notebooks/m/thai_h6.ipynb"), None),
        (Path("notebooks/m/thai_h6_gsm8k-chat_generative-mc.ipynb"), ["generative-mc", "gsm8k-chat"]),
        (Path("notebooks/m/thai_h6_gsm8k-chat.ipynb"), ["gsm8k-chat"]),
    ]


def test_compare_pairs_two_models_variant_runs_outside_the_average(tmp_path):
    """``thai-eval compare`` pairs model A's and model B's variant runs in rows of their own, as it pairs their
    paper runs; the H6 average stays over the paper's tasks."""
    from thai_eval_utils.compare.differ import largest_differences
    from thai_eval_utils.compare.runs import compare_runs

    for name, answer in (("model-a", "7"), ("model-b", "5")):
        model = FakeModel(
            name,
            reply=lambda m, a=answer: f"#### {a}",
            complete=lambda p, a=answer: f" #### {a}",
            score=lambda c, x, a=answer: (-float(len(x)) if a == "7" else float(len(x)), False),
        )
        for task, protocol in (("th_arc", LEADERBOARD), ("th_gsm8k", LEADERBOARD), ("th_gsm8k", CHAT)):
            h6.evaluate(model, task, DATA, protocol, limit=2, outputs=tmp_path, progress=False)
    cmp = compare_runs("model-a", "model-b", ["thai_h6"], outputs=tmp_path, n_resamples=200)
    table = cmp.table().set_index("score")
    assert table.index.tolist() == [
        "thai_h6/th_arc/acc_norm",
        "thai_h6/th_gsm8k/exact_match",
        "thai_h6/average",
        "thai_h6/th_gsm8k.chat/exact_match",  # after the average it is not in
    ]
    gold = [int(d["answer"].split("####")[-1].replace(",", "")) for d in h6.load_h6_task(DATA, "th_gsm8k").docs[:2]]
    chat = table.loc["thai_h6/th_gsm8k.chat/exact_match"]
    assert (
        chat["n_paired"] == 2
        and chat["mean_a"] == 100 * gold.count(7) / 2
        and chat["mean_b"] == 100 * gold.count(5) / 2
    )
    paper = [table.loc[s] for s in ("thai_h6/th_arc/acc_norm", "thai_h6/th_gsm8k/exact_match")]
    avg = table.loc["thai_h6/average"]
    assert avg["mean_a"] == pytest.approx(sum(r["mean_a"] for r in paper) / 2)  # the variant is not in it
    assert "partial: 2 of 6 tasks" in avg["note"]
    sides = largest_differences(cmp, 2, scores=["thai_h6/th_gsm8k.chat/exact_match"], data_dir=DATA.parent)
    assert sides["output_a"].tolist() == ["#### 7"] * 2 and sides["output_b"].tolist() == ["#### 5"] * 2
    docs = h6.load_h6_task(DATA, "th_gsm8k").docs  # their answers end "#### 7" and "#### 300"
    assert sides["key"].tolist() == ["0", "1"] and sides["reference"].tolist() == ["7", "300"]
    assert sides["input"].iloc[0] == f"Question: {docs[0]['question']}\nAnswer:"  # the question as it was asked

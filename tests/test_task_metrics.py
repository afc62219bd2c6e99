"""Metrics as objects (``thai_eval_utils.tasks.metrics.Metric``): each implementation hand-computed, names standing
for the identical default objects, declarations that use names serialised exactly as before (the stored config
ids of the shipped example tasks unchanged), objects recorded by their spec, and a user's own metric declared in
its task file and run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from fakes import FakeModel

from thai_eval_utils.core import registry
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import canonical_json, sha256_text
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.tasks import FewShot, GenerationTask, MultipleChoiceTask, run_task, task_named
from thai_eval_utils.tasks import metrics as M

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "docs" / "examples" / "user_tasks"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------- the contract
def test_names_stand_for_the_identical_default_objects():
    assert (
        M.resolve_metric("acc", "multiple_choice") is M.ACC
        and M.resolve_metric("acc_norm", "multiple_choice") is M.ACC_NORM
    )
    assert M.resolve_metric("chrf", "generation") is M.GENERATION_METRICS["chrf"] is M.CHRF_METRIC
    assert [(m.name, m.kind, m.scale) for m in M.GENERATION_METRICS.values()] == [
        ("exact_match", "binary", 100.0),
        ("rougeL", "mean", 1.0),
        ("chrf", "corpus", 1.0),
        ("bleu", "corpus", 1.0),
    ]
    assert (M.ACC.kind, M.ACC.scale, M.ACC.higher_is_better, M.ACC.task_kind) == (
        "binary",
        100.0,
        True,
        "multiple_choice",
    )
    assert M.LoglikelihoodAccuracy("char") == M.ACC_NORM and M.LoglikelihoodAccuracy("char") != M.ACC
    assert M.ExactMatch(ignore_case=True) != M.EXACT_MATCH
    # the signatures the names always had
    assert M.EXACT_MATCH.signature() == "exact_match|strip" and M.ROUGE_L.signature() == "rougeL|f1|x100|words:newmm"
    assert M.CHRF_METRIC.signature() == f"chrF2|sacrebleu:{sacrebleu.__version__}"
    assert M.BLEU_METRIC.signature() == f"bleu|sacrebleu:{sacrebleu.__version__}|tok:none|words:newmm"
    assert M.ACC_NORM.signature() == "acc_norm|lm-eval"
    assert M.LoglikelihoodAccuracy("byte").signature() == "acc_bytes|lm-eval|norm:byte"
    assert M.ExactMatch(ignore_case=True).signature() == (
        "exact_match|strip:True|ignore_case:True|ignore_punctuation:False|regexes_to_ignore:[]"
    )
    assert M.ChrF(word_order=2).signature() == f"chrF2++|sacrebleu:{sacrebleu.__version__}|c:6|w:2"
    assert M.ExactMatch(ignore_case=True).spec() == {
        "metric": "thai_eval_utils.tasks.metrics:ExactMatch",
        "name": "exact_match",
        "strip": True,
        "ignore_case": True,
        "ignore_punctuation": False,
        "regexes_to_ignore": [],
    }


def test_loglikelihood_accuracy_normalisations_hand_computed():
    lls, choices = [-3.0, -4.0, -9.5], ["ab", "abcdef", "ก่าข"]
    # none: -3 best -> 0; char: -1.5, -0.667, -2.375 -> 1; byte: "ก่าข" is 12 bytes: -1.5, -0.667, -0.792 -> 1
    assert M.ACC.predict(lls, choices) == 0 and M.ACC_NORM.predict(lls, choices) == 1
    by_byte = M.LoglikelihoodAccuracy("byte")
    assert by_byte.name == "acc_bytes" and by_byte.choice_scores([-9.0], ["ก่า"]) == [-1.0]  # 9 bytes
    assert by_byte.score_choices([-9.0, -2.0], ["ก่า", "a"], 0) == 1.0  # per byte -1.0 > -2.0: 0 wins
    assert by_byte.score_choices([-9.0, -0.5], ["ก่า", "a"], 0) == 0.0  # -1.0 < -0.5: 1 wins
    assert M.ACC.score_choices([-1.0, -1.0], ["a", "b"], 1, "split") == 0.5
    with pytest.raises(ValueError, match=r"normalization must be one of \['none', 'char', 'byte'\], got 'token'"):
        M.LoglikelihoodAccuracy("token")


def test_exact_match_filters_as_lm_eval_takes_them():
    assert M.EXACT_MATCH.score_item(" Tokyo\n", "Tokyo") == 1.0 and M.EXACT_MATCH.score_item("tokyo", "Tokyo") == 0.0
    loose = M.ExactMatch(ignore_case=True, ignore_punctuation=True, regexes_to_ignore=(r"^คำตอบ:\s*",))
    assert loose.score_item("คำตอบ: Tokyo!", "tokyo") == 1.0 and loose.score_item("คำตอบ: Kyoto", "tokyo") == 0.0
    assert M.ExactMatch(strip=False).score_item(" a", "a") == 0.0


def test_token_f1_rouge_and_corpus_metrics_hand_computed():
    # words [ฉัน, ชอบ, แมว] vs [ฉัน, ชอบ, หมา, มาก]: 2 common, P 2/3, R 2/4 -> F1 = 2PR/(P+R) = 4/7
    assert M.TokenF1().score_item("ฉันชอบแมว", "ฉันชอบหมามาก") == pytest.approx(400 / 7)
    assert M.TokenF1(tokenizer="whitespace").score_item("a b b", "b b c") == pytest.approx(100 * 2 / 3)
    assert M.TokenF1().score_item("", "") == 100.0 and M.TokenF1().score_item("แมว", "") == 0.0
    assert M.RougeL(tokenizer="whitespace").score_item("a b c", "a c d") == pytest.approx(200 / 3)
    hyps, refs = ["the cat sat", "a dog ran"], ["the cat sat down", "the dog ran"]
    char_bleu = M.Bleu(tokenizer="13a")
    assert char_bleu(hyps, refs) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize="13a").score)
    stats = char_bleu.statistics(hyps, refs)
    assert stats.shape[0] == 2 and char_bleu.score(stats.sum(axis=0)) == pytest.approx(char_bleu(hyps, refs))
    plus = M.ChrF(word_order=2)
    assert plus(hyps, refs) == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs], word_order=2).score)
    assert M.EXACT_MATCH(["a", "b"], ["a", "c"]) == 0.5 and np.isnan(M.CHRF_METRIC([], []))


# ------------------------------------------------------------------------------- declarations and config ids
#: The config ids and declaration hashes of the shipped example tasks, computed before metrics were objects
#: (a FakeModel named "fake-model"): a declaration that names its metrics must key the same runs.
EXAMPLE_CONFIG_IDS = {"thai_facts": "cd95107fb9c9", "thai_capitals": "bd1a57c55f84"}
EXAMPLE_DECLARATIONS = {
    "thai_facts": "2f52106371a977babfb753b7a69158e546a008a79428d1dd2dcfeaf85b6a0985",
    "thai_capitals": "33d24a1390b169b762009c9905dac7440bea4d690497e4b41aa433a563e3bc2a",
}


@pytest.fixture
def examples(tmp_path):
    """The shipped example tasks copied to ``<tmp>/ex`` and included in the registry (undone after)."""
    folder = tmp_path / "ex"
    shutil.copytree(EXAMPLES, folder)
    saved = list(registry._included)
    registry.include_path(folder)
    yield folder
    registry._included[:] = saved
    registry._suites = None


def _decl_hash(task) -> str:
    return sha256_text(canonical_json(task.declaration()))


def test_the_example_tasks_keep_their_config_ids(examples, tmp_path):
    facts, capitals = task_named("thai_facts"), task_named("thai_capitals")
    assert {t.name: _decl_hash(t) for t in (facts, capitals)} == EXAMPLE_DECLARATIONS
    mc = run_task(FakeModel(score=lambda c, x: (-len(x), False)), facts, outputs=tmp_path / "o", progress=False)
    gen = run_task(FakeModel(complete=lambda p: "x"), capitals, outputs=tmp_path / "o", progress=False)
    assert {"thai_facts": mc.config_id, "thai_capitals": gen.config_id} == EXAMPLE_CONFIG_IDS


def test_default_objects_declare_as_their_names_and_other_objects_by_spec():
    mc = MultipleChoiceTask(
        name="mc",
        data="mc.jsonl",
        prompt="Q: {q}\nA:",
        choices="choices",
        gold="answer",
        fewshot=FewShot("train.jsonl", 2),
        metrics="acc_norm",
    )
    # computed before metrics were objects
    assert _decl_hash(mc) == "9ef43cdd0ab26292bb8a1dae8d8988d26c302ab834d4753d440a4fec02686c21"
    same = MultipleChoiceTask(
        name="mc",
        data="mc.jsonl",
        prompt="Q: {q}\nA:",
        choices="choices",
        gold="answer",
        fewshot=FewShot("train.jsonl", 2),
        metrics=M.ACC_NORM,
    )
    assert same.declaration() == mc.declaration() and same.scorers == (M.ACC_NORM,)
    g = GenerationTask(
        name="g",
        data="g.jsonl",
        prompt="Q: {q}\nA:",
        reference="a",
        fewshot=FewShot("train.jsonl", 1, "\n"),
        metrics=("exact_match", "rougeL", "chrf", "bleu"),
        stop="\n",
    )
    assert _decl_hash(g) == "a4f3b8ce84856e665ad6fb4ade50440fc97263bd159378a09762d9e2bf1129d8"
    custom = GenerationTask(name="g", data="g.jsonl", prompt="{q}", reference="a", metrics=(M.TokenF1(), "chrf"))
    assert custom.declaration()["metrics"] == (
        {"metric": "thai_eval_utils.tasks.metrics:TokenF1", "name": "token_f1", "tokenizer": "newmm"},
        "chrf",
    )
    assert custom.metric_names == ("token_f1", "chrf")


def test_metric_declaration_errors():
    def gen(metrics):
        return GenerationTask(name="g", data="g.jsonl", prompt="{q}", reference="a", metrics=metrics)

    with pytest.raises(ThaiEvalDataError) as err:
        gen((M.ACC,))
    assert err.value.field == "metrics" and err.value.reason == (
        "LoglikelihoodAccuracy(normalization='none') is a multiple-choice metric, not a generation one"
    )
    with pytest.raises(ThaiEvalDataError) as err:
        gen(("exact_match", M.ExactMatch(ignore_case=True)))
    assert err.value.reason == "every metric needs its own name without '/' (twice: ['exact_match'])"


# ----------------------------------------------------------------------------------------- runs with objects
def test_a_run_with_metric_objects_records_and_scores_them(tmp_path):
    write_jsonl(tmp_path / "g.jsonl", [{"id": "1", "q": "x", "a": "Tokyo"}, {"id": "2", "q": "y", "a": "แมวดำ"}])
    task = GenerationTask(
        name="g",
        data="g.jsonl",
        prompt="{q}",
        reference="a",
        metrics=(M.ExactMatch(ignore_case=True, name="em_nocase"), M.TokenF1(), M.ChrF(word_order=2, name="chrfpp")),
    ).bind(tmp_path)
    run = run_task(
        FakeModel(complete=lambda p: "TOKYO" if p == "x" else "แมว"), task, outputs=tmp_path / "o", progress=False
    )
    assert [r["em_nocase"] for r in run.records] == [1.0, 0.0]
    assert [r["token_f1"] for r in run.records] == [0.0, pytest.approx(100 * 2 / 3)]  # แมว vs [แมว, ดำ]: P 1, R 1/2
    assert run.scores["chrfpp"]["value"] == pytest.approx(M.ChrF(word_order=2)(["TOKYO", "แมว"], ["Tokyo", "แมวดำ"]))
    assert "|chrF2++|" in run.scores["chrfpp"]["signature"]
    heads = task.as_suite(tmp_path / "g.py").headlines(StoredRun.from_dir(run.run_dir))
    assert [(h.name, h.kind, h.scale) for h in heads] == [
        ("g/g/em_nocase", "binary", 100.0),
        ("g/g/token_f1", "mean", 1.0),
        ("g/g/chrfpp", "corpus", 1.0),
    ]


def test_a_multiple_choice_run_with_per_byte_accuracy(tmp_path):
    rows = [{"id": "a", "q": "?", "choices": ["ก่า", "a"], "answer": 1}]
    write_jsonl(tmp_path / "mc.jsonl", rows)
    task = MultipleChoiceTask(
        name="mc",
        data="mc.jsonl",
        prompt="{q}",
        choices="choices",
        gold="answer",
        metrics=("acc", M.LoglikelihoodAccuracy("byte")),
    ).bind(tmp_path)
    table = {" ก่า": -9.0, " a": -2.0}  # raw: 0 loses (-9 < -2); per byte: -1.0 > -2.0: 0 predicted
    run = run_task(FakeModel(score=lambda c, x: (table[x], False)), task, outputs=tmp_path / "o", progress=False)
    assert run.records[0]["acc"] == 1.0 and run.records[0]["acc_bytes"] == 0.0
    assert run.scores["acc_bytes"]["signature"].endswith("|acc_bytes|lm-eval|norm:byte|delimiter:' '|ties:first")


CUSTOM_TASK = '''
"""A task with its own metric: the length ratio of the reply to the reference, capped at 1."""

from thai_eval_utils.tasks import GenerationTask
from thai_eval_utils.tasks.metrics import Metric


class LengthRatio(Metric):
    name = "length_ratio"
    kind = "mean"
    scale = 100.0

    def __init__(self, cap: float = 1.0) -> None:
        self.cap = cap

    def parameters(self):
        return {"cap": self.cap}

    def score_item(self, prediction, reference):
        return min(self.cap, len(prediction) / len(reference))


TASK = GenerationTask(name="ratio", data="ratio.jsonl", prompt="{q}", reference="a", metrics=(LengthRatio(), "exact_match"))
'''


def test_a_task_file_defines_its_own_metric(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "ratio.py").write_text(CUSTOM_TASK, encoding="utf-8")
    write_jsonl(folder / "ratio.jsonl", [{"id": "1", "q": "x", "a": "abcd"}, {"id": "2", "q": "y", "a": "ab"}])
    saved = list(registry._included)
    try:
        registry.include_path(folder)
        task = task_named("ratio")
        run = run_task(
            FakeModel(complete=lambda p: "a" if p == "x" else "abcdef"), task, outputs=tmp_path / "o", progress=False
        )
    finally:
        registry._included[:] = saved
        registry._suites = None
    assert [r["length_ratio"] for r in run.records] == [0.25, 1.0]  # 1/4, min(1, 6/2)
    assert run.scores["length_ratio"]["value"] == pytest.approx(0.625)
    card = json.loads((run.run_dir / "run_card.json").read_text(encoding="utf-8"))
    assert card["config"]["task"]["metrics"] == [
        {"metric": "ratio.py:LengthRatio", "name": "length_ratio", "cap": 1.0},
        "exact_match",
    ]  # named by its file, never by the registry's per-process module name
    assert "|length_ratio|cap:1.0|" in run.scores["length_ratio"]["signature"]

"""``thai-eval export --format thai-llm-leaderboard`` for the leaderboard's own tasks: the four category
folders its runner's ``scripts/transform_result.py`` writes (NLU, MC, NLG, LLM), one ``results.json`` per folder and
model with the transform's keys, metric names and bytes. The numbers are the published ones of the spec's worked
example (thai_llm_leaderboard.md 5.3, ``Konthee/Llama-3.1-8B-ThaiInstruct``), stored as thai-eval runs; the key
order is HEAD's (the runner's task list), where the 2024 files in the example followed a set's order."""

from __future__ import annotations

import json

from thai_eval_utils.core.store import RunStore
from thai_eval_utils.export import export

MODEL = "Konthee/Llama-3.1-8B-ThaiInstruct"
NLU = {
    "wisesight_thai_sentiment_seacrowd_text": 0.3290902283788843,
    "xcopa_tha_seacrowd_qa": 0.684,
    "belebele_tha_thai_seacrowd_qa": 0.7011111111111111,
    "xnli.tha_seacrowd_pairs": 0.3327345309381238,
}
MC = {"m3exam_tha_seacrowd_qa": 0.4109778597785978, "thaiexam_qa": 0.4106194690265486}
NLG = {
    "xl_sum_tha_seacrowd_t2t": {"ROUGE1": 25.3586657835151, "ROUGE2": 9.124431503431444, "ROUGEL": 17.150179798650626},
    "flores200_eng_Latn_tha_Thai_seacrowd_t2t": {
        "BLEU": 17.30473757352549,
        "SacreBLEU": 25.901910180552875,
        "chrF++": 42.40773626604925,
    },
    "flores200_tha_Thai_eng_Latn_seacrowd_t2t": {
        "BLEU": 28.74529326269811,
        "SacreBLEU": 14.18481920988504,
        "chrF++": 31.326414438197848,
    },
    "iapp_squad_seacrowd_qa": {"ROUGE1": 33.213775245764324, "ROUGE2": 27.62976536347299, "ROUGEL": 32.81243564625834},
}
LLM = {
    "Knowledge III": 2.1,
    "Social Science": 3.05,
    "Extraction": 3.35,
    "Math": 2.15,
    "Reasoning": 3.3,
    "STEM": 2.9,
    "Writing": 3.4,
    "Coding": 4.2272727272727275,
    "Roleplay": 4.7,
}


def _store(out, task, summary):
    identity = {"name": "llama-thai", "source": f"hf:{MODEL}", "revision": "0" * 40}
    store = RunStore.open(
        "llama-thai", f"thai_llm_leaderboard/{task}", {"task": task}, model_identity=identity, outputs=out
    )
    store.append("0", {"id": "0"})
    store.write_summary({"n": 1, **summary})
    store.close()


def test_the_four_folders_as_the_transform_writes_them(tmp_path):
    out = tmp_path / "outputs"
    for task, acc in {**NLU, **MC}.items():
        _store(out, task, {"scores": {"accuracy": {"value": acc, "n": 1}}})
    for task, metrics in NLG.items():
        _store(out, task, {"leaderboard": metrics})
    _store(out, "mt_bench_thai", {"metrics_llm": {"avg_rating": LLM}})
    # a corrected variant is a thai-eval task, never a leaderboard number
    _store(out, "xnli.tha_seacrowd_pairs.corrected", {"scores": {"accuracy": {"value": 0.9, "n": 1}}})

    files = export("thai-llm-leaderboard", tmp_path / "lb", outputs=out)
    assert sorted(p.relative_to(tmp_path / "lb").as_posix() for p in files) == [
        f"{folder}/Llama-3.1-8B-ThaiInstruct/results.json" for folder in ("LLM", "MC", "NLG", "NLU")
    ]

    def expected(results: dict) -> str:
        return json.dumps({"config": {"model_name": MODEL}, "results": results}, ensure_ascii=False)

    def written(folder: str) -> str:
        return (tmp_path / "lb" / folder / "Llama-3.1-8B-ThaiInstruct" / "results.json").read_text(encoding="utf-8")

    assert written("NLU") == expected({k: {"accuracy": v} for k, v in NLU.items()})
    assert written("MC") == expected({k: {"accuracy": v} for k, v in MC.items()})
    assert written("NLG") == expected(NLG)
    assert written("LLM") == expected({c: {"avg_rating": v} for c, v in LLM.items()})
    # the spec's MC line, byte for byte except the key order (the published file predates HEAD's list order)
    assert json.loads(written("MC")) == json.loads(
        '{"config": {"model_name": "Konthee/Llama-3.1-8B-ThaiInstruct"}, "results": {"thaiexam_qa": {"accuracy": '
        '0.4106194690265486}, "m3exam_tha_seacrowd_qa": {"accuracy": 0.4109778597785978}}}'
    )
    sig = json.loads((tmp_path / "lb" / "NLU" / "Llama-3.1-8B-ThaiInstruct" / "thai_eval.json").read_text("utf-8"))
    assert set(sig["tasks"]) == set(NLU) and sig["model_name"] == MODEL

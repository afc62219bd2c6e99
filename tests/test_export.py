"""thai_eval_utils.export: Thai-H6 runs of the tiny random model in lm-eval 0.4.13's schema, the Thai
LLM Leaderboard's results JSON and Parquet details; each read back with the same numbers as the store; signatures
in every file; no secret in any.

The lm-eval schema is checked here against the keys lm-eval's own ``evaluator.evaluate`` and
``EvaluationTracker.save_results_samples`` write; ``test_lmeval_reads_export`` runs lm-eval's own readers and
metric code on the files where the side environment (benchmarks/.work/lmeval-venv) has lm-eval installed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from thai_eval_utils import h6
from thai_eval_utils.h6 import tasks as h6_tasks
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.export import export
from thai_eval_utils.export.stored import finished_runs

DATA = REPO / "data" / "thai_h6"
LMEVAL_PY = REPO / "benchmarks" / ".work" / "lmeval-venv" / "bin" / "python"
SAMPLE_KEYS = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}
RESULTS_KEYS = {
    "results",
    "group_subtasks",
    "configs",
    "versions",
    "n-shot",
    "higher_is_better",
    "n-samples",
    "config",
    "date",
    "model_name",
    "model_name_sanitized",
    "task_hashes",
}
SECRET = "s3cret-pass-word"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, tiny_local_model):
    """Four Thai-H6 tasks of the tiny model (limited), a ThaiCLI judge run and a dialect run, one outputs folder."""
    out = tmp_path_factory.mktemp("export") / "outputs"
    protocol = h6.LEADERBOARD.replace(max_new_tokens=4)
    results = h6.evaluate_tasks(
        tiny_local_model,
        DATA,
        ["th_arc", "th_mmlu", "th_truthfulqa", "th_gsm8k"],
        protocol,
        limit=2,
        limits={"th_mmlu": 1, "th_gsm8k": 1},
        outputs=out,
        progress=False,
    )
    judge = RunStore.open(
        "tiny-llama",
        "thaicli/judge",
        {"judge": {"model": "j"}},
        outputs=out,
        model_identity={"name": "tiny-llama", "base_url": f"http://user:{SECRET}@judge.example/v1"},
    )
    judge.append("factoid-1", {"id": 1, "format": "factoid", "score": 7.0})
    judge.write_summary(
        {
            "n_unjudged": 0,
            "scores": {"thaicli": {"value": 7.0, "n": 1, "stderr": None}, "factoid": {"value": 7.0, "n": 1}},
        }
    )
    judge.close()
    dialect = RunStore.open("tiny-llama", "dialect/generation", {"temperature": 0.2}, outputs=out)
    dialect.append("east/qa/0", {"dialect": "east", "task": "qa", "output": "x"})
    dialect.write_summary({"n_items": 1, "scores": {"east/qa/rougeL": {"value": 12.5, "n": 1}}})
    dialect.close()
    return out, results


def test_lm_eval_schema_and_numbers(outputs, tmp_path):
    out, results = outputs
    files = export("lm-eval", tmp_path, outputs=out)
    names = sorted(p.name for p in files)
    stamp = next(n for n in names if n.startswith("results_")).removeprefix("results_").removesuffix(".json")
    assert names == sorted([f"results_{stamp}.json"] + [f"samples_{t}_{stamp}.jsonl" for t in results])
    assert all(p.parent == tmp_path / "tiny-llama" for p in files)
    doc = json.loads((tmp_path / "tiny-llama" / f"results_{stamp}.json").read_text(encoding="utf-8"))
    assert RESULTS_KEYS <= set(doc)
    arc = results["th_arc"]
    assert doc["results"]["th_arc"]["acc_norm,none"] == arc.scores["acc_norm"].value
    assert doc["results"]["th_arc"]["acc_stderr,none"] == arc.scores["acc"].stderr
    assert doc["results"]["th_gsm8k"]["exact_match,strict-match"] == results["th_gsm8k"].scores["exact_match"].value
    assert (
        doc["results"]["th_gsm8k"]["exact_match,flexible-extract"] == results["th_gsm8k"].scores["flexible_match"].value
    )
    assert doc["results"]["th_truthfulqa"]["mc2,none"] == results["th_truthfulqa"].scores["mc2"].value
    assert doc["n-shot"] == {"th_arc": 25, "th_mmlu": 5, "th_truthfulqa": 0, "th_gsm8k": 5}
    assert doc["n-samples"]["th_arc"] == {"original": 12, "effective": 2}  # the samples' 12 ARC documents, limit 2
    assert doc["config"]["limit"] == 2
    sig = doc["thai_eval"]["tasks"]["th_arc"]
    assert sig["protocol"]["num_fewshot"] == 25 and sig["prompt_template_sha256"] and len(sig["data_sha256"]) == 2
    assert sig["package_versions"]["torch"] and sig["score_signatures"][0].startswith("th_arc|shots:25|sampler:lb")

    lines = [
        json.loads(x) for x in (tmp_path / "tiny-llama" / f"samples_th_arc_{stamp}.jsonl").read_text().splitlines()
    ]
    stored = {int(r["doc"]): r for _, r in arc.table.iterrows()}
    built = {d.index: d for d in h6.document_requests("th_arc", DATA, limit=2)}
    assert [s["doc_id"] for s in lines] == [0, 1]
    for s in lines:
        assert SAMPLE_KEYS <= set(s) and s["filter"] == "none" and s["metrics"] == ["acc", "acc_norm", "acc_bytes"]
        rec, req = stored[s["doc_id"]], built[s["doc_id"]].requests
        assert s["arguments"] == {f"gen_args_{i}": {"arg_0": c, "arg_1": x} for i, (c, x) in enumerate(req.requests)}
        assert s["resps"] == [[[str(ll), str(g)]] for ll, g in zip(rec["lls"], rec["is_greedy"])]
        assert s["filtered_resps"] == [r[0] for r in s["resps"]]
        assert (s["acc"], s["acc_norm"]) == (rec["acc"], rec["acc_norm"])
        assert s["target"] == str(rec["gold"]) and s["target_hash"] == _sha(s["target"])
        assert s["prompt_hash"] == _sha(req.requests[0][0])
        assert s["doc_hash"] == _sha(json.dumps(s["doc"], indent=2, ensure_ascii=False))
        assert s["thai_eval"]["config_id"] == arc.run_dir.name
    assert sum(s["acc_norm"] for s in lines) / len(lines) == pytest.approx(arc.scores["acc_norm"].value)
    # lm-eval's task hash: SHA-256 of the concatenated per-sample hashes
    assert doc["task_hashes"]["th_arc"] == _sha(
        "".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in lines)
    )
    gsm = [
        json.loads(x) for x in (tmp_path / "tiny-llama" / f"samples_th_gsm8k_{stamp}.jsonl").read_text().splitlines()
    ]
    assert [s["filter"] for s in gsm] == ["strict-match", "flexible-extract"]  # one line per filter, as lm-eval
    g = results["th_gsm8k"].table.iloc[0]
    assert gsm[0]["resps"] == [[g["generation"]]] and gsm[0]["filtered_resps"] == [g["strict"]]
    assert gsm[0]["arguments"]["gen_args_0"]["arg_1"]["until"] == [":", "Question:", "Question"]
    assert gsm[0]["arguments"]["gen_args_0"]["arg_1"]["max_gen_toks"] == 4


def _copy_with_arc_data_elsewhere(out: Path, to: Path, strip: tuple[str, ...] = ()) -> Path:
    """A copy of the outputs whose ARC run card names data that no folder holds (files elsewhere, hashes no file has;
    its records without the fields ``strip``)."""
    shutil.copytree(out, to)
    card = next((to / "runs").rglob("th_arc/*/run_card.json"))
    data = json.loads(card.read_text(encoding="utf-8"))
    data["data_files"] = {f"/nowhere/{Path(k).name}": "0" * 64 for k in data["data_files"]}
    card.write_text(json.dumps(data), encoding="utf-8")
    items = card.parent / "items.jsonl"
    recs = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines()]
    items.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k not in strip}, ensure_ascii=False) + "\n" for r in recs),
        encoding="utf-8",
    )
    return to


def test_lm_eval_export_reads_what_the_records_sent(outputs, tmp_path):
    """Records keep what was sent (the prompt, a chat's turns, a task's own requests): the export needs no data
    files, and its samples are those of the export that rebuilds them from the data."""
    out, results = outputs
    record = next(iter(StoredRun.from_dir(results["th_arc"].run_dir).records()))
    built = {d.index: d.requests for d in h6.document_requests("th_arc", DATA, limit=2)}[record["doc"]]
    assert record["context"] == built.prompt and "requests" not in record and "messages" not in record
    assert "context" not in results["th_arc"].table.columns  # what was sent stays in items.jsonl
    with_data = export("lm-eval", tmp_path / "a", outputs=out)
    moved = _copy_with_arc_data_elsewhere(out, tmp_path / "moved")
    without = export("lm-eval", tmp_path / "b", outputs=moved)

    def samples(files: list[Path]) -> dict[str, str]:
        stamp = next(p.name for p in files if p.name.startswith("results_")).removeprefix("results_")[:-5]
        return {p.name.replace(stamp, ""): p.read_text(encoding="utf-8") for p in files if "samples_" in p.name}

    assert samples(without) == samples(with_data) and len(samples(with_data)) == 4
    # a record stored before records kept what was sent is rebuilt from the data, which is then needed
    old = _copy_with_arc_data_elsewhere(out, tmp_path / "old", strip=("context",))
    with pytest.raises(Exception, match="no data with the hashes recorded for thai_h6/th_arc"):
        export("lm-eval", tmp_path / "c", outputs=old)


def test_lm_eval_export_refuses_other_data(outputs, tmp_path):
    """Rebuilt arguments (records stored before they kept what was sent) must be the run's: data whose hashes
    differ from the run card's is refused."""
    out, _ = outputs
    out = _copy_with_arc_data_elsewhere(out, tmp_path / "old", strip=("context",))
    other = tmp_path / "other"
    for src in (DATA / "h6" / "th_arc_challenge").iterdir():
        dst = other / "h6" / "th_arc_challenge" / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(src.read_text(encoding="utf-8").replace("ก", "ข", 1), encoding="utf-8")
    with pytest.raises(Exception, match="no data with the hashes recorded for thai_h6/th_arc"):
        export("lm-eval", tmp_path / "x", outputs=out, data=other)


def test_leaderboard_round_trip(outputs, tmp_path):
    """The layout and bytes of the Thai LLM Leaderboard's transform (scbdatax/seacrowd-eval
    scripts/transform_result.py): <FOLDER>/<model>/results.json, one ensure_ascii=False line, no newline."""
    out, results = outputs
    files = export("thai-llm-leaderboard", tmp_path, outputs=out)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in files) == [
        "dialect/tiny-llama/results.json",
        "thai_h6/tiny-llama/results.json",
        "thaicli/tiny-llama/results.json",
    ]
    h6 = tmp_path / "thai_h6" / "tiny-llama" / "results.json"
    raw = h6.read_text(encoding="utf-8")
    doc = json.loads(raw)
    assert raw == json.dumps(doc, ensure_ascii=False) and not raw.endswith("\n")  # json.dump's bytes, one line
    assert list(doc) == ["config", "results"] and doc["config"] == {"model_name": "api/tiny-llama"}
    assert list(doc["results"]) == [t for t in h6_tasks.TASKS if t in results]  # the suite's task order
    for task, res in results.items():
        assert doc["results"][task] == {m: s.value for m, s in res.scores.items()}
    assert "thai_h6" not in doc["results"]  # two tasks missing: no average
    cli = json.loads((tmp_path / "thaicli" / "tiny-llama" / "results.json").read_text(encoding="utf-8"))
    assert cli["results"] == {"thaicli": {"thaicli": 7.0, "factoid": 7.0}}
    dialect = json.loads((tmp_path / "dialect" / "tiny-llama" / "results.json").read_text(encoding="utf-8"))
    assert dialect["results"]["dialect_east_qa"] == {"rougeL": 12.5}
    sig = json.loads((tmp_path / "thai_h6" / "tiny-llama" / "thai_eval.json").read_text(encoding="utf-8"))
    arc = sig["tasks"]["th_arc"]
    assert arc["partial"] and arc["limit"] == 2 and arc["n"] == 2 and arc["config_id"] == results["th_arc"].run_dir.name


def test_leaderboard_model_names():
    """transform_result.py:157-161: an id without '/' is an API model's, written as api/<id>; the folder is the
    id's last path component."""
    from thai_eval_utils.export.leaderboard import leaderboard_model_name, results_json

    assert leaderboard_model_name("scb10x/typhoon-7b") == "scb10x/typhoon-7b"
    assert leaderboard_model_name("gpt-4o-2024-05-13") == "api/gpt-4o-2024-05-13"
    # the spec's worked example (section 5.3), byte for byte
    text = results_json(
        "Konthee/Llama-3.1-8B-ThaiInstruct",
        {"thaiexam_qa": {"accuracy": 0.4106194690265486}, "m3exam_tha_seacrowd_qa": {"accuracy": 0.4109778597785978}},
    )
    assert text == (
        '{"config": {"model_name": "Konthee/Llama-3.1-8B-ThaiInstruct"}, "results": {"thaiexam_qa": '
        '{"accuracy": 0.4106194690265486}, "m3exam_tha_seacrowd_qa": {"accuracy": 0.4109778597785978}}}'
    )


def test_parquet_round_trip(outputs, tmp_path):
    import pyarrow.parquet as pq

    out, results = outputs
    files = export("parquet", tmp_path, outputs=out)
    assert sorted(p.name for p in files) == [
        "details_dialect.parquet",
        "details_thai_h6.parquet",
        "details_thaicli.parquet",
    ]
    frame = pd.read_parquet(tmp_path / "details_thai_h6.parquet")
    assert list(frame.columns) == [
        "model",
        "benchmark",
        "task",
        "key",
        "prompt_hash",
        "inputs",
        "outputs",
        "metrics",
        "config_id",
        "signature",
    ]
    assert len(frame) == sum(len(r.table) for r in results.values())
    for task, res in results.items():
        rows = frame[frame["task"] == task]
        rows = rows.assign(doc=rows["key"].str.split("-").str[0].astype(int)).sort_values("doc")
        assert set(rows["config_id"]) == {res.run_dir.name}
        for (_, row), (_, rec) in zip(rows.iterrows(), res.table.sort_values("doc").iterrows()):
            metrics = json.loads(row["metrics"])
            assert metrics == {m: rec[m] for m in h6_tasks.TASK_METRICS[task]}
            assert row["prompt_hash"] == rec["prompt_sha256"] and json.loads(row["inputs"])["doc"] == rec["doc"]
    meta = json.loads(pq.read_schema(tmp_path / "details_thai_h6.parquet").metadata[b"thai_eval"])
    assert meta["tiny-llama|thai_h6/th_arc"]["protocol"]["num_fewshot"] == 25
    try:
        import datasets
    except ImportError:
        return
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "details_thai_h6.parquet"), split="train")
    assert loaded.num_rows == len(frame)


def test_no_secret_in_any_export(outputs, tmp_path):
    out, _ = outputs
    for fmt in ("lm-eval", "thai-llm-leaderboard", "parquet"):
        for path in export(fmt, tmp_path / fmt, outputs=out):
            assert SECRET.encode() not in path.read_bytes(), path


def test_export_errors(tmp_path):
    with pytest.raises(Exception, match="unknown export format 'csv'"):
        export("csv", tmp_path)
    with pytest.raises(Exception, match="no finished Thai-H6 run to export"):
        export("lm-eval", tmp_path, outputs=tmp_path / "empty")
    assert finished_runs(tmp_path / "empty") == []


def _lm_eval_installed() -> bool:
    return (
        LMEVAL_PY.exists()
        and subprocess.run([str(LMEVAL_PY), "-c", "import lm_eval.api.metrics"], capture_output=True).returncode == 0
    )


LMEVAL_CHECK = r"""
import json, sys, glob
from lm_eval import utils
from lm_eval.api import metrics as M
from lm_eval.api.task import ConfigurableTask
folder = sys.argv[1]
files = sorted(glob.glob(folder + "/*"))
results_file = utils.get_latest_filename(utils.get_results_filenames(files))
doc = json.load(open(results_file, encoding="utf-8"))
table = utils.make_table(doc)  # lm-eval's own results table
out = {"table_rows": [t for t in doc["results"] if t in table], "tasks": {}, "process_results": {}}
for path in utils.get_sample_results_filenames(files):
    task = utils.get_file_task_name(path.rsplit("/", 1)[1])
    lines = [json.loads(x) for x in open(path, encoding="utf-8")]
    per = {}
    for s in lines:
        for m in s["metrics"]:
            per.setdefault(f"{m},{s['filter']}", []).append(s[m])
    # lm-eval's own aggregation and standard error of the per-sample values
    out["tasks"][task] = {k: [M.mean(v), M.mean_stderr(v) if len(v) > 1 else None] for k, v in per.items()}
    if task in ("th_arc", "th_mmlu"):  # lm-eval's multiple_choice process_results on the exported items
        rows = [{"context": s["arguments"]["gen_args_0"]["arg_0"], "gold": int(s["target"]),
                 "choices": [a["arg_1"][1:] for a in s["arguments"].values()]} for s in lines]
        data = path + ".mc.jsonl"
        open(data, "w", encoding="utf-8").write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        mc = ConfigurableTask(config={"task": "mc_" + task, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": data}},
                                      "test_split": "test", "output_type": "multiple_choice", "doc_to_text": "context",
                                      "doc_to_choice": "choices", "doc_to_target": "gold", "target_delimiter": " ",
                                      "metric_list": [{"metric": m} for m in ("acc", "acc_norm", "acc_bytes")]})
        out["process_results"][task] = [
            {**mc.process_results(r, [(float(ll), g == "True") for ll, g in s["filtered_resps"]]),
             "ours": {m: s[m] for m in ("acc", "acc_norm", "acc_bytes")}} for r, s in zip(rows, lines)]
print(json.dumps(out))
"""


@pytest.mark.skipif(not _lm_eval_installed(), reason="lm-eval 0.4.13 is not installed in benchmarks/.work/lmeval-venv")
def test_lmeval_reads_export(outputs, tmp_path):
    """lm-eval's own file helpers find the results and samples, make_table renders every task, and lm-eval's mean
    and mean_stderr over the exported per-sample values give the exported task numbers."""
    out, results = outputs
    export("lm-eval", tmp_path, outputs=out)
    proc = subprocess.run(
        [str(LMEVAL_PY), "-c", LMEVAL_CHECK, str(tmp_path / "tiny-llama")], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(got["table_rows"]) == sorted(results)
    # lm-eval's own multiple-choice scoring of the exported items gives thai-eval's per-item metrics
    assert [len(got["process_results"][t]) for t in ("th_arc", "th_mmlu")] == [2, 3]
    for task in ("th_arc", "th_mmlu"):
        for item in got["process_results"][task]:
            assert {m: item[m] for m in ("acc", "acc_norm", "acc_bytes")} == item["ours"], task
    checked = 0
    doc = json.loads(next((tmp_path / "tiny-llama").glob("results_*.json")).read_text(encoding="utf-8"))
    for task in results:
        for key, (mean, se) in got["tasks"][task].items():
            if key in doc["results"][task]:
                assert doc["results"][task][key] == pytest.approx(mean, abs=1e-12), (task, key)
                checked += 1
                if task == "th_mmlu":  # its stderr is the macro average's (over subjects), not a sample stderr
                    continue
                stderr = doc["results"][task][key.replace(",", "_stderr,", 1)]
                assert (se is None and stderr == "N/A") or stderr == pytest.approx(se, abs=1e-12), (task, key)
    assert checked == 3 + 3 + 4 + 2  # ARC and MMLU acc/acc_norm/acc_bytes, TruthfulQA mc1/mc2/mc2_lb/mc2_mask, GSM8K 2


def test_python_api_matches_cli_choices():
    """The CLI's export choices are the Python API's formats."""
    from thai_eval_utils.cli import build_parser

    args = build_parser().parse_args(["export", "--format", "parquet"])
    assert args.format == "parquet"
    export_parser = build_parser()._subparsers._group_actions[0].choices["export"]
    choices = next(a for a in export_parser._actions if a.dest == "format").choices
    assert choices == ("lm-eval", "thai-llm-leaderboard", "parquet", "seahelm")

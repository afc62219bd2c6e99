"""thai-eval's ``export --format lm-eval`` against files lm-evaluation-harness 0.4.13 ITSELF wrote for the same items.

``tests/data/lmeval_written/`` holds a ``results_*.json`` and ``samples_*.jsonl`` that lm-eval's own CLI wrote
(``benchmarks/lmeval_results_fixture.py``: lm-eval's own ARC, HellaSwag and Winogrande task files pointed at the
shipped Thai samples, the embedded Gemma 3 270M, float32 CPU, no BOS, few-shot seed 1234, the first documents of
each task). Here thai-eval's ``h6.evaluate`` scores the same documents with the same model under lm-eval's protocol
(sampler "h", the fixture's shots, limit and seed) and exports them; the two must carry the same keys (the
differences listed below, with their reasons), the same targets, prompts, hashes and metrics, and log-likelihoods
equal to float32 noise. The fixture is committed: lm-eval is not needed here.
"""

from __future__ import annotations

import json
import time

import pytest
from conftest import REPO

from thai_eval_utils import h6
from thai_eval_utils.export import export

FIXTURE = REPO / "tests" / "data" / "lmeval_written"
DATA = REPO / "data" / "thai_h6"

#: lm-eval's top-level results keys thai-eval does not write, and why.
OMITTED = {
    "pretty_env_info": "torch's environment dump of lm-eval's machine; thai-eval records package versions and "
    "platform in each task's signature (thai_eval.tasks)",
    "tokenizer_pad_token": "HFLM's tokenizer details: run cards do not record them (API models have none)",
    "tokenizer_eos_token": "as tokenizer_pad_token",
    "tokenizer_bos_token": "as tokenizer_pad_token; whether a BOS was fed is in each task's protocol (add_bos_token)",
    "eot_token_id": "as tokenizer_pad_token",
}
#: Keys thai-eval adds to lm-eval's results file, and why.
ADDED = {
    "thai_eval": "thai-eval's signature of how the numbers were made (protocol, template and data hashes, "
    "versions), which lm-eval readers ignore"
}
#: lm-eval's ``config`` keys thai-eval does not write: HFLM's model details, not in run cards.
CONFIG_OMITTED = {"model_num_parameters", "model_revision", "model_sha"}
#: Per-task metrics thai-eval adds: acc_bytes (byte-length normalised accuracy, which lm-eval's ARC and HellaSwag
#: task files do not request; lm-eval computes it the same way when asked).
METRICS_ADDED = {"th_arc": ["acc_bytes"], "th_hellaswag": ["acc_bytes"], "th_winogrande": []}
#: Keys present on both sides whose values differ by design (not compared beyond their keys).
VALUES_DIFFER = {
    "versions": "lm-eval: the task file's version (1.0); thai-eval: its own version, which fixes the Thai-H6 prompts",
    "configs": "lm-eval's Jinja/function fields (doc_to_text...) have no thai-eval counterpart (its prompt code and "
    "template hashes are in thai_eval); the shared fields are compared in test_task_metrics",
    "config.model / model_args / model_source / model_name": "the backend and model description of each producer",
    "bootstrap_iters": "lm-eval 100000 (used for non-mean metrics only); thai-eval 0: its stderrs are all "
    "mean_stderr, which lm-eval also uses for acc/acc_norm (the stderr values are compared)",
    "date, git_hash, lm_eval_version, total_evaluation_time_seconds": "when and by what the file was produced",
    "transformers_version": "equal here (the side environment pins the project's), not asserted: it may move",
}
#: Aggregate tolerance: per-document acc/acc_norm are 0/1 and must be equal, so their means and sample standard
#: errors (the same formula on the same values) agree up to summation rounding.
AGG_TOL = 1e-12


def _lmeval_files() -> tuple[dict, dict[str, list[dict]]]:
    """lm-eval's results document and its samples per task, as committed."""
    (results,) = FIXTURE.glob("results_*.json")
    samples = {}
    for path in FIXTURE.glob("samples_*.jsonl"):
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        samples[task] = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return json.loads(results.read_text(encoding="utf-8")), samples


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """(lm-eval's files, thai-eval's export of the same items, the embedded model's tokenizer, seconds taken)."""
    from thai_eval_utils.backend.models import load_model

    theirs, their_samples = _lmeval_files()
    config = theirs["config"]
    assert config["model_args"]["add_bos_token"] is False and config["model_args"]["dtype"] == "float32"
    t0 = time.perf_counter()
    model = load_model("embedded")
    out = tmp_path_factory.mktemp("parity") / "outputs"
    for task, shots in theirs["n-shot"].items():
        protocol = h6.LM_EVAL.replace(num_fewshot=shots, fewshot_seed=config["fewshot_seed"], add_bos_token=False)
        h6.evaluate(model, task, DATA, protocol, limit=int(config["limit"]), outputs=out, progress=False)
    to = tmp_path_factory.mktemp("export")
    files = export("lm-eval", to, outputs=out)
    ours = json.loads(next(p for p in files if p.name.startswith("results_")).read_text(encoding="utf-8"))
    our_samples = {
        p.name.removeprefix("samples_").rsplit("_", 1)[0]: [
            json.loads(x) for x in p.read_text(encoding="utf-8").splitlines()
        ]
        for p in files
        if p.name.startswith("samples_")
    }
    return (theirs, their_samples), (ours, our_samples), model.tokenizer, time.perf_counter() - t0


def test_fixture_is_lm_evals_own_output():
    theirs, samples = _lmeval_files()
    assert theirs["lm_eval_version"] == "0.4.13" and theirs["config"]["model"] == "hf"
    assert sorted(samples) == sorted(theirs["results"]) == ["th_arc", "th_hellaswag", "th_winogrande"]
    assert theirs["n-shot"] == {"th_arc": 3, "th_hellaswag": 2, "th_winogrande": 2}
    assert all(len(s) == 2 for s in samples.values()) and theirs["config"]["limit"] == 2


def test_top_level_keys(both):
    (theirs, _), (ours, _), _, _ = both
    assert set(theirs) - set(OMITTED) == set(ours) - set(ADDED), set(theirs) ^ set(ours)
    assert set(theirs["config"]) - CONFIG_OMITTED == set(ours["config"])
    for key in (
        "n-shot",
        "n-samples",
        "group_subtasks",
        "task_hashes",
        "max_length",
        "system_instruction",
        "chat_template",
        "fewshot_as_multiturn",
    ):
        assert ours[key] == theirs[key], key  # task_hashes: the same documents, prompts and targets
    for key in ("limit", "fewshot_seed", "device", "batch_sizes", "use_cache"):
        assert ours["config"][key] == theirs["config"][key], key
    assert ours["config"]["model_dtype"] == theirs["config"]["model_dtype"] == "torch.float32"
    assert set(ours["versions"]) == set(theirs["versions"]) and set(ours["configs"]) == set(theirs["configs"])


def test_task_metrics(both):
    (theirs, _), (ours, _), _, _ = both
    for task, entry in theirs["results"].items():
        mine = ours["results"][task]
        added = [f"{m}{s},none" for m in METRICS_ADDED[task] for s in ("", "_stderr")]
        assert list(mine) == list(entry) + added, task  # lm-eval's keys in lm-eval's order, then thai-eval's
        for key, value in entry.items():
            if isinstance(value, float):
                assert mine[key] == pytest.approx(value, abs=AGG_TOL), (task, key)
            else:
                assert mine[key] == value, (task, key)
        assert {m: v for m, v in ours["higher_is_better"][task].items() if m not in METRICS_ADDED[task]} == theirs[
            "higher_is_better"
        ][task]
        cfg, their_cfg = ours["configs"][task], theirs["configs"][task]
        for key in (
            "test_split",
            "fewshot_split",
            "num_fewshot",
            "description",
            "target_delimiter",
            "fewshot_delimiter",
            "output_type",
            "repeats",
        ):
            assert cfg[key] == their_cfg[key], (task, key)
        assert {k: cfg["fewshot_config"][k] for k in ("sampler", "split")} == {
            k: their_cfg["fewshot_config"][k] for k in ("sampler", "split")
        }
        assert [m for m in cfg["metric_list"] if m["metric"] not in METRICS_ADDED[task]] == their_cfg["metric_list"]


def test_samples(both, capsys):
    (_, their_samples), (_, our_samples), tok, seconds = both
    worst = {}
    for task, lines in their_samples.items():
        mine = our_samples[task]
        assert [s["doc_id"] for s in mine] == [s["doc_id"] for s in lines], task
        for ours, theirs in zip(mine, lines):
            added = set(METRICS_ADDED[task])
            assert set(ours) - {"thai_eval"} - added == set(theirs), task
            for key in ("doc", "target", "arguments", "filter", "doc_hash", "prompt_hash", "target_hash"):
                assert ours[key] == theirs[key], (task, ours["doc_id"], key)
            assert [m for m in ours["metrics"] if m not in added] == theirs["metrics"]
            for metric in theirs["metrics"]:
                assert ours[metric] == theirs[metric], (task, ours["doc_id"], metric)
            for name in ("resps", "filtered_resps"):
                a = ours[name] if name == "filtered_resps" else [r[0] for r in ours[name]]
                b = theirs[name] if name == "filtered_resps" else [r[0] for r in theirs[name]]
                assert len(a) == len(b) and [g for _, g in a] == [g for _, g in b], (task, name)
                for (ll, _), (their_ll, _), arg in zip(a, b, theirs["arguments"].values()):
                    n_tok = len(tok(arg["arg_1"], add_special_tokens=False)["input_ids"])
                    delta = abs(float(ll) - float(their_ll))
                    # float32 noise: the fixture was written on another CPU, whose kernels sum in another order;
                    # here (AMD EPYC) the sums differ by up to 8e-6 of their size (0.0007 on -87.8), never by more
                    assert delta <= max(1e-4, 1e-5 * n_tok, 1e-5 * abs(float(their_ll))), (
                        task,
                        ours["doc_id"],
                        ll,
                        their_ll,
                    )
                    worst[task] = max(worst.get(task, 0.0), delta)
    with capsys.disabled():
        print(f"\nlm-eval parity: max |delta log-likelihood| {worst}; thai-eval side {seconds:.1f} s")

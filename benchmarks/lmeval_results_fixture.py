"""Make ``tests/data/lmeval_written/``: a results file and per-sample logs that lm-evaluation-harness 0.4.13 itself
wrote for a few Thai-H6 items, the yardstick of thai-eval's ``export --format lm-eval`` (tests/test_export_lmeval_parity.py).

lm-eval ships no Thai-H6 task, so each task here is lm-eval's OWN English task file (``arc/arc_challenge.yaml``,
``hellaswag/hellaswag.yaml``, ``winogrande/default.yaml``, pulled in with ``include:``; their prompts, choices,
targets, ``process_docs`` and metrics are lm-eval's code) pointed at the repo's Thai samples (``data/thai_h6/h6``)
with the split names and shot counts below. lm-eval's own CLI (``lm-eval run --log_samples --output_path``) runs
them on the embedded Gemma 3 270M (float32, CPU, no BOS, batch size 1, few-shot seed 1234: lm-eval's defaults) for
the first ``LIMIT`` documents of each task, under ``nice``. Its ``results_*.json`` and ``samples_*.jsonl`` are copied
as written, except that machine-specific values (local paths, environment dump, timings) are replaced by
``"<...>"`` placeholders; every key stays. Run with the project's Python (lm-eval itself runs in the side
environment ``benchmarks/.work/lmeval-venv`` that ``h6_parity_speed.py`` builds):

    .venv/bin/python benchmarks/lmeval_results_fixture.py      # about 1-3 minutes on a loaded 2-core CPU
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
WORK = REPO / "benchmarks" / ".work" / "lmeval-fixture"
FIXTURE = REPO / "tests" / "data" / "lmeval_written"
DATA = REPO / "data" / "thai_h6" / "h6"
LIMIT = 2
#: thai-eval task -> (lm-eval task file it includes, shots, {split role: data file}); the few-shot split is the one
#: thai-eval draws from (ARC: validation; HellaSwag, Winogrande: train).
TASKS = {
    "th_arc": (
        "arc/arc_challenge.yaml",
        3,
        {
            "test": "th_arc_challenge/th_arc_challenge_test.jsonl",
            "validation": "th_arc_challenge/th_arc_challenge_validation.jsonl",
        },
    ),
    "th_hellaswag": (
        "hellaswag/hellaswag.yaml",
        2,
        {"train": "th_hellaswag/th_hellaswag_train.jsonl", "validation": "th_hellaswag/th_hellaswag_validation.jsonl"},
    ),
    "th_winogrande": (
        "winogrande/default.yaml",
        2,
        {
            "train": "th_winogrande/th_winogrande_train.jsonl",
            "validation": "th_winogrande/th_winogrande_validation.jsonl",
        },
    ),
}
#: Which split lm-eval scores and which it draws shots from, per task (thai-eval's choice of splits).
SPLITS = {
    "th_arc": ("test", "validation"),
    "th_hellaswag": ("validation", "train"),
    "th_winogrande": ("validation", "train"),
}
#: Values that describe the machine at length (torch's environment dump), replaced by a placeholder (keys are kept).
MACHINE_KEYS = ("pretty_env_info",)


def task_yaml(task: str, lm_tasks: Path) -> str:
    """lm-eval's own task file for ``task``, included, with the Thai samples as its dataset."""
    include, shots, files = TASKS[task]
    test, fewshot = SPLITS[task]
    data_files = ", ".join(f"{split}: {DATA / f}" for split, f in files.items())
    return (
        f"include: {lm_tasks / include}\ntask: {task}\ntag: []\ndataset_path: json\ndataset_name: null\n"
        f"dataset_kwargs:\n  data_files: {{{data_files}}}\ntraining_split: {'train' if 'train' in files else 'null'}\n"
        f"validation_split: {'validation' if 'validation' in files else 'null'}\n"
        f"test_split: {test}\nfewshot_split: {fewshot}\nnum_fewshot: {shots}\n"
    )


def run_lm_eval(py: Path, model_dir: Path) -> Path:
    """lm-eval's CLI on the tasks; returns the folder it wrote."""
    lm_tasks = Path(
        subprocess.run(
            [str(py), "-c", "import lm_eval.tasks as t, os; print(os.path.dirname(t.__file__))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    tasks_dir, out = WORK / "tasks", WORK / "out"
    shutil.rmtree(WORK, ignore_errors=True)
    tasks_dir.mkdir(parents=True)
    for task in TASKS:
        (tasks_dir / f"{task}.yaml").write_text(task_yaml(task, lm_tasks), encoding="utf-8")
    cmd = [
        "nice",
        "-n",
        "10",
        str(py),
        "-m",
        "lm_eval",
        "run",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model_dir},dtype=float32,add_bos_token=False",
        "--device",
        "cpu",
        "--batch_size",
        "1",
        "--include_path",
        str(tasks_dir),
        "--tasks",
        ",".join(TASKS),
        "--limit",
        str(LIMIT),
        "--seed",
        "0,1234,1234,1234",
        "--log_samples",
        "--output_path",
        str(out),
    ]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HOME": str(WORK / "hf-home"),
    }
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env)
    print(f"lm-eval ran in {time.perf_counter() - t0:.0f} s")
    (written,) = {p.parent for p in out.rglob("results_*.json")}
    return written


def scrub(value, model_dir: Path):
    """``value`` with the machine's paths replaced: the model folder, the repo and the home folder."""
    if isinstance(value, dict):
        return {k: scrub(v, model_dir) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, model_dir) for v in value]
    if isinstance(value, str):
        sanitized = re.sub(r"[\"<>:/|\\?*\[\]]+", "__", str(model_dir))  # lm_eval.utils.sanitize_model_name
        value = value.replace(str(model_dir), "<embedded-model-dir>").replace(sanitized, "<embedded-model-dir>")
        value = value.replace(str(WORK), "<work>")
        return value.replace(str(REPO), "<repo>").replace(str(Path.home()), "<home>")
    return value


def copy_fixture(written: Path, model_dir: Path) -> list[Path]:
    """Copy lm-eval's files into the fixture folder, machine-specific values replaced (keys kept)."""
    shutil.rmtree(FIXTURE, ignore_errors=True)
    FIXTURE.mkdir(parents=True)
    out = []
    (results,) = written.glob("results_*.json")
    doc = json.loads(results.read_text(encoding="utf-8"))
    for key in MACHINE_KEYS:
        if key in doc:
            doc[key] = f"<{key}: machine-specific, removed>"
    target = FIXTURE / results.name
    target.write_text(json.dumps(scrub(doc, model_dir), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out.append(target)
    for samples in sorted(written.glob("samples_*.jsonl")):
        lines = [json.loads(x) for x in samples.read_text(encoding="utf-8").splitlines() if x.strip()]
        target = FIXTURE / samples.name
        target.write_text(
            "".join(json.dumps(scrub(s, model_dir), ensure_ascii=False) + "\n" for s in lines), encoding="utf-8"
        )
        out.append(target)
    return out


def readme(command: str) -> str:
    """The fixture folder's README: what made it and how to make it again."""
    shots = ", ".join(f"{t} {TASKS[t][1]}-shot (lm-eval's {TASKS[t][0]})" for t in TASKS)
    return (
        f"# Files lm-evaluation-harness 0.4.13 wrote (not thai-eval)\n\n"
        f"Made by `{command}` (see that script's docstring): lm-eval's own CLI (`lm-eval run --model hf "
        f"--model_args pretrained=<embedded Gemma 3 270M>,dtype=float32,add_bos_token=False --device cpu "
        f"--batch_size 1 --limit {LIMIT} --seed 0,1234,1234,1234 --log_samples --output_path ...`) on "
        f"lm-eval's own task files pointed at `data/thai_h6/h6`: {shots}, the first {LIMIT} documents each. "
        "Only machine-specific values (local paths, torch's environment dump `pretty_env_info`) were replaced by `<...>` "
        "placeholders; every key and every other value is as lm-eval wrote it. "
        "`tests/test_export_lmeval_parity.py` compares thai-eval's `export --format lm-eval` of the same items "
        "against these files.\n"
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    from thai_eval_utils.backend.model_sources import embedded_model_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--lmeval-python",
        type=Path,
        help="the Python of an environment with lm-eval 0.4.13 (default: h6_parity_speed.py's, made if missing)",
    )
    args = ap.parse_args(argv)
    if args.lmeval_python:
        py = args.lmeval_python
    else:
        from benchmarks.h6_parity_speed import ensure_venv

        py = ensure_venv()
    model_dir = embedded_model_dir().resolve()
    written = run_lm_eval(py, model_dir)
    files = copy_fixture(written, model_dir)
    (FIXTURE / "README.md").write_text(
        readme(".venv/bin/python benchmarks/lmeval_results_fixture.py"), encoding="utf-8"
    )
    for f in files:
        print(f"{f.relative_to(REPO)}: {f.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

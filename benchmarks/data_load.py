"""Full-size loading and validation of every suite's data: time and peak memory, one suite at a time.

For each suite (``--suites``; default all five) this builds a full-size synthetic copy of the suite's full data in a
temporary folder, in the layout ``thai-eval data fetch`` places it (``<root>/<suite data folder>/``, each file with
its origin entry, as ``core.data_origin`` records it): the shipped samples of ``data/<suite folder>/`` replicated up
to the rows each task's data manifest says the anchor scores (same columns; ids made unique; Thai-H6 and ThaiCLI as
Parquet like the real files, the rest as the JSONL/JSON the fetch writes; Thai-H6 MMLU in 57 subject folders with
each subject's few-shot split as in UpstageAI/ThaiCLI_H6). Few-shot files keep the shipped samples' sizes (the
manifests pin no few-shot row counts); ``--big-fewshot`` grows Thai-H6's to the English originals' split sizes, an
upper bound. SEA-HELM's mt-bench-judge has no known row count: 91 (MT-Bench Thai's questions) is used.

Then a fresh Python process per suite (so each peak is that suite's alone) imports the suite's loaders, loads and
validates every task of the suite through them (``h6.data.load_h6_task``, ``thaicli.data.load_thaicli``,
``dialect.data.load_dialect``, ``thai_llm_leaderboard.data.load_task`` / ``generation.load_nlg_rows`` /
``mt_bench.load_questions``, ``seahelm.data.load_task_data``), holding all of them in memory until the last, and
reports the time and the peak resident memory (``VmHWM`` of ``/proc/self/status``: a forked child's
``ru_maxrss`` would start at its parent's size); then it times ``thai-eval data verify`` and ``run --data full``'s
presence check on the same folder (``sources.catalogue.verify`` and ``require_present``: every file hashed and its
rows counted). Imports are timed apart: they are the same for the samples.

These are the samples replicated, not the real files (no network here): the row counts and layout are the real
ones, the texts are shorter or longer than the real ones wherever the samples are.

    .venv/bin/python benchmarks/data_load.py                  # all five suites (about a minute on 2 cores)
    .venv/bin/python benchmarks/data_load.py --write-doc      # and the data-load block of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from thai_eval_utils.core.data_origin import update_origin  # noqa: E402
from thai_eval_utils.core.provenance import sha256_file  # noqa: E402
from thai_eval_utils.core.records import read_records, write_jsonl  # noqa: E402
from thai_eval_utils.sources.manifest import DataManifest, TaskSource, load_manifest  # noqa: E402
from thai_eval_utils.sources.rows import count_rows  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- data-load:begin -->", "<!-- data-load:end -->"
#: suite -> its package (where data_manifest.json is) and its data folder (shipped samples and fetched data).
SUITES: dict[str, tuple[str, str]] = {
    "thai_h6": ("h6", "thai_h6"),
    "thaicli": ("thaicli", "thaicli"),
    "dialect": ("dialect", "dialect"),
    "thai_llm_leaderboard": ("thai_llm_leaderboard", "thai_llm_leaderboard"),
    "seahelm": ("seahelm", "seahelm"),
}
#: Thai-H6 MMLU subjects whose few-shot file is ``_validation`` in UpstageAI/ThaiCLI_H6 (the other 32: ``_train``).
MMLU_VALIDATION = (
    "anatomy",
    "astronomy",
    "college_computer_science",
    "college_medicine",
    "college_physics",
    "computer_security",
    "econometrics",
    "global_facts",
    "high_school_biology",
    "high_school_chemistry",
    "high_school_computer_science",
    "high_school_european_history",
    "high_school_mathematics",
    "high_school_microeconomics",
    "high_school_us_history",
    "human_aging",
    "human_sexuality",
    "machine_learning",
    "miscellaneous",
    "moral_scenarios",
    "philosophy",
    "professional_medicine",
    "public_relations",
    "security_studies",
    "virology",
)
MMLU_TRAIN = (
    "abstract_algebra",
    "business_ethics",
    "clinical_knowledge",
    "college_biology",
    "college_chemistry",
    "college_mathematics",
    "conceptual_physics",
    "electrical_engineering",
    "elementary_mathematics",
    "formal_logic",
    "high_school_geography",
    "high_school_government_and_politics",
    "high_school_macroeconomics",
    "high_school_physics",
    "high_school_psychology",
    "high_school_statistics",
    "high_school_world_history",
    "international_law",
    "jurisprudence",
    "logical_fallacies",
    "management",
    "marketing",
    "medical_genetics",
    "moral_disputes",
    "nutrition",
    "prehistory",
    "professional_accounting",
    "professional_law",
    "professional_psychology",
    "sociology",
    "us_foreign_policy",
    "world_religions",
)
#: ``--big-fewshot``: the English originals' few-shot split sizes (ARC-Challenge validation, HellaSwag train,
#: Winogrande XL train, GSM8K train; MMLU validation 1,531 over 57 subjects), an upper bound for the Thai files.
BIG_FEWSHOT = {"th_arc": 299, "th_hellaswag": 39905, "th_winogrande": 40398, "th_gsm8k": 7473, "th_mmlu": 27}
#: SEA-HELM's mt-bench-judge: no row count is known (manifest rows null); MT-Bench Thai's 91 questions stand in.
MT_BENCH_JUDGE_ROWS = 91
ID_FIELDS = ("id", "qID", "ind", "question_id", "document_id")


# ------------------------------------------------------------------------------------------------ building
def grow(rows: Sequence[Mapping[str, Any]], n: int) -> list[dict[str, Any]]:
    """``rows`` repeated in order up to ``n`` rows, every id field made unique (text ids get ``-<row>``, integer
    ids become the row number; MT-Bench's ``question_id`` the row number + 1)."""
    if not rows:
        raise ValueError("no sample rows to replicate")
    out = []
    for i in range(n):
        row = dict(rows[i % len(rows)])
        for name in ID_FIELDS:
            if name in row and isinstance(row[name], str):
                row[name] = f"{row[name]}-{i}"
            elif name in row and isinstance(row[name], int) and not isinstance(row[name], bool):
                row[name] = i + 1 if name == "question_id" else i
        out.append(row)
    return out


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Rows as Parquet, JSON Lines or a JSON array, by the file's suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    elif path.suffix == ".json":
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    else:
        write_jsonl(path, rows)
    return path


def _sample(folder: Path, rel: str) -> list[dict[str, Any]]:
    return read_records(folder / rel)


def build_h6(samples: Path, out: Path, manifest: DataManifest, big: bool) -> dict[Path, tuple[str, str]]:
    """Thai-H6 at full size as Parquet in the repository's layout; placed file -> (task, source path)."""
    placed: dict[Path, tuple[str, str]] = {}
    for name, task in manifest.tasks.items():
        if name == "th_mmlu":
            continue
        for f in task.files:
            sample = _sample(samples, f.path.replace(".parquet", ".jsonl"))
            n = task.rows if f.role == "scored" else BIG_FEWSHOT[name] if big else len(sample)
            placed[write_rows(out / f.path, grow(sample, n))] = (name, f.path)
    test = [r for p in sorted((samples / "h6/th_mmlu").glob("*/*_test.jsonl")) for r in read_records(p)]
    pool = [
        r
        for p in sorted((samples / "h6/th_mmlu").glob("*/*.jsonl"))
        if not p.stem.endswith("_test")
        for r in read_records(p)
    ]
    subjects = sorted(MMLU_TRAIN + MMLU_VALIDATION)
    total = manifest.tasks["th_mmlu"].rows
    for k, subject in enumerate(subjects):
        split = "validation" if subject in MMLU_VALIDATION else "train"
        n_test = total // len(subjects) + (k < total % len(subjects))
        for rel, rows in (
            (f"h6/th_mmlu/{subject}/th_mmlu_{subject}_test.parquet", grow(test, n_test)),
            (
                f"h6/th_mmlu/{subject}/th_mmlu_{subject}_{split}.parquet",
                grow(pool, BIG_FEWSHOT["th_mmlu"] if big else 5),
            ),
        ):
            placed[write_rows(out / rel, [{**r, "subject": subject} for r in rows])] = ("th_mmlu", rel)
    return placed


def build_thaicli(samples: Path, out: Path, manifest: DataManifest, big: bool) -> dict[Path, tuple[str, str]]:
    """ThaiCLI's 1,790 factoid and 100 instruction questions as Parquet."""
    sizes = {"cli/CLI_factoid.parquet": 1790, "cli/CLI_instruction.parquet": 100}
    assert sum(sizes.values()) == manifest.tasks["questions"].rows
    return {
        write_rows(out / rel, grow(_sample(samples, rel.replace(".parquet", ".jsonl")), n)): ("questions", rel)
        for rel, n in sizes.items()
    }


def build_dialect(samples: Path, out: Path, manifest: DataManifest, big: bool) -> dict[Path, tuple[str, str]]:
    """The dialect benchmark as the fetch's converter writes it: 4 dialects x 100 rows in ``<dialect>/<task>.jsonl``
    (qa, summarization and each translation direction 20, conversation and food 10)."""
    placed = {}
    for dialect in ("center", "east", "north", "south"):
        for task in (
            "qa",
            "summarization",
            f"translation_eng_{dialect}",
            f"translation_{dialect}_eng",
            "conversation",
            "food",
        ):
            n = 10 if task in ("conversation", "food") else 20
            rows = grow(_sample(samples, f"{dialect}/{task}.jsonl"), n)
            placed[write_rows(out / dialect / f"{task}.jsonl", rows)] = ("generation", "datasets/dataset.pkl")
    assert sum(count_rows(p) or 0 for p in placed) == manifest.tasks["generation"].rows
    return placed


def build_tllb(samples: Path, out: Path, manifest: DataManifest, big: bool) -> dict[Path, tuple[str, str]]:
    """The Thai LLM Leaderboard's files under their own names, each at its task's rows."""
    placed = {}
    for name, task in manifest.tasks.items():
        rel = task.files[0].path
        placed[write_rows(out / rel, grow(_sample(samples, rel), task.rows))] = (name, rel)
    return placed


def build_seahelm(samples: Path, out: Path, manifest: DataManifest, big: bool) -> dict[Path, tuple[str, str]]:
    """SEA-HELM's tasks as the fetch's converter writes them: ``<task>.jsonl`` and (tasks with few-shot rows)
    ``<task>_examples.jsonl`` of 5 rows."""
    placed = {}
    for name, task in manifest.tasks.items():
        source = ",".join(f.path.replace("*", "-00000-of-00001.parquet") for f in task.files)
        rows = grow(_sample(samples, f"{name}.jsonl"), task.rows or MT_BENCH_JUDGE_ROWS)
        placed[write_rows(out / f"{name}.jsonl", rows)] = (name, source)
        if (samples / f"{name}_examples.jsonl").is_file():
            examples = grow(_sample(samples, f"{name}_examples.jsonl"), 5)
            placed[write_rows(out / f"{name}_examples.jsonl", examples)] = (name, source)
    return placed


BUILDERS: dict[str, Callable[[Path, Path, DataManifest, bool], dict[Path, tuple[str, str]]]] = {
    "thai_h6": build_h6,
    "thaicli": build_thaicli,
    "dialect": build_dialect,
    "thai_llm_leaderboard": build_tllb,
    "seahelm": build_seahelm,
}


def origin_entry(task: TaskSource, name: str, placed: Path, stamp: str) -> dict[str, Any]:
    """The origin entry ``thai-eval data fetch`` would write for ``placed`` (``sources.fetch._entry``); an unpinned
    source gets a made-up resolved commit, a pinned source file hash is recorded as pinned."""
    pins = {f.path: f.sha256 for f in task.files if f.sha256}
    sha = sha256_file(placed)
    return {
        "suite": task.suite,
        "task": task.task,
        "kind": task.source.kind,
        "source": task.source.id,
        "revision": task.source.revision or "main",
        "pinned": task.source.revision is not None,
        "resolved_revision": task.source.revision or "0" * 40,
        "path": name,
        "source_sha256": {n: pins.get(n, sha) for n in name.split(",")},
        "sha256": sha,
        "rows": count_rows(placed),
        "licence": task.source.licence,
        "fetched_at": stamp,
    }


def build(suite: str, root: Path, big: bool) -> Path:
    """The suite's full-size synthetic data under ``root/<data folder>``, with its origin file; the folder."""
    package, folder = SUITES[suite]
    manifest = load_manifest(REPO / "thai_eval_utils" / package / "data_manifest.json")
    out = root / folder
    placed = BUILDERS[suite](REPO / "data" / folder, out, manifest, big)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    update_origin(
        out,
        {
            p.relative_to(out).as_posix(): origin_entry(manifest.tasks[task], name, p, stamp)
            for p, (task, name) in placed.items()
        },
    )
    return out


# ------------------------------------------------------------------------------------ loading (child process)
def vm_hwm_mib() -> float:
    """This process's peak resident memory in MiB since its exec (``VmHWM``; ``ru_maxrss`` where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Tally:
    """What a suite's loading read: tasks, scored rows (each scored file once), all rows returned, files."""

    def __init__(self) -> None:
        self.tasks, self.scored, self.read = 0, 0, 0
        self.seen: set[str] = set()
        self.files: set[str] = set()
        self.kept: list[Any] = []

    def add(self, loaded: Any, scored_key: str, scored: int, read: int, files: Sequence[Any]) -> None:
        """One task loaded; ``scored_key`` names its scored rows (a task rereading another's file names the same)."""
        self.tasks += 1
        self.scored += scored if scored_key not in self.seen else 0
        self.seen.add(scored_key)
        self.read += read
        self.files.update(str(f) for f in files)
        self.kept.append(loaded)  # the whole suite stays in memory until the end, as the peak should show


def load_h6(folder: Path, tally: Tally) -> None:
    from thai_eval_utils.h6.data import H6_TASKS, load_h6_task

    for task in H6_TASKS:
        d = load_h6_task(folder, task)
        tally.add(d, task, len(d.docs), len(d.docs) + len(d.fewshot_pool), d.files)


def load_cli(folder: Path, tally: Tally) -> None:
    from thai_eval_utils.thaicli.data import load_thaicli

    df = load_thaicli(folder)  # the answers, judge and loglik tasks all read these questions
    tally.add(df, "questions", len(df), len(df), df.attrs["files"])


def load_dia(folder: Path, tally: Tally) -> None:
    from thai_eval_utils.dialect.data import load_dialect

    df = load_dialect(folder)
    tally.add(df, "generation", len(df), len(df), df.attrs["files"])


def load_tllb(folder: Path, tally: Tally) -> None:
    from thai_eval_utils.thai_llm_leaderboard.data import load_task
    from thai_eval_utils.thai_llm_leaderboard.generation import NLG_TASKS, load_nlg_rows
    from thai_eval_utils.thai_llm_leaderboard.mt_bench import load_questions
    from thai_eval_utils.thai_llm_leaderboard.tasks import NLU_TASKS

    for task in NLU_TASKS.values():  # the .corrected tasks read their runner task's file again
        d = load_task(task, folder)
        tally.add(d, str(d.path), d.n_rows, d.n_rows, [d.path])
    for task in NLG_TASKS.values():
        rows = load_nlg_rows(task, folder / task.data_file)
        tally.add(rows, task.data_file, len(rows), len(rows), [task.data_file])
    questions = load_questions(folder / "mt_bench_thai_full.json")
    tally.add(questions, "mt_bench", len(questions), len(questions), ["mt_bench_thai_full.json"])


def load_sea(folder: Path, tally: Tally) -> None:
    from thai_eval_utils.seahelm.config import task_configs
    from thai_eval_utils.seahelm.data import load_task_data

    for config in task_configs().values():  # the -logprobs tasks read their parents' files again
        d = load_task_data(config, folder)
        tally.add(d, d.files[0], len(d.rows), len(d.rows) + len(d.examples), d.files)


LOADERS: dict[str, Callable[[Path, Tally], None]] = {
    "thai_h6": load_h6,
    "thaicli": load_cli,
    "dialect": load_dia,
    "thai_llm_leaderboard": load_tllb,
    "seahelm": load_sea,
}
_IMPORTS = {
    "thai_h6": ["thai_eval_utils.h6.data"],
    "thaicli": ["thai_eval_utils.thaicli.data"],
    "dialect": ["thai_eval_utils.dialect.data"],
    "thai_llm_leaderboard": [
        "thai_eval_utils.thai_llm_leaderboard.data",
        "thai_eval_utils.thai_llm_leaderboard.generation",
        "thai_eval_utils.thai_llm_leaderboard.mt_bench",
    ],
    "seahelm": ["thai_eval_utils.seahelm.data", "thai_eval_utils.seahelm.config"],
}


def child(suite: str, root: Path, verify: bool) -> dict[str, Any]:
    """In a fresh process: import, load and validate every task of ``suite`` under ``root``; then (``verify``)
    ``thai-eval data verify`` and ``run --data full``'s presence check on the same folder."""
    import importlib

    start = time.perf_counter()
    for module in _IMPORTS[suite]:
        importlib.import_module(module)
    res: dict[str, Any] = {"suite": suite, "import_s": time.perf_counter() - start, "import_mib": vm_hwm_mib()}
    tally = Tally()
    start = time.perf_counter()
    LOADERS[suite](root / SUITES[suite][1], tally)
    res.update(
        load_s=time.perf_counter() - start,
        peak_mib=vm_hwm_mib(),
        tasks=tally.tasks,
        scored=tally.scored,
        read=tally.read,
        files=len(tally.files),
    )
    if verify:
        from thai_eval_utils.core import registry
        from thai_eval_utils.sources import catalogue

        registry.suites()  # every suite's import, as the command does; not timed
        start = time.perf_counter()
        problems = catalogue.verify([suite], root)
        catalogue.require_present(registry.suites()[suite], (), root)
        res.update(verify_s=time.perf_counter() - start, problems=problems)
    return res


# --------------------------------------------------------------------------------------------- the report
def machine() -> str:
    """Cores, CPU model, Python and the load average, in words."""
    model = (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor(),
        )
        if Path("/proc/cpuinfo").is_file()
        else ""
    )
    return f"{os.cpu_count()} cores ({model}), Python {platform.python_version()}"


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def report(res: Mapping[str, Any]) -> str:
    """The markdown block: when, where, the command, a row per suite and the total against the goal."""
    rows = res["rows"]
    lines = [
        f"Measured {res['date']} on {res['machine']}; the machine is shared with other jobs (load average "
        f"{res['load_before']} before, {res['load_after']} after). Command: `{res['command']}`.",
        "",
        "Synthetic data: each suite's shipped samples replicated to the manifests' row counts (same columns and "
        "layout, ids made unique; few-shot files at the samples' sizes"
        + (", Thai-H6's grown to the English originals' sizes" if res["big_fewshot"] else "")
        + "), not the real files.",
        "",
        "| suite | tasks loaded | rows scored | rows read | files | imports s | load + validate s | verify s "
        "| peak MiB (after imports) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        verify = f"{r['verify_s']:.2f}" if "verify_s" in r else ""
        lines.append(
            f"| {r['suite']} | {r['tasks']} | {r['scored']:,} | {r['read']:,} | {r['files']} | "
            f"{r['import_s']:.1f} | {r['load_s']:.2f} | {verify} | {r['peak_mib']:,.0f} "
            f"({r['import_mib']:,.0f}) |"
        )
    total = {k: sum(r[k] for r in rows) for k in ("tasks", "scored", "read", "files", "import_s", "load_s")}
    verify_total = sum(r.get("verify_s", 0.0) for r in rows)
    peak = max(r["peak_mib"] for r in rows)
    lines.append(
        f"| **all** | {total['tasks']} | {total['scored']:,} | {total['read']:,} | {total['files']} | "
        f"{total['import_s']:.1f} | **{total['load_s']:.2f}** | {verify_total:.2f} | **{peak:,.0f}** (max) |"
    )
    problems = [p for r in rows for p in r.get("problems", [])]
    with_imports = total["load_s"] + total["import_s"]
    lines += [
        "",
        f"Goal (all five suites' full data loaded and validated within 30 s and 2 GB peak on 2 cores, one "
        f"suite in memory at a time): load + validate {total['load_s']:.1f} s, largest peak {peak:,.0f} MiB: "
        f"**{'met' if total['load_s'] <= 30 and peak <= 2048 else 'NOT met'}**. Counting the imports of five "
        f"fresh processes (paid by a run on the samples too): {with_imports:.1f} s, "
        f"{'within' if with_imports <= 30 else 'over'} 30 s."
        + (
            f" `data verify` found {len(problems)} problem(s): {problems[:3]}"
            if problems
            else (
                " `data verify` and the presence check passed on every suite."
                if any("verify_s" in r for r in rows)
                else ""
            )
        ),
    ]
    return "\n".join(lines)


def update_doc(block: str) -> None:
    """Replace the text between the data-load markers of docs/benchmarks.md (appended when missing)."""
    text = DOC.read_text(encoding="utf-8")
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    DOC.write_text(f"{head}{BEGIN}\n{block}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")


def run_suite(suite: str, work: Path, big: bool, verify: bool) -> dict[str, Any]:
    """Build the suite's data, measure it in a fresh process, delete it (one suite on disk at a time)."""
    root = Path(tempfile.mkdtemp(prefix=f"{suite}-", dir=work))
    try:
        start = time.perf_counter()
        build(suite, root, big)
        built = time.perf_counter() - start
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            "HF_HUB_OFFLINE": "1",
        }
        args = [sys.executable, __file__, "--child", suite, "--root", str(root)] + ([] if verify else ["--no-verify"])
        done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{suite}: the loading process failed:\n{done.stderr[-3000:]}")
        res = json.loads(done.stdout.strip().splitlines()[-1])
        res["build_s"] = built
        return res
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", default=",".join(SUITES), help="comma-separated (default: all five)")
    ap.add_argument(
        "--big-fewshot",
        action="store_true",
        help="Thai-H6's few-shot files at the English originals' "
        "split sizes (an upper bound) instead of the samples' sizes",
    )
    ap.add_argument("--no-verify", action="store_true", help="skip timing `thai-eval data verify`")
    ap.add_argument("--work", default=None, help="folder for the synthetic data (default: the system's temp folder)")
    ap.add_argument("--write-doc", action="store_true", help="update the data-load block of docs/benchmarks.md")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--root", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, Path(args.root), not args.no_verify)))
        return 0
    shown = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--write-doc"]
    res: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "load_before": load_average(),
        "big_fewshot": args.big_fewshot,
        "rows": [],
        "command": " ".join([".venv/bin/python benchmarks/data_load.py", *shown]),
    }
    work = Path(args.work or tempfile.gettempdir())
    work.mkdir(parents=True, exist_ok=True)
    for suite in args.suites.split(","):
        row = run_suite(suite, work, args.big_fewshot, not args.no_verify)
        print(
            f"{suite}: built in {row['build_s']:.1f} s; {row['scored']:,} rows scored ({row['read']:,} read) "
            f"loaded in {row['load_s']:.1f} s, peak {row['peak_mib']:,.0f} MiB",
            flush=True,
        )
        res["rows"].append(row)
    res["load_after"] = load_average()
    block = report(res)
    print("\n" + block)
    if args.write_doc:
        update_doc(block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

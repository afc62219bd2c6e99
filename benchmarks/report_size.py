"""The report's size and load time on a full-sized store: ~40k Thai-H6 items per model (the six tasks
at the sizes of Kim et al. Table 1, scaled to ``--h6-items``) plus ThaiCLI (``--thaicli-items`` judged answers)
and the dialects at the sizes of Limkonchotiwat et al. Table 4, for ``--models`` models.

Thai-H6 records are written as ``h6.evaluate`` writes them (document row, gold, 25/10/5-shot indices, one
log-likelihood per choice, metrics), through ``RunStore``, from the shipped sample rows cycled (so their text is
real Thai); ThaiCLI and dialect runs go through the real pipelines (``generate_answers``, ``judge_answers`` with a
local fake judge server, ``run_generation``) on the shipped rows replicated with new ids. Then the report is
written (timed), and opened in headless Chromium (time until its items are ready, and a Thai search).

    .venv/bin/python benchmarks/report_size.py --out /tmp/report_bench          # 2 models x 40k Thai-H6 items
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from fake_openai_server import FakeOpenAIServer, PerAnswerScript, Reply  # noqa: E402
from fakes import FakeModel  # noqa: E402

from thai_eval_utils.backend.openai_client import ApiModel  # noqa: E402
from thai_eval_utils.core.provenance import Score, sha256_text  # noqa: E402
from thai_eval_utils.core.store import RunStore  # noqa: E402
from thai_eval_utils.dialect import generation as D  # noqa: E402
from thai_eval_utils.dialect.data import load_dialect  # noqa: E402
from thai_eval_utils.h6 import tasks as T  # noqa: E402
from thai_eval_utils.h6.data import load_h6_task  # noqa: E402
from thai_eval_utils.h6.evaluation import record_gold  # noqa: E402
from thai_eval_utils.report import write_report  # noqa: E402
from thai_eval_utils.report.browser import open_browser, open_report  # noqa: E402
from thai_eval_utils.thaicli.answers import generate_answers  # noqa: E402
from thai_eval_utils.thaicli.data import load_thaicli  # noqa: E402
from thai_eval_utils.thaicli.judge import judge_answers  # noqa: E402

#: Kim et al. Table 1 (thai_eval_utils/paper/published_tables/thai_h6_sizes_table1.csv).
H6_SIZES = {
    "th_arc": 1222,
    "th_hellaswag": 10052,
    "th_mmlu": 14585,
    "th_truthfulqa": 817,
    "th_gsm8k": 1324,
    "th_winogrande": 1272,
}
#: Limkonchotiwat et al. Table 4 per dialect (translation: both directions).
DIALECT_SIZES = {"qa": 20, "summarization": 20, "translation": 20, "conversation": 10, "food": 10}


def h6_runs(model: str, out: Path, total: int, rng: random.Random) -> int:
    """Records shaped as ``h6.evaluate`` writes them, from the shipped rows cycled; returns the count."""
    scale, n_all = total / sum(H6_SIZES.values()), 0
    for task, size in H6_SIZES.items():
        spec, data = T.get_task(task), load_h6_task(REPO / "data" / "thai_h6", task)
        n = round(size * scale)
        with RunStore.open(
            model,
            f"thai_h6/{task}",
            {"task": task, "synthetic": "report_size benchmark"},
            data_files=data.files,
            prompt_templates=T.templates_for(spec),
            outputs=out,
        ) as store:
            metric = T.TASK_METRICS[task][0]
            values = []
            for i in range(n):
                doc = data.docs[i % len(data.docs)]
                pool = spec.pool_for(spec.pool_of(data), doc)
                shots = rng.sample(range(len(pool)), min(spec.num_fewshot, len(pool)))
                rec = {"doc": i, "prompt_sha256": sha256_text(f"{model}{task}{i}"), "shots": shots}
                if spec.uses_loglikelihood:
                    k = len(spec.requests(doc, [], T.templates_for(spec)).requests)  # one log-likelihood per request
                    lls = [round(-rng.uniform(0.5, 20), 4) for _ in range(k)]
                    rec |= {"lls": lls, "is_greedy": [False] * k}
                    rec |= spec.score(doc, {"lls": lls}, T.LEADERBOARD)
                else:
                    rec |= {"generation": "ดังนั้นคำตอบคือ 42"} | spec.score(
                        doc, {"generation": "ดังนั้นคำตอบคือ 42"}, T.LEADERBOARD
                    )
                rec.setdefault("gold", record_gold(spec, doc))
                rec["doc_row"] = doc
                values.append(float(rec[metric]))
                store.append(f"{i}-{rec['prompt_sha256'][:16]}", rec)
            store.write_summary({"task": task, "n": n, "scores": {metric: Score.mean(metric, values).to_dict()}})
        n_all += n
    return n_all


def _replicated(rows: list[dict], n: int, fields: tuple[str, ...]) -> list[dict]:
    """``n`` rows cycled from ``rows``, each made unique by a number appended to ``fields``."""
    return [{**r, **{f: f"{r[f]} ({i})" for f in fields}} for i, r in ((i, rows[i % len(rows)]) for i in range(n))]


def make_data(folder: Path, thaicli_items: int) -> Path:
    """A data folder: ThaiCLI and the dialects replicated to full size (new ids), Thai-H6 linked to the samples."""
    cli = load_thaicli(REPO / "data" / "thaicli")
    (folder / "thaicli").mkdir(parents=True, exist_ok=True)
    for fmt, part in cli.groupby("format"):
        rows = _replicated(part.drop(columns=["id", "format"]).to_dict("records"), thaicli_items // 2, ("question",))
        (folder / "thaicli" / f"CLI_{fmt}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
    for dialect_dir in (REPO / "data" / "dialect").iterdir():
        if not dialect_dir.is_dir():
            continue
        (folder / "dialect" / dialect_dir.name).mkdir(parents=True, exist_ok=True)
        for f in dialect_dir.glob("*.jsonl"):
            rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
            n = next(v for k, v in DIALECT_SIZES.items() if f.stem.startswith(k))
            rows = [{**r, "id": i} for i, r in enumerate(_replicated(rows, n, ()))]
            (folder / "dialect" / dialect_dir.name / f.name).write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
            )
    if not (folder / "thai_h6").exists():
        (folder / "thai_h6").symlink_to(REPO / "data" / "thai_h6")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--models", type=int, default=2)
    ap.add_argument("--h6-items", type=int, default=40_000)
    ap.add_argument("--thaicli-items", type=int, default=900)
    args = ap.parse_args()
    outputs, rng = args.out / "outputs", random.Random(0)
    data = make_data(args.out / "data", args.thaicli_items)
    names = [f"model-{chr(97 + i)}" for i in range(args.models)]
    t0 = time.perf_counter()
    if not (outputs / "runs").exists():
        cli = load_thaicli(data / "thaicli")
        dia = load_dialect(data / "dialect")
        script = PerAnswerScript({}, default=Reply("<score>7</score><explanation>คำตอบถูกต้องและครบถ้วน</explanation>"))
        with FakeOpenAIServer(script) as srv:
            judge = ApiModel(
                "fake-judge", base_url=srv.base_url, api_key="sk-" + "benchfake0123456789abcdef", concurrency=8
            )
            for j, name in enumerate(names):
                h6_runs(name, outputs, args.h6_items, rng)
                answers = generate_answers(
                    FakeModel(name, reply=lambda m, j=j: m[-1]["content"][j * 5 : j * 5 + 60]),
                    cli,
                    outputs=outputs,
                    progress=False,
                )
                judge_answers(answers, judge, outputs=outputs, progress=False)
                D.run_generation(
                    FakeModel(name, reply=lambda m, j=j: m[0]["content"][-40 - j :]),
                    dia,
                    outputs=outputs,
                    greedy=True,
                    progress=False,
                )
    print(f"store: {time.perf_counter() - t0:.0f} s")
    t0 = time.perf_counter()
    path = write_report(outputs, args.out / "report.html", data_dir=data)
    write_s = time.perf_counter() - t0
    with open_browser() as ctx:
        t0 = time.perf_counter()
        page = open_report(ctx, path, "items", timeout_ms=600_000)
        load_s = time.perf_counter() - t0
        n = page.evaluate("document.querySelector('#items-table_info').textContent")
        t0 = time.perf_counter()
        page.fill("#f-search", "ประเทศไทย")
        page.wait_for_function(
            "!document.querySelector('#items-table_info').textContent.includes('of ' + %r)" % n.split(" of ")[-1]
        )
        search_s = time.perf_counter() - t0
        found = page.evaluate("document.querySelector('#items-table_info').textContent")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        json.dumps(
            {
                "models": args.models,
                "h6_items_per_model": args.h6_items,
                "report_mb": round(path.stat().st_size / 1e6, 1),
                "write_s": round(write_s, 1),
                "load_until_ready_s": round(load_s, 1),
                "thai_search_s": round(search_s, 2),
                "items": n,
                "search": found,
                "uptime": uptime,
            },
            ensure_ascii=False,
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

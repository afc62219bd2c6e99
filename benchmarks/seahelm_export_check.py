"""SEA-HELM's own aggregation notebook on ``thai-eval export --format seahelm`` output: does it read our run folders,
and does it compute the same mean and standard error over runs as thai-eval's summary?

Runs the code cells 0-3 of SEA-HELM 6844e6c ``helpers/results_aggregation.ipynb`` unchanged (``load_task_scores``,
``aggregate_scores``), in a side environment, on one exported model folder, and compares each task's ``mean`` and
``stderr`` with the ``over_runs`` of thai-eval's stored summaries (same generator, ``default_rng(94370244)``,
consumed in the exported config's task order).

    /work/sidevenv/seahelm-judge/bin/pip install pandas pyyaml ujson scikit-learn tqdm
    git --git-dir=<SEA-HELM mirror> show 6844e6c:helpers/results_aggregation.ipynb > /tmp/results_aggregation.ipynb
    /work/sidevenv/seahelm-judge/bin/python benchmarks/seahelm_export_check.py /tmp/results_aggregation.ipynb \\
        <export dir> <model basename> <runs> <outputs dir>
"""

from __future__ import annotations

import glob
import json
import sys
import itertools
from pathlib import Path


class SerialPool:
    """The notebook's ``Pool`` in this process (its functions, defined by ``exec``, cannot be pickled to workers):
    ``starmap`` in order, as the pool returns it."""

    def starmap(self, func, iterable):
        return list(itertools.starmap(func, iterable))


def main() -> int:
    notebook, export_dir, model, n_runs, outputs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    cells = [c for c in json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    namespace: dict = {"__name__": "seahelm_notebook"}
    for cell in cells[:4]:  # imports and function definitions; cell 4 is the loop over a results folder
        exec("".join(cell["source"]), namespace)  # noqa: S102 - SEA-HELM's own notebook code, unchanged
    configs, data = namespace["load_task_scores"](export_dir, model, n_runs, SerialPool())
    scores, incomplete = namespace["aggregate_scores"](configs, data, n_bootstraps=30, omit_tasks=[])
    ours = {}
    for path in glob.glob(str(Path(outputs) / "runs" / "*" / "seahelm" / "*" / "*" / "summary.json")):
        summary = json.loads(Path(path).read_text(encoding="utf-8"))
        if summary.get("over_runs"):
            ours[summary["task"]] = summary["over_runs"]
    rows, worst = [], 0.0
    for lang, comps in scores.items():
        if not isinstance(comps, dict) or lang in ("sea_mean_list",):
            continue
        for comp, body in comps.items():
            if not isinstance(body, dict) or "tasks" not in body:
                continue
            for task, entry in body["tasks"].items():
                mine = ours.get(task)
                d_mean = abs(entry["mean"] - mine["mean"]) if mine else None
                d_se = abs(entry["stderr"] - mine["stderr"]) if mine else None
                worst = max(worst, d_mean or 0.0, d_se or 0.0)
                rows.append(
                    {
                        "task": task,
                        "competency": comp,
                        "seahelm_mean": entry["mean"],
                        "seahelm_stderr": entry["stderr"],
                        "thai_eval_mean": mine and mine["mean"],
                        "thai_eval_stderr": mine and mine["stderr"],
                        "abs_diff_mean": d_mean,
                        "abs_diff_stderr": d_se,
                    }
                )
    print(
        json.dumps(
            {"rows": rows, "incomplete": incomplete, "overall_mean": scores.get("mean"), "max_abs_diff": worst},
            indent=1,
            ensure_ascii=False,
        )
    )
    return 0 if rows and worst <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())

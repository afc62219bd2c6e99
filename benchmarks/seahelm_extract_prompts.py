"""Extract SEA-HELM v1.2.1's Thai task configurations (prompt pieces verbatim, max_tokens, shots, metric, groups)
into ``thai_eval_utils/seahelm/prompts/th_tasks.json`` (package data the suite reads).

Spec ``seahelm_thai.md`` 1.2-1.3: the strings are what PyYAML gives for each ``th`` entry of each task's
``config.yaml`` at SEA-HELM @6844e6c (a ``|-`` block scalar: its lines joined by ``\\n``), byte for byte; ``${a.b}``
references (the ``-logprobs`` twins) are resolved the way SEA-HELM's OmegaConf does, by copying the referenced value.

    python benchmarks/seahelm_extract_prompts.py /work/.mirror/aisingapore+SEA-HELM/repo
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

COMMIT = "6844e6c"
OUT = Path(__file__).resolve().parents[1] / "thai_eval_utils" / "seahelm" / "prompts" / "th_tasks.json"
#: Thai task keys (SEA-HELM results keys) and their config files, in SEA-HELM's Thai list order (spec 1.1-1.2).
TASKS = {
    "sentiment": "seahelm_tasks/nlu/sentiment_analysis/config.yaml",
    "qa": "seahelm_tasks/nlu/question_answering/config.yaml",
    "toxicity": "seahelm_tasks/safety/toxicity_detection/config.yaml",
    "translation-en-xx": "seahelm_tasks/nlg/translation/config.yaml",
    "translation-xx-en": "seahelm_tasks/nlg/translation/config.yaml",
    "abssum": "seahelm_tasks/nlg/abstractive_summarization/config.yaml",
    "causal": "seahelm_tasks/nlr/causal/config.yaml",
    "nli": "seahelm_tasks/nlr/nli/config.yaml",
    "if-eval": "seahelm_tasks/instruction_following/ifeval/config.yaml",
    **{
        f"thai_exam_{e}": "seahelm_tasks/knowledge/thai_exam/config.yaml"
        for e in ("a_level", "ic", "onet", "tgat", "tpat1")
    },
    "mt-bench-judge": "seahelm_tasks/multi_turn/mt_bench_judge/config.yaml",
    "belebele-qa-mc": "seahelm_tasks/nlu/belebele_mcqa/config.yaml",
}
LOGPROB_TWINS = (
    "sentiment",
    "toxicity",
    "causal",
    "nli",
    "belebele-qa-mc",
    *(f"thai_exam_{e}" for e in ("a_level", "ic", "onet", "tgat", "tpat1")),
)
KEYS = (
    "name",
    "competency",
    "aggregation_group",
    "metric_class",
    "metric",
    "fewshot_num_examples",
    "use_logprobs",
    "max_n_runs",
    "use_chrf_metric",
    "use_rougeL_metric",
)


def show(mirror: Path, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(mirror), "show", f"{COMMIT}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def resolve(value: object, configs: dict) -> object:
    """``${task.key}`` -> that value (OmegaConf interpolation as SEA-HELM's configs use it)."""
    if isinstance(value, str) and (m := re.fullmatch(r"\$\{([^.}]+)\.([^}]+)\}", value)):
        return resolve(configs[m.group(1)][m.group(2)], configs)
    return value


def entry(key: str, configs: dict, source: str) -> dict:
    cfg = {k: resolve(v, configs) for k, v in configs[key].items()}
    th = cfg["languages"]["th"]
    out = {k: cfg[k] for k in KEYS if k in cfg}
    out.update(
        {
            "source": f"aisingapore/SEA-HELM@{COMMIT}:{source}",
            "filepath": th.get("filepath"),
            "example_filepath": th.get("example_filepath"),
            "max_tokens": th["max_tokens"],
            "prompt_template": th["prompt_template"],
        }
    )
    return out


def main(mirror: Path) -> None:
    configs: dict = {}
    for path in dict.fromkeys(TASKS.values()):
        configs.update(yaml.safe_load(show(mirror, path)))
    tasks = {key: entry(key, configs, path) for key, path in TASKS.items()}
    for key in LOGPROB_TWINS:
        tasks[f"{key}-logprobs"] = entry(f"{key}-logprobs", configs, TASKS[key])
    constants = yaml.safe_load(show(mirror, "seahelm_tasks/constants.yaml"))
    out = {"source": f"aisingapore/SEA-HELM@{COMMIT}", "constants": constants, "tasks": tasks}
    OUT.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(tasks)} tasks")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

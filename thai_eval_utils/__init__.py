"""thai-eval: evaluate large language models in Thai (Thai-H6, ThaiCLI, Thai dialects).

Public names are re-exported here and imported lazily (PEP 562), so ``import thai_eval_utils`` stays
fast and does not load torch until a model-related name is used.

Example:
    >>> from thai_eval_utils import load_model, h6
    >>> model = load_model("embedded")
    >>> result = h6.evaluate(model, "th_arc", "data/thai_h6", limit=5)
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "ThaiEvalError": "errors", "ThaiEvalDataError": "errors", "ModelLoadError": "errors", "JudgeError": "errors",
    # models and scoring
    "load_model": "models", "embedded_model_dir": "models", "LocalModel": "local_model", "ApiModel": "api",
    # data (thai_eval_utils.data re-exports these from one module per benchmark)
    "H6TaskData": "data_h6", "load_h6_task": "data_h6", "load_thaicli": "data_thaicli", "load_dialect": "data_dialect",
    "convert_dialect_pickle": "data_dialect", "read_records": "io",
    # results
    "RunStore": "results", "Score": "results", "list_runs": "results",
    # Thai-H6
    "thai_h6_score": "h6",
    # ThaiCLI
    "build_messages": "judge", "parse_judgement": "judge", "judge_answers": "judge", "thaicli_scores": "judge",
    "generate_answers": "thaicli", "judge_free_scores": "thaicli",
    # dialects
    "bleu": "metrics", "rouge_l": "metrics", "delta_diff": "metrics", "word_overlap": "metrics",
    "run_generation": "dialect",
    "preference_table": "human_eval", "generation_fluency": "human_eval", "cohen_kappa": "human_eval",
    "judge_human_spearman": "human_eval",
    # paper tables and batch runs
    "check_published": "paper", "mismatches": "paper", "run_models": "batch", "save_table": "tables",
}
_SUBMODULES = {"api", "batch", "data", "data_dialect", "data_h6", "data_thaicli", "dialect", "errors", "fewshot", "h6",
               "h6_metrics", "h6_tasks", "human_eval", "io", "judge", "local_model", "metrics", "models", "paper",
               "paper_runs", "plots", "results", "scoring", "serve", "tables", "thaicli"}

__all__ = sorted(_EXPORTS) + sorted(_SUBMODULES)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

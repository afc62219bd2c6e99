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

#: Public names a researcher would guess, re-exported here: name -> module that defines it.
_EXPORTS: dict[str, str] = {
    # errors
    "ThaiEvalError": "core.errors",
    "ThaiEvalDataError": "core.errors",
    "ModelLoadError": "core.errors",
    "JudgeError": "core.errors",
    # models
    "load_model": "backend.models",
    "embedded_model_dir": "backend.model_sources",
    "LocalModel": "backend.local_model",
    "ApiModel": "backend.openai_client",
    "read_records": "core.records",
    # results
    "RunStore": "core.store",
    "list_runs": "core.runs",
    "StoredRun": "core.runs",
    "Score": "core.provenance",
    "save_table": "core.tables",
    # Thai-H6
    "H6TaskData": "h6.data",
    "load_h6_task": "h6.data",
    "thai_h6_score": "h6.average",
    # ThaiCLI
    "load_thaicli": "thaicli.data",
    "build_messages": "thaicli.judge_prompt",
    "parse_judgement": "thaicli.judge_prompt",
    "judge_answers": "thaicli.judge",
    "thaicli_scores": "thaicli.judge",
    "generate_answers": "thaicli.answers",
    "judge_free_scores": "thaicli.judge_free",
    # dialects
    "load_dialect": "dialect.data",
    "convert_dialect_pickle": "dialect.data",
    "run_generation": "dialect.generation",
    "bleu": "dialect.metrics",
    "rouge_l": "dialect.metrics",
    "delta_diff": "dialect.metrics",
    "word_overlap": "dialect.metrics",
    "preference_table": "dialect.human_eval",
    "generation_fluency": "dialect.human_eval",
    "cohen_kappa": "dialect.human_eval",
    "judge_human_spearman": "dialect.human_eval",
    # paper tables and the notebooks run over models
    "check_published": "paper.published",
    "mismatches": "paper.published",
    "run_models": "notebook_runs",
}
#: Subpackages and modules reachable as attributes (``thai_eval_utils.h6.evaluate``).
_SUBMODULES = {"backend", "cli", "core", "dialect", "export", "h6", "notebook_runs", "paper", "plots", "thaicli"}

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

"""Loaders for Thai-H6 and ThaiCLI (arXiv 2410.04795; repo UpstageAI/ThaiCLI_H6) and the Thai dialect
benchmark (arXiv 2504.05898; repo mrpeerat/Thai_local_benchmark), from official layouts or flat files.

One module per benchmark holds its loaders (:mod:`~thai_eval_utils.data_h6`,
:mod:`~thai_eval_utils.data_thaicli`, :mod:`~thai_eval_utils.data_dialect`); this module re-exports their
public names, so ``from thai_eval_utils.data import load_h6_task`` keeps working.

Every bad input raises :class:`ThaiEvalDataError` naming file, row and field; everything is validated
before anything is returned. Thai text is returned exactly as stored (never Unicode-normalised).
"""

from __future__ import annotations

from .data_dialect import DIALECTS, convert_dialect_pickle, dialect_tasks, load_dialect
from .data_h6 import H6_TASKS, H6TaskData, load_h6_task
from .data_thaicli import THAICLI_FORMATS, load_thaicli

__all__ = [
    "DIALECTS",
    "H6_TASKS",
    "H6TaskData",
    "THAICLI_FORMATS",
    "convert_dialect_pickle",
    "dialect_tasks",
    "load_dialect",
    "load_h6_task",
    "load_thaicli",
]

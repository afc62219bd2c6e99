"""The Thai dialect suite as the registry sees it: its name, tasks, notebooks and data folder; the
display hooks are in :mod:`.views`, the export and run hooks in :mod:`.exports`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from thai_eval_utils.core.benchmark import DataConverter, Suite
from thai_eval_utils.dialect.data import dialect_pickle_to_jsonl
from thai_eval_utils.dialect.exports import DialectExports
from thai_eval_utils.dialect.views import DialectViews


class DialectSuite(DialectViews, DialectExports, Suite):
    """Thai dialects (Limkonchotiwat et al. 2025, Table 1)."""

    name: ClassVar[str] = "dialect"
    title: ClassVar[str] = "Thai dialects (Limkonchotiwat et al. 2025, Table 1)"
    short_title: ClassVar[str] = "Thai dialects"
    position: ClassVar[int] = 30
    tasks: ClassVar[tuple[str, ...]] = ("generation",)
    notebooks: ClassVar[tuple[str, ...]] = (
        "dialect_benchmark.ipynb",
        "dialect_human_eval.ipynb",
        "judge_vs_human.ipynb",
    )
    data_folder: ClassVar[str] = "dialect"

    def data_converters(self) -> Mapping[str, DataConverter]:
        """The benchmark's pickle, read through the allow-list (``data_manifest.json``'s ``dialect_pickle``)."""
        return {"dialect_pickle": dialect_pickle_to_jsonl}


SUITE = DialectSuite()

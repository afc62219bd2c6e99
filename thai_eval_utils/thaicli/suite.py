"""The ThaiCLI suite as the registry sees it: its name, tasks, notebooks and data folder; the
display hooks are in :mod:`.views`, the export and run hooks in :mod:`.exports`."""

from __future__ import annotations

from typing import ClassVar

from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.thaicli.exports import ThaiCLIExports
from thai_eval_utils.thaicli.views import ThaiCLIViews


class ThaiCLISuite(ThaiCLIViews, ThaiCLIExports, Suite):
    """ThaiCLI (Kim et al. 2024, Table 5)."""

    name: ClassVar[str] = "thaicli"
    title: ClassVar[str] = "ThaiCLI (Kim et al. 2024, Table 5)"
    short_title: ClassVar[str] = "ThaiCLI"
    position: ClassVar[int] = 20
    tasks: ClassVar[tuple[str, ...]] = ("answers", "judge", "loglik")
    notebooks: ClassVar[tuple[str, ...]] = ("thaicli.ipynb",)
    data_folder: ClassVar[str] = "thaicli"


SUITE = ThaiCLISuite()

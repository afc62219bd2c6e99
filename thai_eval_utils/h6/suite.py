"""The Thai-H6 suite as the registry sees it: its name, tasks, notebooks and data folder; the
display hooks are in :mod:`.views`, the export and run hooks in :mod:`.exports`."""

from __future__ import annotations

from typing import ClassVar

from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.exports import H6Exports
from thai_eval_utils.h6.protocol import VARIANTS
from thai_eval_utils.h6.views import H6Views


class H6Suite(H6Views, H6Exports, Suite):
    """Thai-H6 (Kim et al. 2024, Table 4)."""

    name: ClassVar[str] = "thai_h6"
    title: ClassVar[str] = "Thai-H6 (Kim et al. 2024, Table 4)"
    short_title: ClassVar[str] = "Thai-H6"
    position: ClassVar[int] = 10
    tasks: ClassVar[tuple[str, ...]] = T.TASKS
    notebooks: ClassVar[tuple[str, ...]] = ("thai_h6.ipynb",)
    data_folder: ClassVar[str] = "thai_h6"
    variants: ClassVar[tuple[str, ...]] = VARIANTS


SUITE = H6Suite()

"""The benchmark contract: what every consumer (compare, report, export, the command line, the batch
runner) may ask of a benchmark, so that none of them names one.

A **suite** is a named group of tasks with its own aggregation (Thai-H6: six tasks and their average; ThaiCLI:
factoid + instruction; the dialect benchmark: its tasks and ΔDiff). A suite's runs are stored under
``<outputs>/runs/<model>/<suite>/<task>/<config-id>/`` (the run card's ``benchmark`` is ``<suite>/<task>``), so a
stored run names the suite that can read it. Each benchmark package implements :class:`Suite` in its ``suite``
module; :mod:`thai_eval_utils.core.registry` finds them (and the user's own, from a file or an entry point).

The hooks are what lm-evaluation-harness's ``Task``, lighteval's ``LightevalTaskConfig`` and SEA-HELM's task
``config.yaml`` + metric class say about a task, grouped by the consumer that asks: how to run it (notebooks,
dry run), which stored runs hold its headline scores and their per-item values (:class:`Headline`), how averages
over tasks are made (:class:`Average`), how one item shows (:class:`ItemView`), its leaderboard table and figures,
and its rows in the export formats. Every hook has a default, so a suite implements only what it has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

import pandas as pd

from thai_eval_utils.core.runs import StoredRun

if TYPE_CHECKING:  # matplotlib is heavy and only the figure hook returns one
    from matplotlib.figure import Figure

Kind = Literal["binary", "mean", "corpus"]


@runtime_checkable
class CorpusMetric(Protocol):
    """A corpus metric by per-sentence sufficient statistics (e.g. the dialect paper's corpus BLEU), as
    :class:`thai_eval_utils.stats.corpus.CorpusMetric` resamples it: the score of a set of sentences is
    ``score(statistics(hyps, refs).sum(axis=0))``; one sentence's own score is ``score(statistics(...)[i])``."""

    def statistics(self, hypotheses: Sequence[str], references: Sequence[str]) -> Any:
        """Per sentence, a row of integer statistics (an array of shape ``(n, d)``)."""
        ...

    def score(self, totals: Any) -> float:
        """The corpus score from the column sums of :meth:`statistics`."""
        ...


@dataclass(frozen=True)
class Headline:
    """One headline score's per-item values in one run (what compare pairs and the report resamples).

    ``items`` has ``key`` (pairs an item across runs) and ``value`` (a corpus metric: ``hyp`` and ``ref``
    instead, the metric is recomputed on the corpus with ``corpus_metric``) and detail columns for display.
    ``stratum`` groups rows into averages (Thai-H6 task, ThaiCLI format); ``scale`` turns values into the
    published scale (100 for 0-1 values). ``variant``: the labelled variant (:attr:`Suite.variants`) the run was
    made with, "" for the published protocol: compare pairs it with the other side's run of the same variant task
    in a row of its own, never in the suite's averages.
    """

    name: str
    family: str
    stratum: str
    kind: Kind
    scale: float
    items: pd.DataFrame
    run: StoredRun
    note: str = ""
    corpus_metric: CorpusMetric | None = None
    variant: str = ""


@dataclass(frozen=True)
class Average:
    """An unweighted average of a suite's headline scores (compare resamples it within each member).

    ``members`` are the headline names' prefix (``thai_h6/``; a labelled variant's headline is never one);
    ``expected`` the number of members a complete run has (fewer makes the row partial, and says so); ``scale``
    the published scale of the average.
    """

    name: str
    members: str
    expected: int | None = None
    scale: float = 1.0
    min_members: int = 2


@dataclass
class ItemView:
    """How one item shows in the report's item browser and the side-by-side view (every field optional).

    The report embeds these with short keys (:meth:`record`); the names here are what a reader sees.
    """

    task: str
    key: str
    value: float | None = None
    correct: int | None = None
    question: str | None = None
    choices: list[str] | None = None
    loglikelihoods: list[float] | None = None
    pred: int | None = None
    gold: int | str | None = None
    output: str | None = None
    reference: str | None = None
    judge_reply: str | None = None
    judge_status: str | None = None
    repeat: int | None = None
    subject: str | None = None
    #: The few-shot block: ``(pool id, example indices)`` into the report's shared pools.
    fewshot: Sequence[Any] | None = None
    prompt_hash: str | None = None
    #: What the detail pane calls the question and the output (default "prompt" and "output").
    question_label: str | None = None
    output_label: str | None = None
    note: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    #: ItemView field -> the report's short key (report/items.py documents them).
    SHORT: ClassVar[dict[str, str]] = {
        "task": "t",
        "key": "k",
        "value": "v",
        "correct": "c",
        "question": "q",
        "choices": "ch",
        "loglikelihoods": "ll",
        "pred": "p",
        "gold": "g",
        "output": "o",
        "reference": "ref",
        "judge_reply": "j",
        "judge_status": "js",
        "repeat": "r",
        "subject": "sub",
        "fewshot": "fs",
        "prompt_hash": "hash",
        "note": "note",
        "question_label": "ql",
        "output_label": "ol",
    }

    def record(self, family: str) -> dict[str, Any]:
        """The short-keyed record the report embeds (fields left None are left out, except ``v``)."""
        out: dict[str, Any] = {"b": family}
        for name, short in self.SHORT.items():
            value = getattr(self, name)
            if value is not None or name == "value":
                out[short] = value
        return {**out, **self.extra}


@dataclass(frozen=True)
class Sides:
    """An item of a comparison as the side-by-side table shows it: the input, the reference, both outputs and
    (judged benchmarks) both judge replies."""

    input: str = ""
    reference: str = ""
    output_a: str = ""
    output_b: str = ""
    explanation_a: str = ""
    explanation_b: str = ""


#: Record fields that say what was asked, in the records of any benchmark (:attr:`Suite.detail_inputs`).
DETAIL_INPUTS = frozenset(
    {
        "doc",
        "doc_row",
        "shots",
        "subject",
        "id",
        "format",
        "theme",
        "question",
        "prompt",
        "messages",
        "task",
        "gold",
        "chosen",
        "rejected",
        "reference",
    }
)


def score_value(entry: Any) -> float | None:
    """A summary's stored score (``{"value": ...}``) as a float; None when it is missing or undefined."""
    return float(entry["value"]) if isinstance(entry, dict) and entry.get("value") is not None else None


@dataclass(frozen=True)
class LmEvalTask:
    """One run as an lm-evaluation-harness 0.4.13 task (:meth:`Suite.lm_eval_export`): its entries of
    ``results_<date>.json`` and its ``samples_<task>_<date>.jsonl`` lines.

    ``results``: the ``results`` entry (``name``, ``alias``, ``sample_len``, ``<metric>,<filter>`` and
    ``<metric>_stderr,<filter>``); ``config``: the ``configs`` entry; ``num_fewshot``: the ``n-shot`` entry;
    ``samples``: one line per document and filter (``doc_id``, ``doc``, ``target``, ``arguments``, ``resps``,
    ``filtered_resps``, ``filter``, ``metrics``, ``doc_hash``, ``prompt_hash``, ``target_hash`` and the metric
    values), the first filter of a document first (lm-eval's ``task_hashes`` read those lines).
    """

    name: str
    results: dict[str, Any]
    config: dict[str, Any]
    num_fewshot: int
    samples: list[dict[str, Any]]


@dataclass(frozen=True)
class SeahelmRun:
    """One of a task's repeated runs in SEA-HELM's layout (:class:`SeahelmTask`): its index ``r`` (folder
    ``run_<r>``), seed, the metric class's results (the results JSON's task dict) and its per-row inference lines
    (dataset columns, ``responses``, ``cleaned_responses``, ``individual_scores``, the task's columns)."""

    index: int
    seed: int | None
    metrics: dict[str, Any]
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class SeahelmTask:
    """A stored run as one task of SEA-HELM's results (:meth:`Suite.seahelm_results`; the ``seahelm`` export format):
    ``task`` is SEA-HELM's results key, ``config`` the task's entry of its run config (``competency``, ``metric``,
    ``aggregation_group``, ``languages``: what its aggregation reads), ``runs`` the repeated runs."""

    task: str
    language: str
    competency: str
    metric: str
    aggregation_group: str | None
    config: dict[str, Any]
    runs: tuple[SeahelmRun, ...]


@dataclass(frozen=True)
class DemoComparison:
    """The demo's comparison of a suite's runs: ``notebook`` run again for the same model with ``parameters``
    (into ``<outputs>/demo_compare``; the executed copy ``<notebook stem>_<variant>.ipynb``), then
    ``compare_runs.ipynb`` on the first run (``where_a`` selects it) and the second, as ``compare_<model>_<name>``.
    """

    notebook: str
    variant: str
    parameters: Mapping[str, Any]
    where_a: Mapping[str, Any]
    name: str


@dataclass(frozen=True)
class LeaderboardTable:
    """One table of the report's leaderboard: its key, its title and its value columns in display order."""

    key: str
    title: str
    columns: tuple[str, ...]
    #: The name of a row group that splits each model's row (shown as a column; the cells' ``group``), "" for none.
    group: str = ""


@runtime_checkable
class Interval(Protocol):
    """What the leaderboard hooks use to make a cell's interval (``stats.cells.Bootstrap``)."""

    level: float
    n_resamples: int
    seed: int


class Suite:
    """The contract between one benchmark and every consumer; subclass it in ``<package>/suite.py``.

    Class attributes say what the suite is; methods answer the consumers. Every method has a default (nothing
    to show), so a suite implements only what it has.
    """

    #: The registry key and the run card's ``benchmark`` prefix (``thai_h6``); also ``--benchmarks``'s name.
    name: ClassVar[str] = ""
    #: A title for tables and the report.
    title: ClassVar[str] = ""
    #: A short name for messages and help texts (``Thai-H6``); empty: :attr:`name`.
    short_title: ClassVar[str] = ""
    #: Where the suite sorts among suites (tables, compare rows, the report); ties by name.
    position: ClassVar[int] = 100
    #: The version of the suite's protocol (recorded in exports).
    version: ClassVar[str] = "1"
    #: The tasks that run alone (``thai-eval run --benchmarks <suite>/<task>``), in display order.
    tasks: ClassVar[tuple[str, ...]] = ()
    #: The notebooks ``thai-eval run`` executes for this suite, in order (under ``notebooks/``).
    notebooks: ClassVar[tuple[str, ...]] = ()
    #: The folder under a data root (``--data DIR``) that holds this suite's data.
    data_folder: ClassVar[str] = ""
    #: The scale its headline scores are shown on, for a comparison's caption (``Thai-H6 on 0-100``).
    scale_note: ClassVar[str] = ""
    #: Averages over the suite's headline scores (compare's stratified rows, the leaderboard's average columns).
    averages: ClassVar[tuple[Average, ...]] = ()
    #: The suite's leaderboard tables (the report).
    leaderboard_tables: ClassVar[tuple[LeaderboardTable, ...]] = ()
    #: Labelled variants its notebooks can run instead of the published protocol (``thai-eval run --variant``,
    #: handed to the notebooks as ``variant``): each runs under its own task names and signatures, never in the
    #: suite's averages or the paper tables.
    variants: ClassVar[tuple[str, ...]] = ()

    def data_path(self, data_dir: str | Path | None) -> Path | None:
        """This suite's data folder under a data root (``<data_dir>/<data_folder>``); ``data_dir`` itself when it is
        already that folder (named ``data_folder`` and holding no such subfolder); None for no data root."""
        if data_dir is None:
            return None
        root = Path(data_dir)
        if not self.data_folder:
            return root
        if root.name == self.data_folder and not (root / self.data_folder).is_dir():
            return root
        return root / self.data_folder

    # ------------------------------------------------------------------------------------------------ full data
    def data_manifest(self) -> Path | None:
        """The suite's data manifest: ``data_manifest.json`` beside its ``suite.py`` (package data), which says
        where its full data sets are (source, pinned revision, files, SHA-256, rows, licence; read by
        ``thai_eval_utils.sources``); None when the suite has none."""
        package = type(self).__module__.rpartition(".")[0]
        try:
            path = Path(str(resources.files(package) / "data_manifest.json"))
        except (ModuleNotFoundError, TypeError, ValueError):
            return None
        return path if path.is_file() else None

    def data_converters(self) -> Mapping[str, DataConverter]:
        """The converters the manifest names (``"convert"``): source files made into the files the suite's loaders
        read (default: none; files are placed as they come)."""
        return {}

    # ------------------------------------------------------------------------------------------- stored runs
    def holds_headlines(self, run: StoredRun) -> bool:
        """Whether ``run`` holds this suite's headline scores (default: every run of the suite)."""
        return run.family == self.name

    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        """The run's headline scores, per item; ``data_dir`` is a data root (:meth:`data_path` gives this suite's
        folder in it) for what the records lack (None: where the run card says the data was)."""
        return []

    def order(self, headline_name: str) -> int:
        """Where a headline (or average) row sorts within the suite (default: by task, else last)."""
        task = headline_name.split("/")[1] if "/" in headline_name else ""
        return self.tasks.index(task) if task in self.tasks else len(self.tasks)

    # ------------------------------------------------------------------------------------------------ display
    def item_views(
        self,
        run: StoredRun,
        heads: Sequence[Headline],
        data_dir: Path | None,
        pools: dict[str, list[str]],
        notes: list[str],
    ) -> list[ItemView]:
        """Every item of ``run`` as the report shows it. ``heads``: the run's headlines (empty when its items could
        not be read); ``data_dir``: a data root (:meth:`data_path`) for what records lack; ``pools``: few-shot
        blocks shared by items (added to, by id); ``notes``: what could not be shown and why (appended to; the
        report prefixes each with the model's label)."""
        return []

    def sides(self, head_a: Headline, head_b: Headline, keys: Sequence[str], data_dir: Path | None) -> list[Sides]:
        """Items ``keys`` (in both headlines) of a comparison side by side, in that order; ``data_dir``: a data root
        (:meth:`data_path`) for texts the items lack. Default: the items' ``input``/``ref``/``hyp`` columns."""
        a, b = head_a.items.set_index("key"), head_b.items.set_index("key")

        def text(frame: pd.DataFrame, key: str, col: str) -> str:
            value = frame.at[key, col] if col in frame.columns else None
            return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)

        return [Sides(text(a, k, "input"), text(a, k, "ref"), text(a, k, "hyp"), text(b, k, "hyp")) for k in keys]

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Interval) -> list[dict[str, Any]]:
        """The model's cells of this suite's leaderboard tables (``stats.cells.CELL_COLUMNS``, made with
        ``stats.cells.cell``); ``heads``: the model's headlines of this suite."""
        return []

    def figures(
        self, runs: Mapping[str, Mapping[str, StoredRun]], heads: Mapping[str, Sequence[Headline]]
    ) -> list[tuple[str, Figure | None]]:
        """(caption, figure) for the report; ``runs``: model -> benchmark -> run (every suite's); ``heads``:
        model -> this suite's headlines. A None figure (nothing to draw) is left out."""
        return []

    # ------------------------------------------------------------------------------------------------ exports
    #: Record fields that say what was asked (the Parquet details' ``inputs``; the rest is the answer).
    detail_inputs: ClassVar[frozenset[str]] = DETAIL_INPUTS
    #: Record fields that hold per-item metric values (the Parquet details' ``metrics``).
    detail_metrics: ClassVar[frozenset[str]] = frozenset()

    @property
    def label(self) -> str:
        """:attr:`short_title`, else :attr:`name` (messages and help texts)."""
        return self.short_title or self.name

    def leaderboard_results(self, run: StoredRun) -> dict[str, dict[str, float]]:
        """The run's entries of the Thai LLM Leaderboard results JSON (task key -> metric -> value)."""
        return {}

    def leaderboard_summary(self, results: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """Entries computed over a model's exported tasks (e.g. an average), added to its results JSON."""
        return {}

    def leaderboard_folder(self, key: str) -> str:
        """The category folder of a results entry in the Thai LLM Leaderboard's layout
        (``<folder>/<model>/results.json``, as its ``scripts/transform_result.py`` writes): the suite's name unless
        the suite has the leaderboard's own folders (``NLU``, ``MC``, ``NLG``, ``LLM``)."""
        return self.name

    def detail_rows(self, run: StoredRun) -> list[dict[str, Any]]:
        """The run's rows of the Parquet details table, one per item: ``key``, ``prompt_hash`` and the record's
        other fields split into ``inputs`` (:attr:`detail_inputs`), ``metrics`` (:attr:`detail_metrics`) and
        ``outputs`` (the rest), each a dict; the exporter adds the run's model, benchmark, task and signature."""
        rows = []
        for rec in run.records():
            fields = {k: v for k, v in rec.items() if k not in ("key", "prompt_sha256")}
            rows.append(
                {
                    "key": str(rec["key"]),
                    "prompt_hash": rec.get("prompt_sha256"),
                    "inputs": {k: v for k, v in fields.items() if k in self.detail_inputs},
                    "outputs": {
                        k: v for k, v in fields.items() if k not in self.detail_inputs and k not in self.detail_metrics
                    },
                    "metrics": {k: v for k, v in fields.items() if k in self.detail_metrics},
                }
            )
        return rows

    def seahelm_results(self, run: StoredRun) -> list[SeahelmTask]:
        """The run as tasks of SEA-HELM's results layout (its results JSON, run configs and per-row inference files:
        ``thai-eval export --format seahelm``); none by default (the run is not in that format)."""
        return []

    def lm_eval_task(self, run: StoredRun) -> str | None:
        """The lm-evaluation-harness task name the run exports as (None: the run is not in that format). A suite
        that overrides this exports to lm-eval and implements :meth:`lm_eval_export`."""
        return None

    def lm_eval_export(self, run: StoredRun, data: Path | None) -> LmEvalTask:
        """The run as one lm-evaluation-harness task (asked only when :meth:`lm_eval_task` names one); ``data``
        is where to find the data the run scored when the run card's folder has moved."""
        raise NotImplementedError(f"{self.name} does not export to lm-eval")

    # ---------------------------------------------------------------------------------------------------- run
    def notebook_parameters(self, tasks: tuple[str, ...], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Papermill parameters the suite's notebooks need besides the common ones (model, limit, data, outputs);
        ``tasks``: the tasks asked for (empty: all); ``options``: the run's common options (``max_new_tokens``,
        ``greedy``, ...) for a suite whose notebooks take them under other names. Each notebook gets only the
        parameters it declares."""
        return {}

    def executed_notebook(self, notebook: str) -> str:
        """The file name of the executed copy of one of this suite's :attr:`notebooks` (under
        ``<outputs>/notebooks/<model>/``; its HTML export beside it): the notebook's own name, unless several suites
        run the same notebook (declared tasks) and each must keep its own copy. A run with :attr:`variants` adds them
        as a suffix (``notebook_runs.executed_copies``)."""
        return notebook

    def dry_run(
        self,
        data: Path,
        tokenizer: TokenCounter,
        *,
        tasks: tuple[str, ...] = (),
        limit: int | None,
        max_new_tokens: int | None,
    ) -> list[dict[str, Any]]:
        """Rows of ``thai-eval run --dry-run`` (``cli.dry_run.COLUMNS``): what a run would compute, per task;
        ``tasks``: the tasks asked for (empty: all). A suite that repeats its tasks adds a keyword ``runs: int |
        None = None`` (``run --runs``); a suite with :attr:`variants` adds ``variants: tuple[str, ...] = ()`` (those
        of ``run --variant`` that are its own, in :attr:`variants` order) and counts each task as the run would run
        it, under the name it would run as. ``cli.dry_run`` passes each only to a ``dry_run`` that takes it."""
        return []

    def demo_comparison(self) -> DemoComparison | None:
        """The demo's comparison of two runs of this suite (``python -m thai_eval_utils.notebook_runs --demo``), if any."""
        return None

    def __repr__(self) -> str:
        return f"<suite {self.name}: {', '.join(self.tasks) or 'no tasks'}>"


@runtime_checkable
class DataConverter(Protocol):
    """Makes downloaded source files into a suite's data files: ``task`` is the manifest's task name, ``files`` maps
    each downloaded source path of the task to its local copy; the converter writes under ``out_dir`` and returns
    the files it wrote. It never runs code from the files (a pickle is read by ``sources.pickles``' allow-list)."""

    def __call__(self, task: str, files: Mapping[str, Path], out_dir: Path) -> list[Path]: ...


class TokenCounter(Protocol):
    """A tokenizer for counting (``cli.dry_run.Tokenizer``): ``count`` is None when no tokenizer is at hand."""

    tokenizer: Any
    source: str

    def count(self, texts: Sequence[str]) -> int | None:
        """Tokens of ``texts`` together."""
        ...

    def count_requests(
        self, requests: Sequence[tuple[str, str]], *, add_bos_token: bool = False
    ) -> dict[str, int] | None:
        """Log-likelihood requests' tokens: ``fed`` as lm-eval feeds them, ``tree`` as thai-eval's engine runs
        them (``backend.encoding.count_tokens``); None without a tokenizer."""
        ...

    def count_chats(self, chats: Sequence[Sequence[Mapping[str, str]]]) -> int | None:
        """Prompt tokens of chats (``{"role", "content"}`` turns) rendered through the tokenizer's chat template with
        the generation prompt (without a template: the turns' contents); None without a tokenizer."""
        ...

"""batch: papermill runs over models on throwaway notebooks (one failing), parameter filtering, HTML export, CLI."""

import json
from pathlib import Path

import nbformat
import pytest

from thai_eval_utils import notebook_runs

REPO = Path(__file__).resolve().parents[1]


def _notebook(path, parameters: str, body: str) -> None:
    params = nbformat.v4.new_code_cell(parameters)
    params.metadata["tags"] = ["parameters"]
    nb = nbformat.v4.new_notebook(cells=[params, nbformat.v4.new_code_cell(body)])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, path)


@pytest.fixture
def notebooks(tmp_path):
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    # a benchmark notebook: fails for the model "bad"; writes <outputs_dir>/<model>.txt relative to its cwd
    _notebook(
        nb_dir / "bench.ipynb",
        # "None = all": papermill's own inspection skips a line with two "=" (batch reads the cell with ast too)
        'model = "m"  # model spec\nlimit = None  # items per task; None = all\n'
        'data_source = "../data"  # data folder\noutputs_dir = "../outputs"  # outputs folder',
        "import os, pathlib\n"
        'if model == "bad":\n    raise RuntimeError("model bad cannot load")\n'
        'pathlib.Path(outputs_dir, f"{model}.txt").write_text(f"{limit} {os.getcwd()}")',
    )
    # a notebook without a model parameter: runs once per batch
    _notebook(
        nb_dir / "shared.ipynb",
        'outputs_dir = "../outputs"  # outputs folder',
        'import pathlib\nwith open(pathlib.Path(outputs_dir, "shared.log"), "a") as fh:\n    fh.write("ran\\n")',
    )
    # the paper-tables stand-in: lists what the benchmark notebooks wrote
    _notebook(
        nb_dir / "paper.ipynb",
        'outputs_dir = "../outputs"  # outputs folder\ninclude_runs = True  # unused here',
        'import pathlib\nprint("PAPER-TABLES-OK", sorted(p.name for p in pathlib.Path(outputs_dir).glob("*.txt")))',
    )
    return nb_dir


def test_failure_isolation_parameter_filtering_and_html(tmp_path, notebooks):
    out = tmp_path / "out"
    report = notebook_runs.run_models(
        ["good", "bad"],
        notebooks=["bench.ipynb", "shared.ipynb", "absent.ipynb"],
        limit=3,
        data="/some/data",
        extra_parameters={"unused_param": 1},
        notebooks_dir=notebooks,
        outputs=out,
        paper_notebook="paper.ipynb",
        verbose=False,
    )
    status = {(r.notebook, r.model): r.status for r in report.runs}
    assert status == {
        ("bench.ipynb", "good"): "ok",
        ("bench.ipynb", "bad"): "failed",
        ("shared.ipynb", None): "ok",
        ("absent.ipynb", "good"): "missing",
        ("absent.ipynb", "bad"): "missing",
        ("paper.ipynb", None): "ok",
    }
    assert not report.ok and len(report.failures) == 3
    bad = next(r for r in report.runs if r.model == "bad" and r.notebook == "bench.ipynb")
    assert "RuntimeError: model bad cannot load" in bad.error
    # the failing model did not stop the others, and each executed copy is where it should be
    assert (out / "good.txt").read_text() == f"3 {notebooks}"
    assert not (out / "bad.txt").exists()
    assert (out / "notebooks" / "good" / "bench.ipynb").exists() and (
        out / "notebooks" / "bad" / "bench.ipynb"
    ).exists()
    assert (out / "shared.log").read_text() == "ran\n"  # once, not once per model
    # only declared parameters are passed; outputs_dir is relative to the notebooks folder
    good = next(r for r in report.runs if r.model == "good" and r.notebook == "bench.ipynb")
    # outputs_dir is relative to the notebooks folder inside the project, a path outside it absolute
    assert good.parameters == {"model": "good", "limit": 3, "data_source": "/some/data", "outputs_dir": "../out"}
    assert {"unused_param", "judge_model", "judge_base_url"} <= set(good.dropped_parameters)
    shared = next(r for r in report.runs if r.notebook == "shared.ipynb")
    assert shared.parameters == {"outputs_dir": "../out"} and "data_source" in shared.dropped_parameters
    executed = nbformat.read(out / "notebooks" / "good" / "bench.ipynb", as_version=4)
    injected = next(c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert 'model = "good"' in injected.source and "limit = 3" in injected.source
    assert "unused_param" not in injected.source and 'data_source = "/some/data"' in injected.source
    # the paper notebook ran last and reads without Jupyter as HTML
    assert report.html == str(out / "notebooks" / "paper.html")
    html = (out / "notebooks" / "paper.html").read_text(encoding="utf-8")
    assert "PAPER-TABLES-OK" in html and "good.txt" in html
    saved = json.loads((out / "notebooks" / "batch_report.json").read_text())
    assert saved["ok"] is False and len(saved["runs"]) == 6
    summary = report.summary()
    assert "3/6 notebook runs succeeded." in summary and str(out / "tables") in summary and "paper.html" in summary


def test_notebook_parameters_despite_papermill_parser(notebooks):
    import papermill

    assert "limit" not in papermill.inspect_notebook(str(notebooks / "bench.ipynb"))  # papermill alone misses it
    declared = notebook_runs.notebook_parameters(notebooks / "bench.ipynb")
    assert set(declared) == {"model", "limit", "data_source", "outputs_dir"} and declared["limit"]["default"] == "None"
    assert set(notebook_runs.notebook_parameters(notebooks / "shared.ipynb")) == {"outputs_dir"}


def test_filter_parameters_refuses_secrets():
    declared = {"model": {}, "limit": {}}
    kept, dropped = notebook_runs.filter_parameters(declared, {"model": "x", "limit": None, "max_new_tokens": 8})
    assert kept == {"model": "x"} and dropped == ["max_new_tokens"]
    for secret in ({"api_key": "abc"}, {"OPENAI_API_KEY": "abc"}, {"judge_token": "abc"}, {"model": "sk-" + "a" * 30}):
        with pytest.raises(ValueError, match="secret-looking"):
            notebook_runs.filter_parameters(declared, secret)


def test_cli_arguments(monkeypatch):
    calls = []

    def fake_run_models(models, **kwargs):
        calls.append((models, kwargs))
        ok = models != ["broken"]
        run = notebook_runs.NotebookRun("x.ipynb", models[0], "o", "ok" if ok else "failed")
        return notebook_runs.NotebookRunsReport([run], "outputs")

    monkeypatch.setattr(notebook_runs, "run_models", fake_run_models)
    monkeypatch.setattr(notebook_runs, "run_suites", fake_run_models)  # every suite, suite by suite (no --notebooks)
    assert (
        notebook_runs.main(["--models", "embedded /models/qwen", "--limit", "5", "--judge", "gpt-4o-2024-05-13"]) == 0
    )
    models, kwargs = calls[-1]
    assert models == ["embedded", "/models/qwen"] and kwargs["limit"] == 5 and kwargs["judge"] == "gpt-4o-2024-05-13"
    assert kwargs["paper_notebook"] == notebook_runs.PAPER_NOTEBOOK and "notebooks" not in kwargs
    assert notebook_runs.main(["--models", "m", "--notebooks", "a.ipynb"]) == 0  # named notebooks: run_models itself
    assert calls[-1][1]["notebooks"] == ["a.ipynb"]
    assert notebook_runs.main(["--demo"]) == 0
    assert calls[-1][0] == list(notebook_runs.DEMO_MODELS) and calls[-1][1]["limit"] == notebook_runs.DEMO_LIMIT
    assert calls[-1][1]["extra_parameters"] == notebook_runs.DEMO_PARAMETERS
    assert kwargs["extra_parameters"] == {}  # the earlier, non-demo call
    assert notebook_runs.main(["--models", "/models/x", "--dtype", "bfloat16", "--device-map", "auto"]) == 0
    assert calls[-1][1]["extra_parameters"] == {"options": {"model": {"dtype": "bfloat16", "device_map": "auto"}}}
    assert notebook_runs.main(["--demo", "--dtype", "float32"]) == 0
    assert calls[-1][1]["extra_parameters"] == {
        **notebook_runs.DEMO_PARAMETERS,
        "options": {"model": {"dtype": "float32"}},
    }
    n_calls = len(calls)
    with pytest.raises(SystemExit):
        notebook_runs.main(["--models", "/models/x", "--dtype", "bf16"])  # refused before any notebook runs
    assert len(calls) == n_calls
    assert notebook_runs.main(["--models", "broken", "--no-paper"]) == 1
    assert calls[-1][1]["paper_notebook"] is None
    with pytest.raises(SystemExit):
        notebook_runs.main([])


def test_notebooks_run_without_the_kernel_transport_warning(tmp_path, capfd):
    # ipykernel prints "Kernel is running over TCP without encryption" on the kernel's stderr (this
    # process's fd 2, which capfd reads) for every notebook over TCP; batch's kernels use IPC instead
    import papermill

    from thai_eval_utils.notebook_kernel import IpcKernelManager, ipc_connection_file

    body = 'from ipykernel.kernelapp import IPKernelApp\nprint("x plus one:", x + 1, IPKernelApp.instance().transport)'
    _notebook(tmp_path / "tiny.ipynb", "x = 1  # a number", body)
    papermill.execute_notebook(str(tmp_path / "tiny.ipynb"), str(tmp_path / "tcp.ipynb"), progress_bar=False)
    assert "Kernel is running over TCP without encryption" in capfd.readouterr().err  # the control: it is seen
    run = notebook_runs.execute(tmp_path / "tiny.ipynb", tmp_path / "quiet.ipynb", {"x": 41}, cwd=tmp_path)
    captured = capfd.readouterr()
    assert run.ok and "without encryption" not in captured.err + captured.out
    assert "x plus one: 42 ipc" in json.dumps(nbformat.read(tmp_path / "quiet.ipynb", 4).cells[-1].outputs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quiet.ipynb", "tcp.ipynb", "tiny.ipynb"]  # no socket left
    km = IpcKernelManager(kernel_name="python3")
    assert km.transport == "ipc" and km.ip == km.connection_file.removesuffix(".json") + "-ipc"
    assert ipc_connection_file("/" + "d" * 90) is None  # socket paths too long for AF_UNIX: TCP stays


def test_batch_runs_each_declared_task_into_its_own_executed_notebook(tmp_path, monkeypatch):
    """Two declared tasks registered (docs/examples/user_tasks: thai_capitals, thai_facts) both run, each with its own
    parameters, and one model keeps two executed notebooks, task_<name>.ipynb, as `thai-eval run` does."""
    from thai_eval_utils.core import registry

    saved = list(registry._included)
    registry.include_path(REPO / "docs" / "examples" / "user_tasks")
    seen = []

    def fake_execute(path, copy, params, **kw):
        seen.append((path.name, copy.name, dict(params)))
        return notebook_runs.NotebookRun(path.name, kw.get("model"), str(copy), "ok")

    monkeypatch.setattr(notebook_runs, "execute", fake_execute)
    try:
        report = notebook_runs.run_suites(
            ["m"], outputs=tmp_path / "out", notebooks_dir=tmp_path, paper_notebook=None, verbose=False
        )
    finally:
        registry._included[:] = saved
        registry._suites = None
    copies = {copy: params for name, copy, params in seen if name == "task.ipynb"}
    assert set(copies) == {"task_thai_capitals.ipynb", "task_thai_facts.ipynb"} and report.ok
    assert copies["task_thai_capitals.ipynb"] != copies["task_thai_facts.ipynb"]  # each its own task's parameters
    assert [c for n, c, _ in seen if n != "task.ipynb"] == [n for n, _, _ in seen if n != "task.ipynb"]  # shipped names

"""A built wheel runs the benchmarks: it holds every file the package reads at run time (prompts, templates, the
price table, the papers' published tables: package data declared in pyproject.toml), and, installed outside the
repository, it runs a dialect generation run on the benchmark's own prompts and rechecks the published tables.

The wheel is built from a copy of the files git tracks under ``thai_eval_utils/`` (with ``pyproject.toml`` and
``README.md``), not in the checkout: an in-place build would write ``build/`` and ``*.egg-info`` here, and a stale
``build/lib`` puts modules that have since moved into the wheel."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "thai_eval_utils"

#: The modules that still read files by their own location (``__file__``), what they read and why. Only
#: ``report/render.py`` reads inside the package; the others look at the repository checkout, and every one of those
#: reads is optional or overridable, none is needed to run a benchmark on the user's data:
REPO_READS = {
    "report/render.py": "its own templates/ (package data, in the wheel)",
    "h6/data.py": "data/thai_h6 and the folders a run card names, relative to the checkout: where run_data_roots "
    "looks for a stored run's data (the caller's roots come first; missing folders are skipped)",
    "seahelm/data.py": "data/seahelm: the shipped SEA-HELM samples, the default data folder in a checkout (an "
    "installed wheel passes --data or reads the Hugging Face cache)",
    "report/__init__.py": "data/: texts older run records lack (only when that folder exists; --data overrides)",
    "cli/commands.py": "notebooks/ and data/: the notebooks `thai-eval run` executes and their sample data (defaults "
    "of --notebooks-dir and --data, which point elsewhere for an installed wheel)",
    "notebook_exec.py": "no file: the package's parent folder goes first on the notebook kernels' PYTHONPATH",
}


def _tracked(prefix: str = "thai_eval_utils") -> list[str]:
    """Repository-relative paths of the files git tracks (or would: untracked, not ignored) under ``prefix``."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "--", prefix],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return sorted(p for p in out.splitlines() if (REPO / p).is_file())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of the tracked package files, built offline with this environment's setuptools."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for rel in ["pyproject.toml", "README.md", *_tracked()]:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, src / rel)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(tmp / "dist"),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (found,) = (tmp / "dist").glob("thai_eval-*.whl")
    return found


@pytest.fixture(scope="module")
def site(wheel) -> Path:
    """The wheel installed into a folder of its own (no dependencies: this environment has them)."""
    target = wheel.parent / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return target


def test_the_wheel_holds_every_tracked_package_file(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = {n for n in z.namelist() if n.startswith("thai_eval_utils/")}
    tracked = set(_tracked())
    data = {p for p in tracked if not p.endswith(".py")}
    assert data >= {
        "thai_eval_utils/dialect/prompts/dialect_prompts.json",
        "thai_eval_utils/templates/judge_v1.txt",
        "thai_eval_utils/templates/prices.json",
        "thai_eval_utils/report/templates/report.html.j2",
        "thai_eval_utils/paper/published_tables/thai_h6_table4.csv",
    }
    assert sorted(data - names) == []  # package data not declared in pyproject's [tool.setuptools.package-data]
    assert sorted(tracked - names) == []
    assert sorted(names - tracked) == []  # nothing stale or untracked


def test_the_files_the_code_reads_are_package_data_or_named_here():
    """Every module that reads by its own location is listed in :data:`REPO_READS` (a new read of the checkout
    must be named there, or moved into the package); every resource read through ``importlib.resources`` names
    a file that git tracks under ``thai_eval_utils/``."""
    tracked = set(_tracked())
    by_location, resources = set(), []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        if re.search(r"Path\(__file__\)", text):
            by_location.add(rel)
        for package, parts in re.findall(r'\bfiles\("([\w.]+)"\)((?:\s*/\s*(?:f?"[^"]*"))+)', text):
            names = [re.sub(r"\{[^}]*\}", "*", p) for p in re.findall(r'f?"([^"]*)"', parts)]
            resources.append("/".join([package.replace(".", "/"), *names]))
    assert by_location == set(REPO_READS), "a module reads by its location: name it in REPO_READS or use package data"
    assert len(resources) >= 4, resources  # the dialect prompts, the judge prompt, the price table, the paper tables
    for pattern in resources:  # a file, or a folder of files
        hits = [p for p in tracked if re.fullmatch(re.escape(pattern).replace(r"\*", "[^/]*") + "(/.+)?", p)]
        assert hits, f"{pattern} is read at run time but git tracks no such file under thai_eval_utils/"


RUN = r"""
import json, sys
from pathlib import Path
site, data, outputs = map(Path, sys.argv[1:4])
import thai_eval_utils
from thai_eval_utils import thaicli  # reads the judge prompt (package data) on import
from thai_eval_utils.dialect import load_dialect, run_generation
from thai_eval_utils.dialect.generation import DEFAULT_PROMPTS_PATH, build_prompt, load_prompts

assert Path(thai_eval_utils.__file__).resolve().is_relative_to(site.resolve()), thai_eval_utils.__file__
prompts = load_prompts()
assert prompts.source.startswith("mrpeerat/Thai_local_benchmark"), prompts.source
items = load_dialect(data)
first = build_prompt(items.iloc[0].to_dict(), prompts)


class Model:
    name = "wheel-check"
    identity = {"name": "wheel-check", "source": "test double"}

    def chat(self, conversations, **settings):
        return [conv[-1]["content"][-20:] for conv in conversations]

    def generate(self, prompts, **settings):
        return [p[-20:] for p in prompts]


out = run_generation(Model(), items, outputs=outputs, progress=False)
from thai_eval_utils.paper import check_published, mismatches  # the papers' tables (package data)
checks = check_published()
summary = json.loads((Path(out.attrs["run_dir"]) / "summary.json").read_text(encoding="utf-8"))
print(json.dumps({"module": thai_eval_utils.__file__, "prompts": str(DEFAULT_PROMPTS_PATH), "first": first,
                  "prompts_sent": list(out["prompt"]), "n_items": summary["n_items"], "scores": summary["scores"],
                  "tables": sorted(set(checks["table"])), "checks": len(checks), "mismatches": len(mismatches(checks))}))
"""


def test_the_installed_wheel_runs_a_dialect_generation_run(site, tmp_path):
    data = tmp_path / "my_data"
    for dialect in ("center", "east"):  # the user's data: one QA item per dialect (ΔDiff needs Central Thai)
        (data / dialect).mkdir(parents=True)
        first = (REPO / "data" / "dialect" / dialect / "qa.jsonl").read_text(encoding="utf-8").splitlines()[0]
        (data / dialect / "qa.jsonl").write_text(first + "\n", encoding="utf-8")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "THAI_EVAL_OUTPUTS": str(work / "outputs")}
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(site), str(data), str(work / "outputs")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(got["module"]).resolve().is_relative_to(site.resolve())  # the wheel's copy, not the checkout's
    assert Path(got["prompts"]).resolve().is_relative_to(site.resolve())
    shipped = json.loads((PACKAGE / "dialect" / "prompts" / "dialect_prompts.json").read_text(encoding="utf-8"))
    item = json.loads((data / "center" / "qa.jsonl").read_text(encoding="utf-8"))
    expected = (
        shipped["prompts"]["center"]["qa"]
        .replace("[CONTEXT]", item["context"].strip())
        .replace("[QUESTION]", item["question"].strip())
    )
    assert got["first"] == expected and got["prompts_sent"][0] == expected  # the benchmark's prompt, as sent
    assert len(got["prompts_sent"]) == 2 and got["n_items"] == 2
    assert set(got["scores"]) and not (REPO / "outputs" / "runs" / "wheel-check").exists()
    from thai_eval_utils.paper import check_published, mismatches

    here = check_published()  # the same published tables, rechecked the same way, as from the checkout
    assert (got["checks"], got["mismatches"]) == (len(here), len(mismatches(here))) and got["checks"] > 50


def test_the_wheel_declares_the_command(wheel):
    """``thai-eval`` is the wheel's console script (running ``--help`` imports most of the package: ~15 s of CPU)."""
    with zipfile.ZipFile(wheel) as z:
        entry = next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))
        text = z.read(entry).decode()
    assert re.search(r"^thai-eval = thai_eval_utils\.cli:main$", text, re.M), text

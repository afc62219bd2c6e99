"""The conda environment.yml pins exactly what pyproject.toml pins."""

from __future__ import annotations

import re
import tomllib

import yaml
from conftest import REPO


def _name(req: str) -> str:
    return re.split(r"[\[=<>~!]", req, maxsplit=1)[0].strip().lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    pinned = [p for p in pip_section if not p.startswith("-e")]
    assert {_name(p): p for p in pinned} == {_name(w): w for w in wanted}
    assert "python=3.11" in env["dependencies"]


def test_every_dependency_is_pinned_exactly():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for req in project["dependencies"] + project["optional-dependencies"]["dev"]:
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+(\[[a-z,]+\])?==[0-9][0-9A-Za-z.+\-]*", req), req

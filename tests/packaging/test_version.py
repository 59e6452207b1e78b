"""One version string: revstudio.__version__ is what every place that names a version reads."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import tomllib

import revstudio
from revstudio.core.project import dumps, load

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_reads_the_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "revstudio.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]|rc)?\d*", revstudio.__version__)


def test_the_cli_and_saved_projects_name_it() -> None:
    out = subprocess.run([sys.executable, "-P", "-m", "revstudio", "--version"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.stdout.strip() == revstudio.__version__
    text = dumps(load(ROOT / "resources" / "examples" / "two_branch.revs"))
    assert f'"made_by": "revstudio {revstudio.__version__}"' in text


def test_exported_files_name_it() -> None:
    from revstudio.codegen import export

    source = export(load(ROOT / "resources" / "examples" / "two_branch.revs"))
    assert f"exported from revstudio {revstudio.__version__};" in source.splitlines()[0]


def test_the_changelog_has_this_release() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in text
    assert re.search(rf"^## \[{re.escape(revstudio.__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M)

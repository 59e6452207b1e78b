"""Exported files copy revstudio's layers and runtime verbatim; the MIT licence asks that its
notice travel with them (they carried none, and the repository had no LICENSE file)."""
from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from revstudio.codegen.notice import licence_text, notice_comment

ROOT = Path(__file__).resolve().parents[2]


def test_the_license_file_is_the_notice_exported_files_carry() -> None:
    assert (ROOT / "LICENSE").read_text() == licence_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "LICENSE" in (ROOT / "MANIFEST.in").read_text()


def test_an_export_carries_the_notice_above_the_copied_code() -> None:
    pytest.importorskip("torch")
    import revstudio as rs
    from revstudio import __version__
    from revstudio.core.examples import example_projects

    source = rs.export(example_projects()["revnet_coupling"])
    notice = notice_comment(__version__)
    assert source.count(notice) == 1
    assert "Copyright (c) 2026 the revstudio developers" in notice
    assert source.index(notice) < source.index("(verbatim from revstudio")
    compile(source, "model.py", "exec")

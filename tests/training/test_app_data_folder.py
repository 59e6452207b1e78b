"""revstudio's data folder is ``<data home>/revstudio``, not ``revstudio`` twice, and a user's old runs follow.

Qt's AppDataLocation joins organisation and application names, so the app kept unsaved projects' runs
and its recovery copies in ``~/.local/share/revstudio/revstudio``, and the CLI's ``train`` copied that
path. Both now name ``core.app_data``'s folder; what an earlier revstudio left in the doubled folder is
moved in on first use, or read where it is when it cannot be moved.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from revstudio.cli import main
from revstudio.core import app_data
from revstudio.resources import path as resource_path
from revstudio.training.runs_folder import app_runs_folder, runs_folder

DIGITS = resource_path("examples/digits_revnet.revs")


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(app_data.sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path / "share"


def _run(folder: Path, name: str) -> Path:
    run = folder / name
    run.mkdir(parents=True)
    (run / "status.json").write_text(json.dumps({"status": "finished", "step": 5, "steps": 5}), encoding="utf-8")
    return run


def test_the_data_folder_names_revstudio_once(home: Path) -> None:
    assert app_data.data_folder() == str(home / "revstudio")
    assert app_runs_folder() == str(home / "revstudio" / "runs")


@pytest.mark.parametrize(("platform", "base"), [("win32", "roaming"), ("darwin", "Library/Application Support")])
def test_each_platform_has_one_revstudio_folder(platform: str, base: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_data.sys, "platform", platform)
    monkeypatch.setenv("APPDATA", str(tmp_path / "roaming"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert app_data.path("runs") == os.path.join(str(tmp_path / base), "revstudio", "runs")


def test_a_relative_xdg_data_home_is_ignored_as_qt_ignores_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_data.sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", "relative/share")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert app_data.data_folder() == str(tmp_path / ".local" / "share" / "revstudio")


def test_old_runs_are_moved_in_once_and_listed(home: Path, caplog: pytest.LogCaptureFixture,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    old = home / "revstudio" / "revstudio" / "runs"
    _run(old, "sketch-20260101-120000")
    (old / ".gitignore").write_text("*\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, "revstudio"):
        folder = Path(app_runs_folder())
    assert (folder / "sketch-20260101-120000" / "status.json").is_file()
    assert (folder / ".gitignore").is_file()
    assert not (home / "revstudio" / "revstudio").exists()  # (the emptied doubled folder goes)
    assert f"moved {old} to {folder}" in caplog.text
    assert main(["runs", str(folder)]) == 0
    assert "sketch-20260101-120000" in capsys.readouterr().out
    caplog.clear()
    assert app_runs_folder() == str(folder) and not caplog.text  # (once)


def test_runs_that_cannot_be_moved_stay_in_use_where_they_are(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    old = home / "revstudio" / "revstudio" / "runs"
    run = _run(old, "sketch-20260101-120000")

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied", src)

    monkeypatch.setattr(app_data.os, "rename", refuse)
    with caplog.at_level(logging.WARNING, "revstudio"):
        assert app_runs_folder() == str(old)  # (listed and written where they are)
    assert (run / "status.json").is_file()
    assert f"keeps using {old}" in caplog.text and "Permission denied" in caplog.text


def test_old_runs_join_new_ones_and_a_name_both_have_stays_put(home: Path, caplog: pytest.LogCaptureFixture) -> None:
    old, new = home / "revstudio" / "revstudio" / "runs", home / "revstudio" / "runs"
    _run(old, "a-20260101-120000")
    _run(old, "b-20260101-120000")
    _run(new, "b-20260101-120000")
    _run(new, "c-20260102-120000")
    with caplog.at_level(logging.WARNING, "revstudio"):
        assert app_runs_folder() == str(new)
    assert sorted(p.name for p in new.iterdir()) == ["a-20260101-120000", "b-20260101-120000", "c-20260102-120000"]
    assert (old / "b-20260101-120000" / "status.json").is_file()  # (never overwritten)
    assert "b-20260101-120000" in caplog.text and "by hand" in caplog.text


def test_runs_lists_a_shipped_examples_runs_where_train_put_them(home: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    here = _run(Path(runs_folder(str(DIGITS))), "digits_revnet-20260101-120000")
    app = _run(Path(app_runs_folder()), "digits_revnet-20260102-120000")
    _run(Path(app_runs_folder()), "sketch-20260102-120000")
    assert main(["runs", str(DIGITS)]) == 0
    out = capsys.readouterr().out
    assert here.name in out and app.name in out and "sketch" not in out

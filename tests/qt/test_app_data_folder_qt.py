"""The app keeps unsaved projects' runs and its recovery copies in ``<data home>/revstudio``, the folder
the CLI names (``core.app_data``), not Qt's AppDataLocation (``revstudio/revstudio``: organisation and
application names joined); an earlier revstudio's copies there are moved in, so a crash's copy is offered."""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.core import app_data
from revstudio.qt.autosave import RecoveryStore, default_recovery_dir
from revstudio.qt.training.controller import runs_root
from revstudio.training.runs_folder import app_runs_folder


@pytest.fixture()
def share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(app_data.sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    return tmp_path / "share"


def test_the_app_and_the_cli_name_one_data_folder(share: Path) -> None:
    assert runs_root(None) == share / "revstudio" / "runs" == Path(app_runs_folder())
    assert default_recovery_dir() == share / "revstudio" / "recovery"


def test_an_earlier_revstudios_recovery_copy_is_moved_in(share: Path) -> None:
    old = RecoveryStore(share / "revstudio" / "revstudio" / "recovery")
    old.write("untitled-abc", "{}", None, "sketch")
    store = RecoveryStore()
    assert store.folder == share / "revstudio" / "recovery"
    assert sorted(p.name for p in store.folder.iterdir()) == ["untitled-abc.json", "untitled-abc.revs"]
    assert not old.folder.exists()

"""The app's short child queries (Run > Gradient Check, Run Settings' device list and data preview) start
in a folder of revstudio's own, not the user's home: where that does not exist (the ``nobody`` user's
``/nonexistent``, a container's unset home) each one failed with "could not start ...: chdir: No such
file or directory" instead of answering."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from revstudio.qt.training.child_query import ChildQuery

from .conftest import START_TIMEOUT_MS


def test_a_child_query_answers_where_the_home_folder_does_not_exist(qtbot: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "nonexistent"))
    answers: list[dict] = []
    query = ChildQuery("revstudio", ["--version", "--json"])
    query.answered.connect(answers.append)
    query.start()
    qtbot.waitUntil(lambda: bool(answers), timeout=START_TIMEOUT_MS)
    assert "error" not in answers[0], answers[0]
    assert answers[0]["version"]

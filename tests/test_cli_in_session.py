"""``cli.main`` called in a session (a notebook, a script) leaves the caller's ``sys.stdout`` as it
found it."""
from __future__ import annotations

import io
import sys

from revstudio import cli


def test_main_in_a_session_gives_stdout_its_error_handler_back(monkeypatch) -> None:
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stdout", stream)
    assert cli.main(["--version"]) == 0
    assert sys.stdout is stream and stream.errors == "strict"


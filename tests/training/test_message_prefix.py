"""Every problem a ``revstudio`` command prints on stderr starts with ``revstudio: ``.

train's own refusals said ``revstudio train: ...`` (and ``revstudio train (rank 1): ...``) where
the same command's other errors, and every other command's, said ``revstudio: ...``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from revstudio.cli import main

PROJECT = {"format": "revstudio", "version": 1, "name": "tiny",
           "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4]}},
                     {"id": "h", "type": "Linear", "params": {"out_features": 3}},
                     {"id": "y", "type": "Output", "params": {}}],
           "edges": [["x.out", "h.in"], ["h.out", "y.in"]], "groups": {}, "training": {}, "view": {}}


@pytest.mark.parametrize("argv", [
    ["--data", "nothere.npz"],        # refused by the run (session)
    ["--device", "nosuchdevice"],     # refused by the run
    ["--steps", "-3"],                # refused by the command line
])
def test_train_refusals_carry_the_one_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.revs").write_text(json.dumps(PROJECT))
    assert main(["train", "tiny.revs", "--steps", "2", *argv, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("revstudio: ") and "revstudio train:" not in err, err


def test_a_worker_names_its_rank_after_the_prefix() -> None:
    from revstudio.cli import message_line

    assert message_line("the data file is gone", 3) == "revstudio: rank 3: the data file is gone"
    assert message_line("warning: plugin x") == "revstudio: warning: plugin x"
    assert message_line("bad \x1b[31m name") == "revstudio: bad \\x1b[31m name"

"""A row ``train`` prints is already in the run's metrics.jsonl: readers of stdout (the app, a
launcher handling a second Ctrl+C) may look in the folder the moment a row arrives. The second
Ctrl+C under --nproc read "no checkpoint yet" from the folder a moment after the checkpoint's row was
printed, and recorded the forced stop at step 0."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from revstudio import cli
from revstudio.training import output

pytest.importorskip("torch")
EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs"


def test_every_printed_row_is_in_the_folder_when_it_is_printed(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "run"
    unrecorded: list[dict] = []
    print_row = output.JsonRows.on_row

    def checked(self, row: dict) -> None:
        metrics = out / "metrics.jsonl"
        text = metrics.read_text(encoding="utf-8") if metrics.exists() else ""
        if json.dumps(output.finite(row), sort_keys=True) not in {
                json.dumps(json.loads(line), sort_keys=True) for line in text.splitlines()}:
            unrecorded.append(row)
        print_row(self, row)

    monkeypatch.setattr(output.JsonRows, "on_row", checked)
    code = cli.main(["train", str(EXAMPLE), "--steps", "4", "--log-every", "1", "--checkpoint-every", "2",
                     "--val-every", "0", "--device", "cpu", "--json", "--out", str(out)])
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert code == 0 and any(r.get("event") == "checkpoint" for r in printed)
    assert unrecorded == [], [r.get("event") or r.get("kind") for r in unrecorded]

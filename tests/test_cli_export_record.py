"""``revstudio export RUN -o OUT.py`` records the export in the run folder (``exports.jsonl``: one short
JSON line an export, the file rewritten atomically), and ``revstudio runs --json`` gives the latest: where
the code and the weights went and from which step. Weights of one's own are no run's: nothing is recorded."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio import cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "resources" / "examples" / "revnet_coupling.revs")
QUICK = ["--batch-size", "8", "--device", "cpu", "--val-every", "0", "--gradcheck-every", "0",
         "--memory-every", "0", "--json"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _listed(folder: Path, capsys) -> dict:
    capsys.readouterr()
    assert cli.main(["runs", str(folder), "--json"]) == 0
    return {r["name"]: r for r in json.loads(capsys.readouterr().out)["runs"]}


def test_an_export_of_a_run_is_recorded_and_listed(tmp_path, capsys) -> None:
    run = tmp_path / "runs" / "coupling-20261207-120000"
    assert cli.main(["train", EXAMPLE, "--steps", "2", *QUICK, "--out", str(run)]) == 0
    assert _listed(tmp_path / "runs", capsys)[run.name]["exports"] is None
    (tmp_path / "ship").mkdir()
    assert cli.main(["export", str(run), "-o", str(tmp_path / "ship" / "first.py")]) == 0
    latest = _listed(tmp_path / "runs", capsys)[run.name]["exports"]
    assert latest["count"] == 1
    assert latest["latest"]["code"] == str(tmp_path / "ship" / "first.py")
    assert latest["latest"]["weights"] == str(tmp_path / "ship" / "first.pt")
    assert latest["latest"]["step"] == 2 and latest["latest"]["checkpoint"] == os.path.join("checkpoints", "last.pt")
    assert latest["latest"]["time"].endswith("+00:00")
    # --weights naming the run: recorded too; a state_dict of one's own is no run's
    assert cli.main(["export", EXAMPLE, "--weights", str(run / "checkpoints" / "last.pt"),
                     "-o", str(tmp_path / "second.py")]) == 0
    torch.save(torch.load(tmp_path / "second.pt", weights_only=True), tmp_path / "mine.pt")
    assert cli.main(["export", EXAMPLE, "--weights", str(tmp_path / "mine.pt"), "-o", str(tmp_path / "third.py")]) == 0
    latest = _listed(tmp_path / "runs", capsys)[run.name]["exports"]
    assert latest["count"] == 2 and latest["latest"]["code"] == str(tmp_path / "second.py")
    rows = [json.loads(line) for line in (run / "exports.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [Path(r["code"]).name for r in rows] == ["first.py", "second.py"]


def test_a_record_that_cannot_be_written_leaves_the_export_standing_and_says_so(tmp_path, capsys) -> None:
    run = tmp_path / "run"
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--out", str(run)]) == 0
    (run / "exports.jsonl").mkdir()  # (a folder in the way: no user, root included, can write the record)
    capsys.readouterr()
    assert cli.main(["export", str(run), "-o", str(tmp_path / "out.py")]) == 0
    err = capsys.readouterr().err
    assert (tmp_path / "out.py").is_file() and (tmp_path / "out.pt").is_file()
    assert "note: the export was not recorded in the run folder: cannot write" in err and "Traceback" not in err
    assert str(run / "exports.jsonl") in err


def test_an_onnx_export_of_a_run_is_recorded_too(tmp_path, capsys) -> None:
    pytest.importorskip("onnx")
    pytest.importorskip("onnxscript")
    run = tmp_path / "runs" / "coupling-20261207-130000"
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--out", str(run)]) == 0
    assert cli.main(["export", str(run), "-o", str(tmp_path / "net.onnx")]) == 0
    latest = _listed(tmp_path / "runs", capsys)[run.name]["exports"]
    assert latest["count"] == 1 and latest["latest"]["code"] == str(tmp_path / "net.onnx")
    assert latest["latest"]["weights"] is None and latest["latest"]["step"] == 1

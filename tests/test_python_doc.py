"""docs/python.md stays true: its blocks run as written, in a fresh folder, in order (a notebook's
cells), and what they print comes from the commands' own code (rs.train, rs.memory, rs.runs)."""
from __future__ import annotations

from pathlib import Path

import pytest
from doc_blocks import ROOT, run_doc_blocks


def test_the_python_api_page_runs_as_written(tmp_path, monkeypatch, capsys) -> None:
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    scope = run_doc_blocks("python.md", 8)
    run = scope["run"]
    assert run.status == "finished" and Path(run.run_dir).parent == tmp_path / "runs"
    assert scope["losses"] == [row["loss"] for row in run.steps] and len(run.steps) == 4  # (every 10 steps)
    assert scope["model"] is run.model
    assert set(scope["mem"].to_json()["modes"]) == {"standard", "reversible", "checkpoint"}
    assert list(scope["only"].modes) == ["reversible"]
    sweep = scope["sweep"]
    assert sweep.depths == [1, 2, 4, 8] and sweep.node == "blocks"
    assert sweep.growth("standard") > 0 and abs(sweep.growth("reversible")) < sweep.growth("standard") / 10
    assert scope["latest"]["name"] == Path(run.run_dir).name and scope["latest"]["status"] == "finished"
    ev = scope["ev"]  # the run's own held-out samples: its last validation's figures
    assert ev["accuracy"] == pytest.approx(run.metrics["val_accuracy"], abs=1e-12) and len(ev["worst"]) == 3
    assert Path(ev["saved"]).parent == Path(run.run_dir) / "evaluations"
    done = scope["done"]  # the trained weights, as ONNX, checked with onnxruntime where the dev extra put it
    assert (done.inputs, done.outputs) == (("image",), ("logits",)) and (tmp_path / "tiny.onnx").is_file()
    out = capsys.readouterr().out
    assert "rs.train: nproc=4 asks for several processes" in out and "`!revstudio train net.revs --data synthetic " \
        "--steps 40 --nproc 4`" in out
    assert "training.lr: -1.0 is out of range" in out and "one training step, batch 4" in out
    assert "peak of one training step as Repeat node blocks runs more copies" in out


def test_the_page_is_linked_and_lists_the_whole_api() -> None:
    import revstudio as rs

    assert "docs/python.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    text = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    table = text.split("## Build a graph in code")[0]
    missing = [name for name in rs.__all__ if name != "__version__" and f"rs.{name}" not in text]
    assert not missing, f"docs/python.md does not say: {missing}"
    assert all(f"`rs.{name}(" in table for name in ("train", "memory", "runs", "evaluate"))

"""``--with-training`` on a large uncompressed .npz: the script carries ``training.mapped`` with the
data code, maps the file's arrays as ``revstudio train`` does and trains on them to the same losses
as on the file read whole (the script's ``MAP_ABOVE`` lowered so a small file is mapped)."""
from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from codegen_harness import Rows, run_script  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.training import mapped  # noqa: E402
from revstudio.training.config import TrainConfig  # noqa: E402
from revstudio.training.data import load_data  # noqa: E402
from revstudio.training.loop import train  # noqa: E402
from revstudio.training.task import infer_task  # noqa: E402

SECTION = {"data": "d.npz", "steps": 4, "batch_size": 8, "lr": 0.01, "log_every": 1, "val_every": 2,
           "gradcheck_every": 0, "memory_every": 0, "checkpoint_every": 0}


def _classifier() -> Graph:
    g = Graph("img")
    g.training = dict(SECTION)
    g.add_node("Input", "x", {"shape": [1, 4, 4]})
    g.add_node("Flatten", "flat", {})
    g.add_node("Linear", "fc", {"out_features": 5})
    g.add_node("Output", "y", {})
    g.connect("x.out", "flat.in")
    g.connect("flat.out", "fc.in")
    g.connect("fc.out", "y.in")
    return g


def _losses(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["kind"], r["step"], r.get("loss"), r.get("val_loss")) for r in rows if r["kind"] in ("step", "val")]


def _ours(g: Graph, folder: Path) -> tuple[list[tuple[Any, ...]], Any]:
    cfg = TrainConfig.from_section(SECTION)
    report = full_check(g, batch=8)
    data = load_data(cfg.data, g, report, task=infer_task(g, report), seed=cfg.seed, base_dir=str(folder))
    rows = Rows()
    assert train(g, report, cfg, data, callbacks=[rows]).status == "finished"
    return _losses(rows.rows), data


def test_an_exported_script_trains_on_a_mapped_npz_as_revstudio_train(tmp_path: Path, monkeypatch) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x=rng.integers(0, 256, (40, 1, 4, 4)).astype(np.uint8), y=np.arange(40) % 5)
    g = _classifier()
    text = export(g, with_training=True)
    assert "\nMAP_ABOVE = 256 * 2**20\n" in text and "\nclass Mapped:" in text
    script = tmp_path / "img.py"
    script.write_text(text.replace("\nMAP_ABOVE = 256 * 2**20\n", "\nMAP_ABOVE = 0\n"), encoding="utf-8")
    defs = runpy.run_path(str(script))  # defines, runs nothing (no __main__)
    assert isinstance(defs["load_arrays"](str(tmp_path / "d.npz"))["x"], defs["Mapped"])  # the script maps it
    proc = run_script(script, ["--json", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = _losses([json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")])
    whole, _ = _ours(g, tmp_path)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    ours, data = _ours(g, tmp_path)  # revstudio train on the mapped file: the same run
    assert isinstance(data.train.inputs["x"], mapped.Mapped)
    assert theirs == whole == ours and len(ours) == 6


@pytest.mark.parametrize("compressed", [False, True])
def test_the_exported_script_says_mapped_or_read_whole_in_revstudio_trains_words(tmp_path: Path, monkeypatch,
                                                                                compressed: bool) -> None:
    rng = np.random.default_rng(1)
    save = np.savez_compressed if compressed else np.savez
    save(tmp_path / "d.npz", x=rng.random((40, 1, 4, 4)).astype(np.float32), y=np.arange(40) % 5)
    g = _classifier()
    script = tmp_path / "img.py"
    script.write_text(export(g, with_training=True).replace("\nMAP_ABOVE = 256 * 2**20\n", "\nMAP_ABOVE = 0\n"),
                      encoding="utf-8")
    proc = run_script(script, ["--steps", "1", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if line.startswith("data: ")]
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    _, data = _ours(g, tmp_path)  # revstudio train's start prints "data: " + describe()
    expected = "read whole" if compressed else "x, y mapped (read as used)"
    assert said == [f"data: d.npz: 36 train / 4 val, {expected}"]
    assert data.describe() == f"d.npz: 36 train / 4 val, x 1x4x4, 5 classes, {expected}"

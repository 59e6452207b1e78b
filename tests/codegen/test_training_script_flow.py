"""``--with-training`` for a flow on 8-bit images: the script dequantises as ``revstudio train`` does,
with the same noise, so its loss rows (bits per dimension of the discrete data) are revstudio's."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from codegen_harness import Rows, run_script  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.training.config import TrainConfig  # noqa: E402
from revstudio.training.data import load_data  # noqa: E402
from revstudio.training.loop import train  # noqa: E402
from revstudio.training.task import infer_task  # noqa: E402


def _mnist(root: Path) -> None:
    root.mkdir()
    rng = np.random.default_rng(0)
    for name, array in [("train-images-idx3-ubyte", rng.integers(0, 256, (24, 4, 4))),
                        ("train-labels-idx1-ubyte", np.arange(24) % 10),
                        ("t10k-images-idx3-ubyte", rng.integers(0, 256, (8, 4, 4))),
                        ("t10k-labels-idx1-ubyte", np.arange(8))]:
        (root / name).write_bytes(bytes([0, 0, 8, array.ndim]) + struct.pack(">" + "I" * array.ndim, *array.shape)
                                  + array.astype(np.uint8).tobytes())


def test_the_script_dequantises_a_flows_8bit_images_as_revstudio_train(tmp_path: Path) -> None:
    _mnist(tmp_path / "m")
    section = {"data": "mnist:m", "steps": 4, "batch_size": 8, "lr": 0.01, "log_every": 1, "val_every": 2,
               "gradcheck_every": 0, "memory_every": 0, "checkpoint_every": 0}
    g = Graph("flat")
    g.training = dict(section)
    g.add_node("Input", "x", {"shape": [1, 4, 4]})
    g.add_node("ActNorm", "an", {})
    g.add_node("Output", "z", {})
    g.connect("x.out", "an.in")
    g.connect("an.out", "z.in")
    cfg = TrainConfig.from_section(section)
    report = full_check(g, batch=8)
    data = load_data(cfg.data, g, report, task=infer_task(g, report), seed=cfg.seed, base_dir=str(tmp_path))
    rows = Rows()
    assert train(g, report, cfg, data, callbacks=[rows]).status == "finished"
    ours = [(r["kind"], r["step"], r.get("loss"), r.get("val_loss")) for r in rows.rows if r["kind"] in ("step", "val")]
    script = tmp_path / "flat.py"
    script.write_text(export(g, with_training=True), encoding="utf-8")
    proc = run_script(script, ["--json", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = [(r["kind"], r["step"], r.get("loss"), r.get("val_loss"))
              for r in map(json.loads, filter(lambda line: line.startswith("{"), proc.stdout.splitlines()))
              if r["kind"] in ("step", "val")]
    assert theirs == ours and len(ours) == 6
    assert all(0 < (r[2] if r[0] == "step" else r[3]) < 16 for r in ours)  # bits of 8-bit data, not below 0

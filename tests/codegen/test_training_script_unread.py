"""``--with-training``: the exported script names the arrays of a .npz it does not read (a padded
sequence set's ``lengths``) and what becomes of the padding, as ``revstudio train``'s start does."""
from __future__ import annotations

from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("torch")

from codegen_harness import run_script  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core.generate import sequence_classifier  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402


def _sequence_classifier() -> Graph:
    g = sequence_classifier(4, 12)
    g.training = {"data": "seq.npz", "steps": 1, "batch_size": 8, "log_every": 1, "val_every": 1,
                  "gradcheck_every": 0, "memory_every": 0, "checkpoint_every": 0}
    return g


def test_the_script_names_a_lengths_array_it_does_not_read(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "seq.npz", x=rng.standard_normal((24, 4, 12)).astype(np.float32), y=np.arange(24) % 3,
             lengths=rng.integers(4, 13, 24))
    script = tmp_path / "seq.py"
    script.write_text(export(_sequence_classifier(), with_training=True), encoding="utf-8")
    proc = run_script(script, ["--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "note: data: seq.npz has an array 'lengths' that the run does not read" in proc.stderr
    assert "every sample is fed whole, padded steps included" in proc.stderr

"""``--with-training``: the exported file trains on synthetic data and saves a loadable checkpoint."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import run_script  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core import generate  # noqa: E402


@pytest.mark.slow
def test_training_script_runs_standalone_and_its_checkpoint_loads_into_revstudio(tmp_path) -> None:
    graph = generate.revnet_chain(1, channels=4, size=4, wired=False)
    path = tmp_path / "train_revnet.py"
    path.write_text(export(graph, with_training=True), encoding="utf-8")
    proc = run_script(path, ["--steps", "3", "--batch", "2", "--lr", "0.01", "--mode", "reversible",
                             "--device", "cpu", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "step      1" in proc.stdout and "step      3" in proc.stdout
    state = torch.load(tmp_path / "ck.pt", weights_only=True)
    model = rs_compile(graph, device="cpu")
    model.load_state_dict(state, strict=True)  # the keys are the compiled module's
    # the script seeds 0, builds the teacher, then the student: training moved the student's weights
    torch.manual_seed(0)
    rs_compile(graph, device="cpu")
    start = rs_compile(graph, device="cpu").state_dict()
    assert any(not torch.equal(state[k], start[k]) for k in state if state[k].is_floating_point())


def test_training_script_rejects_bad_options(tmp_path) -> None:
    graph = generate.revnet_chain(1, channels=4, size=4, wired=True)
    path = tmp_path / "t.py"
    path.write_text(export(graph, with_training=True), encoding="utf-8")
    proc = run_script(path, ["--steps", "0"], tmp_path)
    assert proc.returncode == 2
    assert "--steps" in proc.stderr and "Traceback" not in proc.stderr


def test_plain_export_has_no_script(tmp_path) -> None:
    source = export(generate.revnet_chain(1, channels=4, size=4, wired=True))
    assert "def train(" not in source and "__main__" not in source

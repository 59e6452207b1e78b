"""The exported training script's ``--resume`` of a checkpoint a GPU machine wrote (its storages tagged
``cuda:0``, which plain ``torch.load`` refuses here): it goes on here, on the CPU, and says that its random
draws are no longer those of the uninterrupted run; the script's own checkpoints record their device."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import run_script  # noqa: E402
from cuda_kit import as_if_from_cuda  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core import generate  # noqa: E402

FLAGS = ["--batch", "2", "--device", "cpu", "--log-every", "1", "--json", "--optimizer", "adam"]


def _steps(stdout: str) -> list[int]:
    return [r["step"] for r in (json.loads(x) for x in stdout.splitlines() if x.startswith("{")) if r["kind"] == "step"]


def test_the_script_resumes_a_cuda_checkpoint_on_the_cpu_and_says_so(tmp_path: Path) -> None:
    graph = generate.revnet_chain(1, channels=4, size=4, wired=False)
    graph.training = {"version": 2, "optimizer": "adam"}
    path = tmp_path / "t.py"
    path.write_text(export(graph, with_training=True), encoding="utf-8")
    first = run_script(path, ["--steps", "2", *FLAGS, "--out", "run.pt"], tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    assert torch.load(tmp_path / "run.pt", weights_only=True)["device"] == "cpu"
    as_if_from_cuda(tmp_path / "run.pt")
    resumed = run_script(path, ["--steps", "3", *FLAGS, "--resume", "run.pt", "--out", "run.pt"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _steps(resumed.stdout) == [3]
    assert "note: the run trained on cuda:0 before and goes on on cpu" in resumed.stderr
    assert "CUDA random state cannot be restored on cpu" in resumed.stderr
    again = torch.load(tmp_path / "run.pt", weights_only=True)  # (written here: a plain CPU file again)
    assert again["step"] == 3 and again["device"] == "cpu"

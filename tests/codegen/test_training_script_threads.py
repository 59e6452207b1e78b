"""The exported training script's ``--threads N`` (the project's ``training.threads``): set before any work,
recorded in its checkpoint as revstudio's are, said on a resume that changes it, refused below 1."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import run_script  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core import generate  # noqa: E402

FLAGS = ["--batch", "2", "--device", "cpu", "--log-every", "1", "--json"]


def _losses(stdout: str) -> list[float]:
    return [r["loss"] for r in (json.loads(x) for x in stdout.splitlines() if x.startswith("{"))
            if r["kind"] == "step"]


def test_the_script_honours_threads_and_a_resume_on_another_count_says_so(tmp_path: Path) -> None:
    graph = generate.revnet_chain(1, channels=4, size=4, wired=False)
    graph.training = {"version": 2, "threads": 2}  # the project's setting: the script's default
    path = tmp_path / "t.py"
    path.write_text(export(graph, with_training=True), encoding="utf-8")
    runs = {}
    for name, more in (("default", []), ("one", ["--threads", "1"]), ("again", ["--threads", "1"])):
        proc = run_script(path, ["--steps", "3", *FLAGS, "--out", f"{name}.pt", *more], tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs[name] = (_losses(proc.stdout), torch.load(tmp_path / f"{name}.pt", weights_only=True))
    # the child starts with OMP_NUM_THREADS=1: the count the checkpoint records is the one set
    assert runs["default"][1]["threads"] == 2 and runs["one"][1]["threads"] == runs["again"][1]["threads"] == 1
    assert runs["one"][0] == runs["again"][0] and len(runs["one"][0]) == 3
    resumed = run_script(path, ["--steps", "4", *FLAGS, "--resume", "default.pt", "--out", "default.pt",
                                "--threads", "1"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "note: the run trained on 2 CPU threads before and goes on with 1" in resumed.stderr
    refused = run_script(path, ["--steps", "1", *FLAGS, "--threads", "0"], tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--threads 0 is out of range; use from 1 to 1024 CPU threads" in refused.stderr

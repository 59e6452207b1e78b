"""Helpers of the training tests: example projects, checked, with small synthetic data.

A plain module, not conftest.py: a test that imports ``conftest`` gets whichever
conftest pytest loaded last, which is another folder's when several are collected.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "resources" / "examples").glob("*.revs"))


def prepared(path: str | os.PathLike[str], **overrides: Any) -> tuple[Any, Any, Any, Any]:
    """(graph, report, config, data) for a project, as the CLI would prepare them."""
    from revstudio.core.project import load
    from revstudio.diagnostics.check import full_check
    from revstudio.training.config import TrainConfig
    from revstudio.training.data import load_data
    from revstudio.training.task import infer_task

    graph = load(path)
    cfg = TrainConfig.from_section(graph.training).replace(**overrides)
    report = full_check(graph, batch=cfg.batch_size)
    task = infer_task(graph, report, cfg.task)
    data = load_data(cfg.data, graph, report, task=task, val_spec=cfg.val_data, val_fraction=cfg.val_fraction,
                     seed=cfg.seed, base_dir=os.path.dirname(os.fspath(path)), scale_uint8=cfg.scale_uint8)
    return graph, report, cfg, data


class Rows:
    """A callback keeping every row."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def on_row(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def __getattr__(self, name: str) -> Any:  # the specific hooks: nothing to do
        if name.startswith("on_"):
            return lambda row: None
        raise AttributeError(name)

    def kind(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["kind"] == kind]

    def event(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("event") == name]


def linear_classifier(features: int = 4, classes: int = 3) -> Any:
    """Graph ``clf``: Input ``img`` (``features``) -> Linear ``fc`` (``classes``) -> Output ``y``."""
    from revstudio.core.graph import Graph

    g = Graph("clf")
    g.add_node("Input", "img", {"shape": [features]})
    g.add_node("Linear", "fc", {"out_features": classes})
    g.add_node("Output", "y")
    g.connect("img.out", "fc.in")
    g.connect("fc.out", "y.in")
    return g


def checked_inputs(monkeypatch: Any) -> list[Any]:
    """The inputs each ``gradcheck.compare_modes`` call gets from now on (None: its own
    standard-normal batch)."""
    import revstudio.diagnostics.gradcheck as gradcheck

    seen: list[Any] = []
    real = gradcheck.compare_modes

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("inputs"))
        return real(*args, **kwargs)

    monkeypatch.setattr(gradcheck, "compare_modes", spy)
    return seen


def train_start(path: str, flags: list[str], monkeypatch: Any, capsys: Any) -> tuple[Any, dict[str, Any]]:
    """(the inputs ``revstudio train PATH --steps 1 --json FLAGS`` feeds its first step, its ``started``
    row), the run in a folder of its own beside the project (``run0``, ``run1``, ...)."""
    import json

    from revstudio import cli
    from revstudio.training import loop

    fed: list[Any] = []
    real = loop._to_device

    def spy(batch: Any, order: Any, device: Any) -> Any:
        fed.append(batch[0]["x"].clone())
        return real(batch, order, device)

    monkeypatch.setattr(loop, "_to_device", spy)
    out = Path(path).parent / f"run{len(list(Path(path).parent.glob('run*')))}"
    assert cli.main(["train", path, "--steps", "1", "--out", str(out), "--json", *flags]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    monkeypatch.setattr(loop, "_to_device", real)
    return fed[0], next(r for r in rows if r.get("event") == "started")


def data_md_example_rows(title: str, folder: Path, monkeypatch: Any, capsys: Any, log_every: int,
                         val_every: int) -> list[dict[str, Any]]:
    """Run docs/data.md's section ``title`` as written, in ``folder``: its one Python block (which writes
    the data and project) and its one ``revstudio train`` command, made quick (no gradient check or
    memory rows) and given ``--json``; the rows it printed."""
    import json
    import re
    import shlex

    from revstudio import cli

    section = (ROOT / "docs" / "data.md").read_text(encoding="utf-8").split(f"## {title}")[1].split("\n## ")[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    (command,) = re.findall(r"```sh\n(.*?)\n```", section, re.S)
    monkeypatch.chdir(folder)
    exec(compile(code, "docs/data.md", "exec"), {})  # noqa: S102
    argv = shlex.split(command)
    assert argv[:2] == ["revstudio", "train"]
    quick = ["--log-every", str(log_every), "--val-every", str(val_every), "--gradcheck-every", "0",
             "--memory-every", "0", "--device", "cpu", "--out", str(folder / "run"), "--json"]
    assert cli.main([*argv[1:], *quick]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def linear_regression(training: dict[str, Any]) -> Any:
    """Input ``x`` (4 features) -> Linear ``fc`` (3) -> Output ``y``, a regression project with the
    ``training`` section given: the smallest network a run, its checkpoints and evaluations can be read on."""
    from revstudio.core.graph import Graph

    g = Graph("reg")
    g.add_node("Input", "x", {"shape": [4]})
    g.add_node("Linear", "fc", {"out_features": 3})
    g.add_node("Output", "y")
    g.connect("x.out", "fc.in")
    g.connect("fc.out", "y.in")
    g.training = training
    return g


# train's flags for a quick CPU run that validates every 5 steps and measures nothing else
VALIDATING = ["--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0", "--batch-size", "16",
              "--val-every", "5"]


def regression_project(here: Path) -> Path:
    """``here/reg.revs`` (``linear_regression``) with 80 samples of a learnable linear task in
    ``here/reg.npz``: the early-stopping tests' project. Returns the project's path."""
    import numpy as np

    from revstudio.core.project import save

    rng = np.random.default_rng(0)
    x = rng.standard_normal((80, 4)).astype(np.float32)
    np.savez(here / "reg.npz", x=x, y=(x[:, :3] * 2 + 0.5).astype(np.float32))
    save(linear_regression({"task": "regression", "data": "reg.npz"}), here / "reg.revs")
    return here / "reg.revs"


# ``--nproc 2`` runs (test_ddp.py, test_ddp_ranks.py): train's flags for 4 quick reversible steps, logged
# as JSON rows, and a project with a BatchNorm (per-rank running statistics)
DDP_ARGS = ["--steps", "4", "--batch-size", "8", "--lr", "0.01", "--log-every", "1", "--val-every", "0",
            "--device", "cpu", "--json", "--mode", "reversible"]

BATCHNORM_PROJECT = {
    "format": "revstudio", "version": 1, "name": "bn",
    "nodes": [{"id": "x", "type": "Input", "params": {"shape": [2, 4, 4]}},
              {"id": "n", "type": "Norm", "params": {"kind": "batch"}},
              {"id": "h", "type": "Linear", "params": {"out_features": 3}},
              {"id": "y", "type": "Output", "params": {}}],
    "edges": [["x.out", "n.in"], ["n.out", "h.in"], ["h.out", "y.in"]],
    "groups": {}, "training": {}, "view": {},
}


def two_processes(args: list[str], cwd: Any) -> Any:
    """``revstudio train ARGS --nproc 2`` in a child (its launcher and two workers), finished."""
    import subprocess
    import sys

    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-P", "-m", "revstudio", "train", *args, "--nproc", "2"],
                          capture_output=True, text=True, env=env, cwd=str(cwd), timeout=600)

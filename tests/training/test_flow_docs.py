"""docs/data.md's "Likelihoods and samples from a trained flow" runs as written: its train command
on a shipped example, then its Python on that run's folder (it named a run no user has)."""
from __future__ import annotations

import math
import re
import shlex

import pytest
from training_kit import ROOT

from revstudio import cli

SECTION = (ROOT / "docs" / "data.md").read_text(encoding="utf-8").split("## Likelihoods and samples")[1]


def test_the_flow_likelihood_example_runs_on_the_run_its_command_trains(tmp_path, monkeypatch):
    (command,) = re.findall(r"```sh\n(.*?)\n```", SECTION, re.S)
    (code,) = re.findall(r"```python\n(.*?)```", SECTION, re.S)
    argv = shlex.split(command)
    assert argv[:2] == ["revstudio", "train"] and "--out" in argv
    folder = argv[argv.index("--out") + 1]
    assert f'run = "{folder}"' in code  # the Python reads the folder the command wrote
    out = tmp_path / "run"
    argv[argv.index("--out") + 1] = str(out)
    monkeypatch.chdir(ROOT)  # the docs' paths start at a checkout's root
    quick = ["--steps", "2", "--log-every", "1", "--val-every", "0", "--gradcheck-every", "0", "--memory-every", "0"]
    assert cli.main([*argv[1:], *quick]) == 0
    scope: dict = {}
    exec(compile(code.replace(f'"{folder}"', repr(str(out))), "docs/data.md", "exec"), scope)  # noqa: S102
    assert scope["samples"].shape == scope["x"].shape
    assert all(math.isfinite(v) for v in scope["bits_per_dim"].tolist())
    per_layer = scope["per_layer"]  # the flow layers' shares, which add up to the model's
    assert set(per_layer) == {f"{kind}{i}" for kind in ("actnorm", "invconv", "coupling") for i in (0, 1)}
    assert sum(per_layer.values()) == pytest.approx(float(scope["model"].logdet.mean()), rel=1e-5, abs=1e-4)
    assert scope["round_trip"] < 1e-4

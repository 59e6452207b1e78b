"""A finished `revstudio train` says how its network and weights go into one's own code, and
what it says works: the run directory's model.py with checkpoints/last.pt gives the run's model
(the run's outputs only told the folder; which file held what was in docs/cli.md alone)."""
from __future__ import annotations

import importlib.util
import re

import torch
from cuda_kit import as_if_from_cuda
from training_kit import EXAMPLES

from revstudio import cli
from revstudio.compiler.module import compile as compile_graph
from revstudio.core.project import load

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))


def test_the_finished_run_says_how_to_load_it_and_that_recipe_gives_the_runs_model(tmp_path, capsys,
                                                                                    monkeypatch) -> None:
    run = tmp_path / "run"
    assert cli.main(["train", EXAMPLE, "--steps", "2", "--batch-size", "8", "--device", "cpu",
                     "--out", str(run)]) == 0
    out = capsys.readouterr().out
    (line,) = [s for s in out.splitlines() if s.startswith("use it: ")]
    assert "model.py" in line and "from model import Model" in line, line
    recipe = re.search(r"model = Model\(\); (model\.load_state_dict\(.*\))$", line)
    assert recipe is not None, line
    as_if_from_cuda(run)  # (the recipe holds on a laptop given a run trained on a GPU machine)

    spec = importlib.util.spec_from_file_location("run_model", run / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.chdir(run)  # (the recipe's path is the run directory's)
    scope = {"torch": torch, "model": module.Model()}
    exec(recipe.group(1), scope)  # noqa: S102 - the line the run printed
    exported = scope["model"].eval()

    reference = compile_graph(load(str(run / "project.revs")), device="cpu")
    reference.load_state_dict(torch.load(run / "checkpoints" / "last.pt", map_location="cpu",
                                         weights_only=True)["model"])
    reference.eval()
    x = torch.randn(5, 3, 16, 16)
    with torch.no_grad():
        assert torch.equal(exported(x), reference(x))


def test_the_finished_run_says_how_to_ship_it_and_that_command_writes_the_code_and_its_weights(
        tmp_path, capsys, monkeypatch) -> None:
    """`ship it: revstudio export RUN -o model.py`: the run's code with its weights alone, model.pt."""
    import shlex

    run = tmp_path / "my run"
    assert cli.main(["train", EXAMPLE, "--steps", "2", "--batch-size", "8", "--device", "cpu",
                     "--out", str(run)]) == 0
    (line,) = [s for s in capsys.readouterr().out.splitlines() if s.startswith("ship it: ")]
    command = re.search(r"^ship it: revstudio (export .* -o model\.py) writes", line)
    assert command is not None, line
    monkeypatch.chdir(tmp_path)
    assert cli.main(shlex.split(command.group(1))) == 0
    shipped = torch.load(tmp_path / "model.pt", weights_only=True)
    trained = torch.load(run / "checkpoints" / "last.pt", weights_only=True)["model"]
    assert sorted(shipped) == sorted(trained) and all(torch.equal(shipped[k], trained[k]) for k in trained)
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == (run / "model.py").read_text(encoding="utf-8")


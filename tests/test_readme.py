"""The README stays true: its first two commands and its Python example."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_starts_with_the_two_fresh_machine_commands() -> None:
    first = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first is not None and README.index(first.group(0)) < README.index("revstudio is")
    commands = [line.split("#")[0].strip() for line in first.group(1).splitlines() if line.strip()]
    assert commands == ["make run", "make test"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci


def test_the_python_example_runs() -> None:
    pytest.importorskip("torch")
    (code,) = re.findall(r"```python\n(.*?)```", README, re.S)
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        scope: dict = {}
        exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the project's own example
    finally:
        os.chdir(here)
    assert scope["sample"].shape == scope["x"].shape
    assert "class Model(nn.Module):" in scope["source"]


def test_every_make_target_and_test_path_the_readme_names_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    named = set(re.findall(r"\bmake ([a-z][\w-]*)", README))
    assert named and not named - targets, f"the README names make targets the Makefile lacks: {named - targets}"
    paths = set(re.findall(r"`(tests/[\w/.]+)`", README))
    assert paths and not [p for p in paths if not (ROOT / p).exists()]


def test_what_the_readme_says_a_hook_on_a_node_layer_sees() -> None:
    """A hook written for torch's Conv2d (``output.detach()``) failed on the tuple a node's
    layer returns; the README says so, and this is what it says."""
    torch = pytest.importorskip("torch")
    import revstudio as rs
    from revstudio.core.examples import example_projects

    assert "a forward\nhook's `output` is `(y,)`, so keep `output[0]`" in README
    model = rs.compile(example_projects()["revnet_coupling"], device="cpu")
    seen: list = []
    layer = dict(model.named_modules())["blocks.blocks.0.coupling.f.f_conv1"]
    model.stem.register_forward_hook(lambda mod, args, output: seen.append(output))
    layer.register_forward_hook(lambda mod, args, output: seen.append(output))
    model(torch.randn(2, *model.plan.inputs[0].shape))
    assert [type(o) for o in seen] == [tuple, tuple] and all(isinstance(o[0], torch.Tensor) for o in seen)
    assert repr(model.stem).startswith("Conv2d(")


def test_the_command_line_block_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Each ``revstudio ...`` line of "From the command line" exits 0 from a checkout's root (a copy of
    its resources, so the run folder and model.py land there); train runs 2 steps, not 400."""
    pytest.importorskip("torch")
    import shlex
    import shutil

    from revstudio.cli import main

    block = re.search(r"## From the command line\n\n```sh\n(.*?)```", README, re.S)
    assert block is not None
    commands = [shlex.split(line.split("#")[0]) for line in block.group(1).splitlines() if line.strip()]
    assert [c[:2] for c in commands] == [["revstudio", n] for n in ("check", "gradcheck", "memory", "export",
                                                                     "train", "runs")]
    shutil.copytree(ROOT / "resources" / "examples", tmp_path / "resources" / "examples")
    shutil.copytree(ROOT / "resources" / "data", tmp_path / "resources" / "data")
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        extra = ["--steps", "2"] if argv[1] == "train" else []
        assert main(argv[1:] + extra) == 0, (argv, capsys.readouterr())
    out = capsys.readouterr().out
    assert (tmp_path / "model.py").is_file() and re.search(r"finished +2/2", out)
    # the line for an install away from a checkout names an example the same way
    assert '`revstudio check "$(revstudio examples revnet_wired)"`' in README
    assert main(["examples", "revnet_wired"]) == 0
    assert main(["check", capsys.readouterr().out.strip()]) == 0

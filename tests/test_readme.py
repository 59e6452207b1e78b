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

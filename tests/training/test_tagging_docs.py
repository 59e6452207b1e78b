"""docs/data.md's "Class labels per step" example runs as written: its Python writes a padded tagging
set and project, its train command trains them, and the per-step accuracy the run reports (over the
scored steps only) rises well above chance."""
from __future__ import annotations

import json
import re
import shlex

from training_kit import ROOT

from revstudio import cli

SECTION = (ROOT / "docs" / "data.md").read_text(encoding="utf-8").split("## Class labels per step")[1].split("\n## ")[0]


def test_the_tagging_example_writes_data_that_its_command_trains(tmp_path, monkeypatch, capsys):
    (code,) = re.findall(r"```python\n(.*?)```", SECTION, re.S)
    (command,) = re.findall(r"```sh\n(.*?)\n```", SECTION, re.S)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/data.md", "exec"), {})  # noqa: S102
    argv = shlex.split(command)
    assert argv[:2] == ["revstudio", "train"]
    quick = ["--log-every", "50", "--val-every", "0", "--gradcheck-every", "0", "--memory-every", "0",
             "--device", "cpu", "--out", str(tmp_path / "run"), "--json"]
    assert cli.main([*argv[1:], *quick]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    started = next(r for r in rows if r.get("event") == "started")
    assert "a class per step" in started["inputs"] and "'lengths' and labels of -100 mark the rest" in started["inputs"]
    val = [r for r in rows if r["kind"] == "val"][-1]
    assert val["val_accuracy"] > 0.9 and 0 < val["val_steps_scored"] < 26 * 20

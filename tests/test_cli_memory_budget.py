"""``revstudio memory FILE --budget``: which regions the budget keeps, and the measured check."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from revstudio.cli import main  # noqa: E402
from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.core.project import save  # noqa: E402


def _project(tmp_path):
    path = tmp_path / "net.revs"
    save(revnet_chain(3, channels=4, size=8), path)
    return str(path)


def test_json_names_the_kept_regions_and_measures_them(tmp_path, capsys):
    path = _project(tmp_path)
    assert main(["memory", path, "--batch", "4", "--budget", "64MiB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    budget = out["budget"]
    assert set(out["modes"]) == {"standard", "reversible", "checkpoint"}
    assert budget["budget_bytes"] == 64 << 20 and budget["kept_regions"] == [budget["regions"][0]["region"]]
    assert budget["regions"][0]["state"] == "kept" and budget["within_budget"] is True
    assert budget["measured"]["kept_bytes"] > out["modes"]["reversible"]["kept_bytes"]


def test_text_and_a_small_budget(tmp_path, capsys):
    path = _project(tmp_path)
    assert main(["memory", path, "--batch", "4", "--budget", "0"]) == 0
    text = capsys.readouterr().out
    assert "memory budget 0 B" in text and ": reversible, first 0 of" in text and "within the budget" in text


def test_a_bad_budget_is_a_usage_error(tmp_path, capsys):
    path = _project(tmp_path)
    assert main(["memory", path, "--budget", "lots"]) == 2
    assert "64MiB" in capsys.readouterr().err

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
    # everything kept: the estimate is standard mode's, and so is the measured peak
    assert budget["estimate_peak_bytes"] == out["estimate"]["modes"]["standard"]["peak_bytes"]
    assert budget["measured"]["peak_bytes"] == out["modes"]["standard"]["peak_bytes"]


def test_text_and_a_small_budget(tmp_path, capsys):
    path = _project(tmp_path)
    assert main(["memory", path, "--batch", "4", "--budget", "0"]) == 0
    text = capsys.readouterr().out
    assert "memory budget 0 B" in text and ": reversible, first 0 of" in text and "within the budget" in text
    assert "measured: peak " in text and " (estimate " in text
    assert "every region runs reversibly" in text
    assert main(["memory", path, "--batch", "4", "--budget", "1GiB", "--repeat", "1"]) == 0
    assert "every region runs as in standard mode" in capsys.readouterr().out


def test_a_budget_that_keeps_nothing_does_not_take_the_blame(tmp_path, capsys):
    """The BiRNN example peaks above standard mode in reversible mode itself: with a budget that
    keeps nothing the note says so, rather than blaming kept steps there are none of."""
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "resources" / "examples" / "birnn_sequence.revs"
    assert main(["memory", str(example), "--batch", "8", "--budget", "0", "--repeat", "1"]) == 0
    text = capsys.readouterr().out
    assert "the budget keeps nothing here, and reversible mode's own peak is above standard mode's" in text
    assert "the kept steps are alive" not in text


def test_a_bad_budget_is_a_usage_error(tmp_path, capsys):
    path = _project(tmp_path)
    assert main(["memory", path, "--budget", "lots"]) == 2
    assert "64MiB" in capsys.readouterr().err


@pytest.mark.parametrize("budget", ["4KiB", "8KiB"])
def test_a_budget_whose_peak_is_above_standard_modes_says_so(tmp_path, capsys, budget):
    """Keeping a region's first steps keeps them alive while the rest rebuilds: on a shallow
    net the peak can pass standard mode's, and then standard mode is the better choice."""
    path = _project(tmp_path)
    assert main(["memory", path, "--batch", "4", "--budget", budget, "--json", "--repeat", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    above = out["budget"]["measured"]["peak_bytes"] > out["modes"]["standard"]["peak_bytes"]
    assert out["budget"]["peak_above_standard"] is above
    assert above is (budget == "8KiB")  # 4 KiB keeps nothing; 8 KiB keeps two couplings of three blocks
    assert main(["memory", path, "--batch", "4", "--budget", budget, "--repeat", "1"]) == 0
    assert ("standard mode is smaller and faster here" in capsys.readouterr().out) is above


def test_check_shows_the_projects_own_budget(tmp_path, capsys):
    """`check` says what the project's training.memory_budget keeps, as the canvas badges do."""
    graph = revnet_chain(3, channels=4, size=8)
    graph.training = {"version": 1, "memory_budget": "8KiB", "batch_size": 4}
    path = tmp_path / "budgeted.revs"
    save(graph, path)
    assert main(["check", str(path), "--batch", "4"]) == 0
    text = capsys.readouterr().out
    assert "memory budget 8.0 KiB (training.memory_budget): at batch 4 keeps" in text and "estimated peak" in text
    assert main(["check", str(path), "--batch", "4", "--json"]) == 0
    budget = json.loads(capsys.readouterr().out)["budget"]
    assert budget["budget_bytes"] == 8 << 10 and budget["batch"] == 4 and budget["regions"][0]["kept_steps"] > 0
    assert budget["estimate_peak_bytes"] > 0 and budget["used"] is True
    # the other modes do not use it, and check says so instead of what it would keep
    graph.training = {**graph.training, "mode": "checkpoint"}
    save(graph, path)
    assert main(["check", str(path), "--batch", "4"]) == 0
    text = capsys.readouterr().out
    assert "memory budget 8.0 KiB (training.memory_budget): unused in checkpoint mode (training.mode)" in text
    assert "keeps" not in text.split("memory budget")[1]
    assert main(["check", str(path), "--batch", "4", "--json"]) == 0
    budget = json.loads(capsys.readouterr().out)["budget"]
    assert budget["used"] is False and budget["mode"] == "checkpoint"
    graph.training = {**graph.training, "mode": "bogus"}  # train refuses the mode; check reads the budget
    save(graph, path)
    assert main(["check", str(path), "--batch", "4"]) == 0
    assert "unused in bogus mode" not in capsys.readouterr().out
    # a value train refuses is shown with the config's own message, not dropped without a word
    for bad in (True, 1.5, "lots", -1):
        graph.training = {"version": 1, "memory_budget": bad, "batch_size": 4}
        save(graph, path)
        assert main(["check", str(path), "--batch", "4"]) == 0
        text = capsys.readouterr().out
        assert "memory budget: training.memory_budget:" in text and "train refuses it" in text, bad
        assert main(["check", str(path), "--batch", "4", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["budget"]["error"].startswith("training.memory_budget")
    assert main(["check", _project(tmp_path)]) == 0  # no budget: no line
    assert "memory budget" not in capsys.readouterr().out

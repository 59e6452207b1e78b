"""``--with-training``: the exported script tells a run that is not learning as ``revstudio train`` does.

The script copied the divergence watch but not revstudio.training.learning's: a run on labels
shuffled against their inputs trained to its end and said nothing. It now copies the rule
verbatim (``LearningWatch``, ``check_step`` and the words), warns once when it looks and again at
the end, keeps the watch in its checkpoint, says at the end of a run too short to be checked that
it was not, and stays quiet on an example at its own settings.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import run_script  # noqa: E402

from revstudio import cli  # noqa: E402
from revstudio.codegen import export  # noqa: E402
from revstudio.core.check import check  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.training import runs  # noqa: E402
from revstudio.training.data import load_data  # noqa: E402
from revstudio.training.task import infer_task  # noqa: E402

TWO_BRANCH = Path(__file__).resolve().parents[2] / "resources" / "examples" / "two_branch.revs"
QUIET = ["--val-every", "0", "--checkpoint-every", "0", "--log-every", "50", "--device", "cpu"]
SAMPLES = 3200  # 100 steps of 32: the check looks at step 100


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The exported script and a data file of two_branch's synthetic inputs with shuffled labels."""
    here = tmp_path_factory.mktemp("learning")
    graph = load(TWO_BRANCH)
    (here / "two_branch.py").write_text(export(graph, with_training=True), encoding="utf-8")
    report = check(graph)
    data = load_data("synthetic", graph, report, task=infer_task(graph, report)).train
    [x] = data.inputs.values()
    assert data.targets is not None
    order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(1))
    torch.save({"x": x[:SAMPLES], "y": data.targets[:SAMPLES][order]}, here / "shuffled.pt")
    return here


def test_a_shuffled_label_run_is_told_when_checked_and_at_the_end(folder: Path) -> None:
    proc = run_script(folder / "two_branch.py", ["--data", "shuffled.pt", "--val-fraction", "0", "--steps", "110",
                                                 *QUIET, "--out", "shuffled.ckpt"], folder)
    assert proc.returncode == 0, proc.stderr[-3000:]  # (the run goes on)
    told = [line for line in proc.stderr.splitlines() if line.startswith("warning: the run is not learning")]
    assert len(told) == 2 and told[0] == told[1], proc.stderr  # when it looks, and again at the end
    assert "after 100 steps" in told[0] and "targets belong to their inputs" in told[0] and "note:" not in proc.stderr
    kept = torch.load(folder / "shuffled.ckpt", weights_only=True)["learning"]
    assert kept["checked"] and kept["warned"]["step"] == 100 and sum(kept["labels"]) == 100 * 32  # (the labels up to the check)


def test_its_row_is_revstudio_trains_own(folder: Path, tmp_path: Path, capsys) -> None:
    args = ["--data", str(folder / "shuffled.pt"), "--val-fraction", "0", "--steps", "100", "--json", *QUIET]
    proc = run_script(folder / "two_branch.py", [*args, "--out", "json.ckpt"], folder)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [row] = [r for r in map(json.loads, proc.stdout.splitlines()) if r.get("event") == "not_learning"]
    assert cli.main(["train", str(TWO_BRANCH), *args, "--gradcheck-every", "0", "--memory-every", "0",
                     "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in (tmp_path / "run" / runs.METRICS).read_text().splitlines()]
    [theirs] = [r for r in rows if r.get("event") == "not_learning"]
    assert {k: row[k] for k in ("step", "loss", "start", "accuracy", "chance", "message")} == \
        {k: theirs[k] for k in ("step", "loss", "start", "accuracy", "chance", "message")}
    assert row["accuracy"] is not None and row["chance"] >= 0.25


def test_an_example_at_its_own_settings_is_never_told(folder: Path) -> None:
    proc = run_script(folder / "two_branch.py", ["--steps", "115", *QUIET, "--out", "ok.ckpt"], folder)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not learning" not in proc.stderr and "note:" not in proc.stderr, proc.stderr
    kept = torch.load(folder / "ok.ckpt", weights_only=True)["learning"]
    assert kept["checked"] and kept["warned"] is None


def test_a_run_too_short_to_check_says_so(folder: Path) -> None:
    proc = run_script(folder / "two_branch.py", ["--steps", "20", *QUIET, "--out", "short.ckpt"], folder)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "note: not checked whether the run learns: it ran 20 steps, and the check needs at least 100" \
        in proc.stderr, proc.stderr

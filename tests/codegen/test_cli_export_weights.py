"""`revstudio export RUN_DIR -o model.py` (or `export FILE --weights W`) ships a trained network: the
code and, beside it, `model.pt`, a plain state_dict `Model()` loads with `weights_only=True` on a
machine without revstudio. It was refused ("is a folder (a run directory)"), and the only way was
the run's whole checkpoint (optimizer, RNG states, data paths) and a `["model"]` one had to know."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import revstudio as rs  # noqa: E402
from revstudio.cli import main  # noqa: E402
from revstudio.training import checkpoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DIGITS = ROOT / "resources" / "examples" / "digits_revnet.revs"
GLOW = ROOT / "resources" / "examples" / "glow_flow.revs"
from codegen_harness import BLOCKER  # noqa: E402
from weights_kit import own_weights  # noqa: E402


def _run(tmp_path: Path, project: Path = DIGITS, with_checkpoint: bool = True) -> tuple[Path, dict]:
    """A run folder as `revstudio train` leaves it: the project snapshot, status and a checkpoint
    whose weights are not the fresh ones (so loading them is seen)."""
    run = tmp_path / "runs" / "digits"
    (run / "checkpoints").mkdir(parents=True)
    (run / "project.revs").write_text(project.read_text(encoding="utf-8"), encoding="utf-8")
    (run / "status.json").write_text('{"status": "finished"}', encoding="utf-8")
    state = own_weights(project, tmp_path / "drawn.pt", seed=3)
    os.remove(tmp_path / "drawn.pt")
    if with_checkpoint:
        checkpoint.save(str(run / "checkpoints" / "last.pt"),
                        {"step": 7, "model": state, "optimizer": {}, "rng": {}, "config": {"lr": 0.1}})
    return run, state


def test_a_run_folder_exports_its_code_and_its_trained_weights_that_load_without_revstudio(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, state = _run(tmp_path)
    out = tmp_path / "ship" / "digits.py"
    out.parent.mkdir()
    assert main(["export", str(run), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    weights = out.with_suffix(".pt")
    assert f"wrote {weights}: the trained weights of {run}" in said, said
    assert "from digits import Model; model = Model(); model.load_state_dict(torch.load('digits.pt', " \
           "weights_only=True)); model.eval()" in said, said
    header = out.read_text(encoding="utf-8").split('"""')[1]  # (the file's own recipe says so too)
    assert '# model.load_state_dict(torch.load("THIS_FILE.pt", weights_only=True))' in header, header
    saved = torch.load(weights, weights_only=True)
    assert sorted(saved) == sorted(state) and all(torch.equal(saved[k], state[k]) for k in state)

    x = torch.rand(5, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    compiled = rs.compile(rs.load(str(DIGITS)), device="cpu")
    compiled.load_state_dict(state)
    compiled.eval()
    with torch.no_grad():
        expected = compiled(x)
    torch.save(x, tmp_path / "x.pt")
    child = BLOCKER + (
        "import torch\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from digits import Model\n"
        "model = Model(); model.load_state_dict(torch.load(sys.argv[2], weights_only=True)); model.eval()\n"
        "with torch.no_grad():\n"
        "    torch.save(model(torch.load(sys.argv[3], weights_only=True)), sys.argv[4])\n")
    done = subprocess.run([sys.executable, "-c", child, str(out.parent), str(weights), str(tmp_path / "x.pt"),
                           str(tmp_path / "y.pt")], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert torch.equal(torch.load(tmp_path / "y.pt", weights_only=True), expected)


def test_weights_given_to_a_project_go_beside_the_code_and_json_names_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, state = _run(tmp_path)
    out = tmp_path / "m.py"
    assert main(["export", str(DIGITS), "--weights", str(run / "checkpoints" / "last.pt"), "-o", str(out),
                 "--json"]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["weights"] == str(tmp_path / "m.pt")
    assert reply["weights_from"] == str(run / "checkpoints" / "last.pt")
    saved = torch.load(tmp_path / "m.pt", weights_only=True)
    assert all(torch.equal(saved[k], state[k]) for k in state)
    torch.save(state, tmp_path / "plain.pt")  # a bare state_dict is taken too
    assert main(["export", str(DIGITS), "--weights", str(tmp_path / "plain.pt"), "-o", str(tmp_path / "n.py")]) == 0
    assert (tmp_path / "n.pt").is_file()
    assert main(["export", str(DIGITS), "-o", str(tmp_path / "bare.py"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["weights"] is None
    assert not (tmp_path / "bare.pt").exists()


def test_weights_of_another_network_are_refused_naming_the_keys_and_nothing_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, _ = _run(tmp_path, project=GLOW)
    out = tmp_path / "m.py"
    assert main(["export", str(DIGITS), "--weights", str(run), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--weights {run}: the weights do not fit the graph of {DIGITS}" in err, err
    assert "missing from it: block0_f_conv1.bias" in err and "not in the graph: actnorm0.bias" in err, err
    assert "nothing was written" in err and "Traceback" not in err
    assert not out.exists() and not (tmp_path / "m.pt").exists()


def test_a_run_without_a_checkpoint_says_so_and_how_to_export_its_project_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, _ = _run(tmp_path, with_checkpoint=False)
    assert main(["export", str(run), "-o", str(tmp_path / "m.py")]) == 2
    err = capsys.readouterr().err
    assert f"{run}: this run has saved no checkpoint yet, so it has no trained weights to export" in err, err
    assert f"revstudio export {run / 'project.revs'} -o" in err, err
    assert not (tmp_path / "m.py").exists() and not (tmp_path / "m.pt").exists()
    assert main(["export", str(run.parent), "-o", str(tmp_path / "m.py")]) == 2  # a folder of runs: no run
    assert f"{run.parent}: is a folder, not a project file; give the .revs file" in capsys.readouterr().err


def test_weights_that_would_overwrite_their_source_or_have_no_folder_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, _ = _run(tmp_path)
    last = run / "checkpoints" / "last.pt"
    before = last.read_bytes()
    assert main(["export", str(run), "-o", str(run / "checkpoints" / "last.py")]) == 2
    assert f"its weights would go to {last}, over the file they are read from" in capsys.readouterr().err
    assert last.read_bytes() == before and not (run / "checkpoints" / "last.py").exists()
    snapshot = (run / "project.revs").read_text(encoding="utf-8")
    assert main(["export", str(run), "-o", str(run / "project.revs")]) == 2
    assert "the output would overwrite the project it exports" in capsys.readouterr().err
    assert (run / "project.revs").read_text(encoding="utf-8") == snapshot and not (run / "project.revs.pt").exists()
    assert main(["export", str(run), "-o", "/dev/null"]) == 2
    assert "the trained weights are written beside the code, as NAME.pt" in capsys.readouterr().err


def test_a_code_write_that_fails_leaves_no_weights_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import revstudio.codegen as codegen

    def refuse(source: str, path: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(codegen, "write_source", refuse)
    run, _ = _run(tmp_path)
    assert main(["export", str(run), "-o", str(tmp_path / "m.py")]) == 2
    assert "cannot write (No space left on device)" in capsys.readouterr().err
    assert not (tmp_path / "m.pt").exists() and not (tmp_path / "m.py").exists()


@pytest.mark.parametrize("built", ["compiled", "exported"])
def test_a_checkpoint_given_whole_to_load_state_dict_says_where_its_weights_are(built: str, tmp_path: Path) -> None:
    """`Model().load_state_dict(torch.load("last.pt"))` listed every weight as missing and "format",
    "optimizer", ... as unexpected: a run's checkpoint and the exported model.pt differ by ["model"]."""
    run, state = _run(tmp_path)
    if built == "compiled":
        model = rs.compile(rs.load(str(DIGITS)), device="cpu")
    else:
        scope: dict = {}
        exec(compile(rs.export(rs.load(str(DIGITS))), "exported", "exec"), scope)  # noqa: S102
        model = scope["Model"]()
    whole = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    with pytest.raises(RuntimeError) as err:
        model.load_state_dict(whole)
    assert str(err.value).startswith("load_state_dict was given a revstudio training checkpoint (keys 'format', "
                                     "'version', "), err.value
    assert "its weights are under 'model'; load them with model.load_state_dict(checkpoint['model'])" in str(err.value)
    with pytest.raises(RuntimeError, match=r"given a training checkpoint .* under 'state_dict'"):
        model.load_state_dict({"epoch": 3, "state_dict": state})
    model.load_state_dict(whole["model"])
    assert all(torch.equal(model.state_dict()[k], state[k]) for k in state)


def test_weights_saved_before_a_node_was_renamed_ship_under_its_new_name(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The exported Model loads keys of a renamed node's old id; the weights file it is shipped with
    holds the new ones, as its own state_dict names them."""
    from revstudio.core.project import dumps

    run, state = _run(tmp_path)
    graph = rs.load(str(DIGITS))
    graph.rename_node("stem", "entry")
    graph.renamed["stem"] = "entry"
    (tmp_path / "renamed.revs").write_text(dumps(graph), encoding="utf-8")
    assert main(["export", str(tmp_path / "renamed.revs"), "--weights", str(run), "-o", str(tmp_path / "m.py")]) == 0
    saved = torch.load(tmp_path / "m.pt", weights_only=True)
    assert "stem.weight" not in saved and torch.equal(saved["entry.weight"], state["stem.weight"])

"""The exported training script's ``--init WEIGHTS``: a run from weights of one's own, as
``revstudio train --init`` starts it (the same first loss), refused in the same words."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import run_script  # noqa: E402
from weights_kit import own_weights  # noqa: E402

import revstudio as rs  # noqa: E402
from revstudio import cli  # noqa: E402
from revstudio.codegen import export  # noqa: E402
from revstudio.training.init_words import INIT_AND_RESUME, init_misfit, no_init_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_coupling.revs"
COMMON = ["--steps", "1", "--batch-size", "8", "--device", "cpu", "--optimizer", "sgd", "--lr", "1e-9",
          "--momentum", "0", "--val-every", "0", "--checkpoint-every", "0"]


def _first_loss(text: str) -> float:
    return next(r["loss"] for r in map(json.loads, (t for t in text.splitlines() if t.startswith("{")))
                if r.get("kind") == "step")


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "train_model.py"
    path.write_text(export(rs.load(str(EXAMPLE)), with_training=True), encoding="utf-8")
    return path


def test_the_script_starts_from_the_weights_with_revstudio_trains_first_loss(tmp_path: Path, capsys) -> None:
    torch.set_num_threads(1)
    mine = own_weights(EXAMPLE, tmp_path / "mine.pt", seed=321)
    script = _script(tmp_path)
    assert cli.main(["train", str(EXAMPLE), *COMMON, "--gradcheck-every", "0", "--memory-every", "0",
                     "--init", str(tmp_path / "mine.pt"), "--out", str(tmp_path / "run"), "--json"]) == 0
    ours = _first_loss(capsys.readouterr().out)
    theirs = run_script(script, [*COMMON, "--init", "mine.pt", "--json", "--out", "ck.pt"], tmp_path)
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert _first_loss(theirs.stdout) == ours
    fresh = run_script(script, [*COMMON, "--json", "--out", "fresh.pt"], tmp_path)
    assert fresh.returncode == 0 and _first_loss(fresh.stdout) != ours  # (the weights made the difference)
    trained = torch.load(tmp_path / "ck.pt", weights_only=True)["model"]
    assert all(torch.allclose(trained[k], mine[k], rtol=0, atol=1e-6) for k in mine)
    # a revstudio run folder (its last checkpoint) and the script's own checkpoint start it too
    for given in (str(tmp_path / "run"), "ck.pt"):
        again = run_script(script, [*COMMON, "--init", given, "--json", "--out", "again.pt"], tmp_path)
        assert again.returncode == 0, again.stderr[-3000:]


def test_the_script_refuses_weights_as_revstudio_train_does(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    own_weights(EXAMPLE, tmp_path / "foreign.pt", seed=321, rename=True)
    torch.save({"step": 3}, tmp_path / "other.pt")
    script = _script(tmp_path)
    for args, words in ((["--init", "foreign.pt"], [init_misfit("foreign.pt", "X").split("(X)")[0], "layers.0", "rs.load_weights"]),
                        (["--init", "nowhere.pt"], [no_init_file("nowhere.pt")]),
                        (["--init", "other.pt"], ["--init other.pt: not a checkpoint nor a state_dict"]),
                        (["--init", "foreign.pt", "--resume", "ck.pt"], [INIT_AND_RESUME])):
        done = run_script(script, [*COMMON, *args, "--out", "ck.pt"], tmp_path)
        assert done.returncode == 2 and all(w in done.stderr for w in words), done.stderr[-3000:]
        assert "Traceback" not in done.stderr and not (tmp_path / "ck.pt").exists()

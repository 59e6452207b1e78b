"""``revstudio train FILE --init WEIGHTS``: a new run that starts from weights of one's own (a
bare state_dict, as after rs.load_weights) or of another run, instead of fresh ones."""
from __future__ import annotations

import json

import torch
from training_kit import EXAMPLES
from weights_kit import own_weights

from revstudio import cli

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
QUICK = ["--batch-size", "8", "--device", "cpu", "--optimizer", "sgd", "--lr", "1e-9", "--momentum", "0",
         "--val-every", "0", "--gradcheck-every", "0", "--memory-every", "0", "--checkpoint-every", "0"]


def _trained(run) -> dict:
    return torch.load(run / "checkpoints" / "last.pt", weights_only=True)["model"]


def _started(text: str) -> dict:
    return next(r for r in map(json.loads, text.splitlines()) if r.get("event") == "started")


def test_a_run_starts_from_a_state_dict_of_ones_own(tmp_path, capsys) -> None:
    torch.set_num_threads(1)
    mine = own_weights(EXAMPLE, tmp_path / "mine.pt", seed=123)
    run = tmp_path / "run"
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--init", str(tmp_path / "mine.pt"),
                     "--out", str(run), "--json"]) == 0
    assert _started(capsys.readouterr().out)["init_from"] == str(tmp_path / "mine.pt")
    trained = _trained(run)
    assert all(torch.allclose(trained[k], mine[k], rtol=0, atol=1e-6) for k in mine)
    fresh = tmp_path / "fresh"
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--out", str(fresh), "--json"]) == 0
    assert _started(capsys.readouterr().out)["init_from"] is None
    assert not torch.allclose(_trained(fresh)["stem.weight"], mine["stem.weight"], rtol=0, atol=1e-3)
    again = tmp_path / "again"       # a run folder: its last checkpoint's weights, a new run
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--init", str(run), "--out", str(again)]) == 0
    assert torch.allclose(_trained(again)["stem.weight"], mine["stem.weight"], rtol=0, atol=1e-6)
    capsys.readouterr()
    assert cli.main(["runs", str(tmp_path), "--json"]) == 0  # what each run started from, as listed
    listed = {r["name"]: r["init_from"] for r in json.loads(capsys.readouterr().out)["runs"]}
    assert listed == {"run": str(tmp_path / "mine.pt"), "fresh": None, "again": str(run)}
    assert cli.main(["runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"run: started from weights {tmp_path / 'mine.pt'}\n" in out
    assert f"again: started from weights {run}\n" in out and "fresh: started" not in out


def test_weights_that_do_not_fit_or_are_not_weights_are_refused_leaving_no_run(tmp_path, capsys) -> None:
    torch.set_num_threads(1)
    mine = own_weights(EXAMPLE, tmp_path / "mine.pt", seed=123)
    torch.save({k.replace("blocks.blocks.", "layers."): v for k, v in mine.items()}, tmp_path / "foreign.pt")
    torch.save({"model": mine}, tmp_path / "wrapped.pt")
    cases = [(tmp_path / "foreign.pt", ["the weights do not fit the run's graph", "layers.0.coupling",
                                        "rs.load_weights"]),
             (tmp_path / "wrapped.pt", ["not a revstudio checkpoint", "nor a state_dict"]),
             (tmp_path / "nowhere.pt", ["no such file or folder"])]
    for i, (path, words) in enumerate(cases):
        run = tmp_path / f"run{i}"
        assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--init", str(path), "--out", str(run)]) == 2
        err = capsys.readouterr().err
        assert f"--init {path}" in err and all(w in err for w in words), err
        assert "Traceback" not in err and not run.exists()


def test_init_and_resume_are_refused_together(tmp_path, capsys) -> None:
    own_weights(EXAMPLE, tmp_path / "mine.pt", seed=123)
    (tmp_path / "r").mkdir()
    assert cli.main(["train", "--resume", str(tmp_path / "r"), "--init", str(tmp_path / "mine.pt")]) == 2
    assert "--init starts a new run from given weights and --resume continues" in capsys.readouterr().err


def test_the_workers_of_a_distributed_run_get_the_same_weights(tmp_path) -> None:
    import argparse

    from revstudio.clicmd.train import add_arguments
    from revstudio.training.launch import worker_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args([EXAMPLE, "--init", "mine.pt", "--nproc", "2"])
    argv = worker_args(args, str(tmp_path / "out"))
    given = argv[argv.index("--init") + 1]
    assert given.endswith("mine.pt") and given != "mine.pt"  # (absolute: the workers start elsewhere)

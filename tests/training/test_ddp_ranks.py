"""``--nproc 2``: what each rank holds of its own (BatchNorm's running statistics, dropout's random
stream) and how the run treats it. Beside test_ddp.py so that make test's two processes share the
launches (pytest-xdist ``--dist loadfile`` gives a file to one process)."""
from __future__ import annotations

import json

import torch
from training_kit import BATCHNORM_PROJECT, DDP_ARGS, two_processes


def test_batchnorm_statistics_do_not_make_the_ranks_look_out_of_sync(tmp_path) -> None:
    """"ranks_in_sync" was false for every network with BatchNorm: each rank's last forward updates
    its own running statistics (DDP broadcasts rank 0's before the next forward), though the
    weights agreed bit for bit."""
    path = tmp_path / "bn.revs"
    path.write_text(json.dumps(BATCHNORM_PROJECT))
    two = two_processes([str(path), *DDP_ARGS, "--steps", "2", "--out", str(tmp_path / "two")], tmp_path)
    assert two.returncode == 0, two.stderr[-3000:]
    assert json.loads(two.stdout.splitlines()[-1])["ranks_in_sync"] is True


DROPOUT_PROJECT = {
    "format": "revstudio", "version": 1, "name": "drop",
    "nodes": [{"id": "x", "type": "Input", "params": {"shape": [8]}},
              {"id": "d", "type": "Dropout", "params": {"p": 0.5}},
              {"id": "h", "type": "Linear", "params": {"out_features": 3}},
              {"id": "y", "type": "Output", "params": {}}],
    "edges": [["x.out", "d.in"], ["d.out", "h.in"], ["h.out", "y.in"]],
    "groups": {}, "training": {}, "view": {},
}


def test_each_rank_draws_its_own_dropout_masks_and_a_resume_repeats_them(tmp_path) -> None:
    """Every rank drew from the run's one seeded stream, so all ranks dropped the same units of
    their different shards; the checkpoint held rank 0's state alone."""
    path = tmp_path / "drop.revs"
    path.write_text(json.dumps(DROPOUT_PROJECT))
    flags = [str(path), *DDP_ARGS, "--gradcheck-every", "0", "--memory-every", "0"]
    whole = two_processes([*flags, "--out", str(tmp_path / "whole")], tmp_path)
    assert whole.returncode == 0, whole.stderr[-3000:]
    saved = torch.load(tmp_path / "whole" / "checkpoints" / "last.pt", weights_only=True)
    ranks = saved["rng_ranks"]
    assert len(ranks) == 2 and torch.equal(ranks[0]["torch"], saved["rng"]["torch"])
    assert not torch.equal(ranks[0]["torch"], ranks[1]["torch"])  # each rank's own stream

    half = two_processes([*flags, "--steps", "2", "--out", str(tmp_path / "half")], tmp_path)
    assert half.returncode == 0, half.stderr[-3000:]
    rest = two_processes(["--resume", str(tmp_path / "half"), *DDP_ARGS], tmp_path)
    assert rest.returncode == 0, rest.stderr[-3000:]
    losses = lambda text: {r["step"]: r["loss"] for r in map(json.loads, text.splitlines())  # noqa: E731
                           if r["kind"] == "step"}
    assert {**losses(half.stdout), **losses(rest.stdout)} == losses(whole.stdout)  # bit for bit, every rank
    a = torch.load(tmp_path / "half" / "checkpoints" / "last.pt", weights_only=True)
    for key in saved["model"]:
        assert torch.equal(a["model"][key], saved["model"][key]), key

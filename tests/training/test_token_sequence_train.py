"""``revstudio train`` on data held as (time, features): the token_sequence example reorders each
sample's axes with a Permute of kind axes before its Conv and BiLSTM, so the .npz is used as
saved, N x steps x features, and the model learns from it in reversible mode."""
from __future__ import annotations

import json

import numpy as np
from training_kit import EXAMPLES

from revstudio import cli

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "token_sequence"))


def test_a_time_major_sample_trains_without_reshaping_the_data(tmp_path, capsys) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 32, 12)).astype(np.float32)  # N x time x features, as tokens are kept
    y = (x[:, :, 0].mean(axis=1) > 0).astype(np.int64) + 2 * (x[:, :, 1].mean(axis=1) > 0)
    np.savez(tmp_path / "tokens.npz", x=x, y=y)
    out = tmp_path / "run"
    code = cli.main(["train", EXAMPLE, "--data", str(tmp_path / "tokens.npz"), "--steps", "24",
                     "--batch-size", "16", "--lr", "0.01", "--device", "cpu", "--mode", "reversible",
                     "--log-every", "1", "--json", "--out", str(out)])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert code == 0, rows[-1]
    started = rows[0]
    assert started["mode"] == "reversible" and started["regions"] == ["region-block_split"]
    losses = [r["loss"] for r in rows if r["kind"] == "step"]
    assert len(losses) == 24 and all(np.isfinite(losses))
    assert np.mean(losses[-6:]) < np.mean(losses[:6]), losses
    assert rows[-1]["event"] == "finished"

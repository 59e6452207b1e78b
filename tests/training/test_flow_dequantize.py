"""A flow on 8-bit images (mnist:, cifar10:) trains on dequantised values and reports the bits
per dimension of the discrete data, which cannot be negative; other data are modelled as given."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from pixel_kit import actnorm_flow, mnist_folder
from training_kit import Rows

from revstudio.diagnostics.check import full_check
from revstudio.training.config import TrainConfig
from revstudio.training.data import load_data
from revstudio.training.loop import train
from revstudio.training.parts import noise_seed
from revstudio.training.task import infer_task


def flat_mnist(root: Path) -> Path:
    """Every pixel 200, training and validation: a continuous density on this one value
    alone would grow without bound."""
    return mnist_folder(root, np.full((16, 4, 4), 200), np.full((8, 4, 4), 200))


def test_a_flow_on_8bit_images_reports_the_discrete_bits_per_dimension(tmp_path: Path) -> None:
    graph = actnorm_flow()
    cfg = TrainConfig.from_section({}).replace(
        data=f"mnist:{flat_mnist(tmp_path / 'm')}", steps=4, batch_size=8, lr=1e-4, log_every=1, val_every=4,
        gradcheck_every=0, memory_every=0, checkpoint_every=0)
    report = full_check(graph, batch=8)
    task = infer_task(graph, report)
    data = load_data(cfg.data, graph, report, task=task, seed=cfg.seed)
    assert data.levels == 256 and "density (flow, 256-level pixels dequantised: bits/dim + 8)" in data.describe()
    rows = Rows()
    result = train(graph, report, cfg, data, callbacks=[rows])
    assert result.status == "finished", result.message
    losses = [r["loss"] for r in rows.kind("step")]
    val_loss = rows.kind("val")[-1]["val_loss"]
    # undequantised, the ActNorm fitted to constant pixels gave -18.6 bits per dimension
    assert all(0 < v < 30 for v in [*losses, val_loss]), (losses, val_loss)
    # the same figure in float64: (k + u) / 256 with the run's noise, -log2 p / D, plus 8 bits
    model = result.model.double().eval()
    k = (data.val.inputs["x"].double() * 255).round()
    gen = torch.Generator().manual_seed(noise_seed(cfg.seed, -1, 0))
    x = (k + torch.rand(k.shape, generator=gen, dtype=torch.float32).double()) / 256
    with torch.no_grad():
        z = model(x).flatten(1)
    dims = z.shape[1]
    log_p = -0.5 * z.pow(2).sum(1) - 0.5 * dims * math.log(2 * math.pi) + model.logdet.reshape(-1)
    assert val_loss == pytest.approx(float((-log_p / (dims * math.log(2))).mean()) + 8, rel=1e-5)

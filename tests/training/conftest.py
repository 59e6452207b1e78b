"""Shared setup of the training tests; their helpers are in training_kit.py."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)

"""Fixtures of the catalog tests; makes the helper modules next to this file importable.

The helpers live in plain modules (``catalog_kit``, ``catalog_cases``) because the
test parametrisation needs them at collection time, before fixtures exist.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).parent)
if HERE not in sys.path:  # also under --import-mode=importlib, which adds no test dirs
    sys.path.insert(0, HERE)

from catalog_cases import make_groups  # noqa: E402
from catalog_kit import NodeKit  # noqa: E402


@pytest.fixture
def kit() -> NodeKit:
    return NodeKit(make_groups())

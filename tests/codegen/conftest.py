"""Fixtures of the codegen tests: a harness that runs exports where revstudio cannot be imported."""
from __future__ import annotations

from pathlib import Path

import pytest
from codegen_harness import Harness


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


@pytest.fixture(scope="module")
def module_harness(tmp_path_factory: pytest.TempPathFactory) -> Harness:
    return Harness(tmp_path_factory.mktemp("standalone"))

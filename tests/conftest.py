"""Shared test setup: Qt runs offscreen, set before anything can import Qt."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


import logging  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _plugin_logger_as_found():
    """A CLI test run in this process leaves its stderr handler on ``revstudio.plugins`` with
    ``propagate`` off (right for the one-shot command), which would hide later plugin problems
    from an editor test's Log tab: each test gets the logger as the test before it found it."""
    logger = logging.getLogger("revstudio.plugins")
    handlers, propagate = list(logger.handlers), logger.propagate
    yield
    logger.handlers[:] = handlers
    logger.propagate = propagate

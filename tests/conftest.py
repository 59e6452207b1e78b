"""Shared test setup: Qt runs offscreen, set before anything can import Qt; OpenMP's idle threads
sleep, set before anything can import torch."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# torch's OpenMP threads spin on a core between parallel regions by default. A test that trains on 2
# threads (``--threads 2``, torchrun workers on 2 threads each, make test's processes without
# OMP_NUM_THREADS) spent most of its CPU spinning: 3 steps of two_branch on 2 threads took 1.4-2.0 s
# of CPU spinning and 0.3 s sleeping, on 2 cores that the other test process needs. The policy changes
# how an idle thread waits, never what a thread computes; the children the tests start inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# revstudio's data folder (core.app_data: runs of unsaved projects, the editor's recovery copies) is a
# fresh one for each test process and the children it starts, never the user's: a recovery copy that a
# crashed app left in ~/.local/share/revstudio made every test that opens a window ask "restore?" in a
# real modal box that nobody answers (the suite hung in tests/qt/test_small_screen.py), and a test's
# window wrote its own copies there. A test about the folder itself sets XDG_DATA_HOME or HOME again.
_TEST_DATA_HOME = tempfile.mkdtemp(prefix="revstudio-test-data-")
os.environ["XDG_DATA_HOME"] = _TEST_DATA_HOME
atexit.register(shutil.rmtree, _TEST_DATA_HOME, True)


import logging  # noqa: E402

import pytest  # noqa: E402

_PLUGIN_LOGGER = logging.getLogger("revstudio.plugins")
_PLUGIN_LOGGER_AT_START = (list(_PLUGIN_LOGGER.handlers), _PLUGIN_LOGGER.propagate)


def _plugin_logger_as_at_start() -> None:
    handlers, propagate = _PLUGIN_LOGGER_AT_START
    _PLUGIN_LOGGER.handlers[:] = handlers
    _PLUGIN_LOGGER.propagate = propagate


@pytest.fixture(autouse=True)
def _plugin_logger_as_found():
    """A CLI command run in this process leaves its stderr handler on ``revstudio.plugins`` with
    ``propagate`` off (right for the one-shot command; each command puts it back), which would hide
    later plugin problems from an editor test's Log tab. Each test starts and ends with the logger as
    the session found it: restoring what the test found was not enough, since a module fixture that
    runs a command (a trained run) does so before this fixture looks, and under ``pytest -n 2`` such a
    module ran before tests/qt/test_missing_plugin.py in the same process."""
    _plugin_logger_as_at_start()
    yield
    _plugin_logger_as_at_start()


@pytest.fixture
def one_torch_thread() -> None:
    """torch on one CPU thread, for a test module that runs the CLI's small models in this process
    (``pytestmark = pytest.mark.usefixtures("one_torch_thread")``): more threads only contend."""
    pytest.importorskip("torch").set_num_threads(1)


@pytest.fixture
def small_revnet(tmp_path):
    """A two-block RevNet chain (4 channels, 4 x 4), saved as ``small.revs`` in the test's folder: its path."""
    from revstudio.core.generate import revnet_chain
    from revstudio.core.project import save

    path = tmp_path / "small.revs"
    save(revnet_chain(2, channels=4, size=4), path)
    return path


@pytest.fixture
def git() -> str:
    """The git command. The suite runs from a clone (README: make test; .ci/run checks one out), so git is
    always there; a machine without it fails these tests with that said, never skips them."""
    import shutil

    found = shutil.which("git")
    assert found is not None, "the git command is missing: the tests run from a git clone (README: make test)"
    return found

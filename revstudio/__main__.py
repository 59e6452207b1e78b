import os
import signal
import sys
from typing import Any


class EarlyStop:
    """SIGINT/SIGTERM while a run is still loading (before its own stop handler is in: the
    app's Stop right after Train, a Ctrl-C): noted, not fatal. The run's handler, replacing
    this one, reads ``stop_signal`` and stops before its first step, as for a later signal."""

    def __init__(self) -> None:
        self.stop_signal: int | None = None

    def __call__(self, signum: int, _frame: Any) -> None:
        self.stop_signal = signum


if sys.argv[1:2] == ["train"]:
    _early = EarlyStop()
    for _sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_sig, _early)

from revstudio.cli import main  # noqa: E402 - after the handlers: this import takes a while

code = main()
if sys.argv[1:2] == ["train"]:
    # A training run has closed and fsynced everything it wrote by now; the interpreter's
    # teardown of torch's native libraries takes seconds on a loaded machine, and a stopped
    # run must exit within 2 s of SIGTERM (the app waits for it), so skip the teardown.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
sys.exit(code)

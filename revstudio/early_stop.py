"""SIGINT/SIGTERM while ``revstudio train`` still loads: noted, not fatal.

Loading torch and the project takes seconds, before the run's own stop handler
(``revstudio.training.session.StopFlag``) is in. A signal then (the app's Stop right after
Train, a Ctrl-C, ``timeout``, ``docker stop``) is noted here; the run's handler, replacing
this one, reads ``stop_signal`` and stops before its first step, as for a later signal. A
second signal while it still loads ends the process there (``interrupted``, exit 130).
Both ``python -m revstudio`` and the ``revstudio`` command install it (:func:`install_for`).
"""
from __future__ import annotations

import signal
from typing import Any


class EarlyStop:
    """A signal handler that only remembers the signal."""

    def __init__(self) -> None:
        self.stop_signal: int | None = None

    def __call__(self, signum: int, _frame: Any) -> None:
        if self.stop_signal is not None:  # a second one: stop now, as a second one during the run does
            raise KeyboardInterrupt
        self.stop_signal = signum


def install_for(args: list[str]) -> None:
    """For ``train`` (``args`` without the program name), SIGINT and SIGTERM from now on only
    note themselves; a handler installed earlier (``python -m revstudio``) is kept."""
    if args[:1] != ["train"]:
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        if isinstance(signal.getsignal(sig), EarlyStop):
            continue
        try:
            signal.signal(sig, EarlyStop())
        except (ValueError, OSError):  # not the main thread (an embedding): leave signals alone
            return

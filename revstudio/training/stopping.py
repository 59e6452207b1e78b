"""Stopping a ``revstudio train`` process: SIGINT/SIGTERM set a flag the loop reads between steps.

The first signal asks for a clean stop after the step in progress (a checkpoint, a ``stopped``
row, exit 0) and says so at once on stderr, since a step can take a minute. A second one stops
now: :class:`StopNow` unwinds the step, the session records the run as stopped at its last
checkpoint, and the process exits 130 (a notebook's ``cli.main`` gets the KeyboardInterrupt).
"""
from __future__ import annotations

import os
import signal
import sys
from typing import Any

from revstudio.cli import Interrupted, message_line

FIRST_SIGINT = "stopping after this step (Ctrl+C again to stop now, without a checkpoint)"
FIRST_SIGTERM = "stopping after this step (a second SIGTERM or Ctrl+C stops now, without a checkpoint)"


class StopNow(Interrupted):
    """A second SIGINT/SIGTERM: the run ends at once, its step unfinished."""


def forced_row(step: int, kept: bool, time: float = 0.0) -> dict[str, Any]:
    """The ``stopped`` row of a run a second signal stopped at once: at its last checkpoint's step
    (``kept``: there is one; the rows after it are lost work), one process or ``--nproc``."""
    return {"kind": "event", "event": "stopped", "time": time, "step": step,
            "checkpoint": os.path.join("checkpoints", "last.pt") if kept else None, "forced": True}


def forced_message(step: int, kept: bool) -> str:
    """status.json's message of such a run."""
    return (f"stopped at once by a second signal, the step after {step} unfinished; --resume continues from "
            f"the checkpoint at step {step}" if kept else
            "stopped at once by a second signal, before its first checkpoint: nothing to resume")


def _say(text: str) -> None:
    """One line on stderr from a signal handler: the buffered stream may be in the middle of a
    write of the main code (a reentrant call raises), then the descriptor takes it directly."""
    line = message_line(text) + "\n"
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except RuntimeError:
        try:
            os.write(2, line.encode("utf-8", "backslashreplace"))
        except OSError:
            pass
    except (OSError, ValueError):  # (no stderr to tell: the stop goes on regardless)
        pass


class StopFlag:
    """Set by SIGINT/SIGTERM; the loop polls it between steps (and validation batches).

    Alone (one process), the first signal says that the run stops after this step and a second
    raises :class:`StopNow`; under ``--nproc`` each worker only sets the flag (the launcher
    forwards one signal, and a rank leaving mid-step would hang its peers)."""

    def __init__(self) -> None:
        self.set = False
        self.reason: str | None = None  # (what set it where no signal did: status.json's message then says so)
        self.signals = 0  # (how many came: the second one stops now)
        self.alone = True
        self.previous: dict[int, Any] = {}

    def __call__(self) -> bool:
        return self.set

    def _handler(self, signum: int, _frame: Any) -> None:
        self.signals += 1
        self.set = True
        if not self.alone:
            return
        if self.signals >= 2:
            raise StopNow()
        _say(FIRST_SIGINT if signum == signal.SIGINT else FIRST_SIGTERM)

    def install(self, alone: bool = True) -> None:
        self.alone = alone
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self.previous[sig] = signal.signal(sig, self._handler)
            except (ValueError, OSError):  # not the main thread (tests calling in-process)
                continue
            if getattr(self.previous[sig], "stop_signal", None) is not None:  # came while loading
                self.set = True  # (``revstudio.early_stop.EarlyStop``)
                self.signals = max(self.signals, 1)

    def uninstall(self) -> None:
        for sig, old in self.previous.items():
            signal.signal(sig, old)
        self.previous.clear()


__all__ = ["FIRST_SIGINT", "FIRST_SIGTERM", "StopFlag", "StopNow", "forced_message", "forced_row", "say"]

say = _say  # (the --nproc launcher says the first signal's line too)

"""Whether a process that wrote a file (a run's worker, an editor session) still runs.

A pid alone names another program after a reboot or a long time, so a writer also records its
:func:`process_stamp` (this boot's id and the process's start time) and its host. Standard library
only: the run list of ``revstudio runs`` and the app's Runs tab and crash recovery all read these.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any


def host() -> str:
    """This machine's name, as a writer records it (a shared folder is read from other machines)."""
    try:
        return socket.gethostname()
    except OSError:
        return ""


def process_stamp(pid: int) -> str | None:
    """Who process ``pid`` is: this boot's id and the process's start time (Linux ``/proc``).

    None where the platform cannot tell."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return f"{boot}:{fields[19]}"  # field 22 of proc(5), counted after "pid (comm)"
    except (OSError, IndexError, ValueError):
        return None


def pid_alive(pid: Any) -> bool:
    """Whether process ``pid`` is running (not gone, not a zombie)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but someone else's
        return True
    except (OSError, OverflowError):  # (a pid beyond the C type, status.json edited: an internal error before)
        return False
    # a zombie (exited, not yet reaped by its parent) is not running either
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def same_process(pid: Any, stamp: Any) -> bool:
    """Whether ``pid`` still is the process that recorded ``stamp`` (:func:`process_stamp`): a pid
    reused after a reboot or by a later program is not. Without a stamp (an old record, a platform
    that cannot tell) the pid being alive is all there is to go on."""
    if not pid_alive(pid):
        return False
    if isinstance(stamp, str) and process_stamp(os.getpid()) is not None:
        return process_stamp(pid) == stamp
    return True

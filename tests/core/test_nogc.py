"""The cyclic collector's pause is counted across threads (the editor's estimate runs on a worker)."""
from __future__ import annotations

import gc
import threading

from revstudio.core.nogc import paused


def _hold(entered: threading.Event, release: threading.Event) -> None:
    with paused():
        entered.set()
        release.wait(10)


def test_a_pause_ending_in_one_thread_leaves_the_collector_off_while_another_thread_holds_one() -> None:
    assert gc.isenabled()
    entered, release = threading.Event(), threading.Event()
    with paused():  # the UI thread's check begins first ...
        worker = threading.Thread(target=_hold, args=(entered, release))
        worker.start()
        assert entered.wait(10)
    # ... and ends while the worker's estimate still runs: no collection may start in the worker
    still_off = not gc.isenabled()
    release.set()
    worker.join(10)
    assert still_off and gc.isenabled()


def test_nested_pauses_in_one_thread_restore_a_collector_that_was_off() -> None:
    gc.disable()
    try:
        with paused(), paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_pause_held_on_one_thread_is_released_by_another() -> None:
    from revstudio.core.nogc import hold, release

    hold()  # the UI thread submits a job ...
    off_while_held = not gc.isenabled()
    worker = threading.Thread(target=release)  # ... and the worker ends the pause once it has its own
    worker.start()
    worker.join(10)
    assert off_while_held and gc.isenabled()

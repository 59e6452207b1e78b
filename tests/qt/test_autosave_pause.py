"""Autosave after a pause in editing: an edit reaches the recovery file seconds later, not up to 30 s.

Each change of the undo stack (an edit, a merged keystroke, undo, redo) restarts a short pause
timer; when it fires the graph is copied on the UI thread and written by a writer thread. A
burst of edits is one write; a long burst is written at the Preferences upper bound. The
timers are shortened here and the tests wait for the write (``qtbot.waitUntil``), never for
a fixed time.
"""
from __future__ import annotations

import threading
from pathlib import Path

from revstudio.core.commands import SetParam
from revstudio.core.project import dumps, load, save

NEVER = 3_600_000  # ms: a timer that cannot fire during a test


def _edit(window, value: int, node: str = "f") -> None:
    window.document.push(SetParam(window.document.graph, node, "out_channels", value))
    window.document.break_merge()  # each its own undo step


def _quick(window, pause: int = 30, longest: int = NEVER):
    saver = window.autosaver
    saver.pause.setInterval(pause)
    saver.timer.setInterval(longest)
    return saver


def test_an_edit_is_written_once_editing_pauses(make_window, revnet, qtbot):
    window = make_window(revnet)
    saver = _quick(window)  # the 10 s upper bound cannot write it: only the pause can
    _edit(window, 5)
    qtbot.waitUntil(lambda: saver.writes == 1, timeout=10_000)
    assert load(str(saver.recovery_file)).node("f").params["out_channels"] == 5


def test_a_burst_of_edits_is_one_write_of_its_last_state(make_window, revnet, qtbot):
    window = make_window(revnet)
    saver = _quick(window)
    for value in range(1, 21):  # typed without a pause: no timer can fire in between
        _edit(window, value)
    qtbot.waitUntil(lambda: saver.writes >= 1, timeout=10_000)
    assert saver.wait() and not saver.pause.isActive()
    assert saver.writes == 1
    assert load(str(saver.recovery_file)).node("f").params["out_channels"] == 20


def test_a_long_burst_is_written_at_the_upper_bound(make_window, revnet, qtbot):
    window = make_window(revnet)
    saver = _quick(window, pause=NEVER, longest=30)  # the pause never comes
    _edit(window, 7)
    qtbot.waitUntil(lambda: saver.writes == 1, timeout=10_000)
    assert load(str(saver.recovery_file)).node("f").params["out_channels"] == 7
    assert saver.wait()
    qtbot.wait(100)  # a few more ticks: nothing new to write, so nothing is written
    assert saver.writes == 1


def test_undo_back_to_clean_removes_it_and_redo_writes_it_again(make_window, revnet, qtbot, tmp_path):
    path = tmp_path / "doc.revs"
    save(revnet, str(path))
    window = make_window(load(str(path)), str(path))
    saver = _quick(window)
    _edit(window, 3)
    qtbot.waitUntil(lambda: saver.writes == 1, timeout=10_000)
    window.document.undo_stack.undo()  # clean again: its copy goes, nothing is written
    assert not saver.recovery_file.exists() and not saver.pause.isActive() and not saver.flush()
    window.document.undo_stack.redo()
    qtbot.waitUntil(lambda: saver.writes == 2, timeout=10_000)
    assert load(str(saver.recovery_file)).node("f").params["out_channels"] == 3


def _hold_writer(saver, until):
    """Hold the writer's lock from another thread until ``until()`` is true (then let go): the
    writer thread cannot write meanwhile, while the UI thread may still wait for the lock."""
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with saver._writer.io:
            held.set()
            while not until():
                done.wait(0.001)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    held.wait(10)
    return thread


def test_a_save_drops_a_copy_still_waiting_to_be_written(make_window, revnet, qtbot, tmp_path):
    path = tmp_path / "doc.revs"
    save(revnet, str(path))
    window = make_window(load(str(path)), str(path))
    saver = _quick(window, pause=NEVER)
    _edit(window, 9)
    flushed = []
    holder = _hold_writer(saver, lambda: flushed and saver._writer._generation > flushed[0])
    assert saver.flush()
    flushed.append(saver._writer._generation)
    window.actions_by_name["save"].trigger()  # waits for the lock, after it dropped the copy
    holder.join(10)
    assert saver.wait()
    assert not saver.recovery_file.exists() and saver.writes == 0 and not window.document.is_dirty()


def test_the_copy_is_the_graph_when_editing_paused_not_a_later_one(make_window, revnet, qtbot):
    window = make_window(revnet)
    saver = _quick(window, pause=NEVER)
    _edit(window, 4)
    threads = []
    write = saver.store.write

    def recording(*args, **kwargs):
        threads.append(threading.current_thread())
        return write(*args, **kwargs)

    saver.store.write = recording
    edited = threading.Event()
    holder = _hold_writer(saver, edited.is_set)  # the writer thread cannot start before the next edit
    assert saver.flush()
    _edit(window, 8)  # an edit while the copy waits to be written: not in that copy
    edited.set()
    holder.join(10)
    qtbot.waitUntil(lambda: saver.writes == 1, timeout=10_000)
    assert load(str(saver.recovery_file)).node("f").params["out_channels"] == 4
    assert threads and threading.main_thread() not in threads  # the text is made and written off the UI thread
    assert saver.flush()  # the later edit is the next copy
    qtbot.waitUntil(lambda: saver.writes == 2, timeout=10_000)
    assert load(str(saver.recovery_file)).node("f").params["out_channels"] == 8


def test_the_copy_holds_the_whole_project_groups_and_all(make_window, qtbot):
    graph = load(str(_example("revnet_coupling")))
    window = make_window(graph)
    saver = _quick(window)
    window.document.mark_dirty()
    qtbot.waitUntil(lambda: saver.writes == 1, timeout=10_000)
    assert graph.groups and Path(saver.recovery_file).read_text(encoding="utf-8") == dumps(graph)


def _example(name: str) -> Path:
    return Path(__file__).resolve().parents[2] / "resources" / "examples" / f"{name}.revs"


def test_a_failure_of_a_copy_written_over_since_is_not_reported(make_window, revnet, qtbot):
    window = make_window(revnet)
    saver = _quick(window, pause=NEVER)
    write, said = saver.store.write, []
    saver.failed.connect(said.append)

    def full_in_the_background(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            raise OSError(28, "No space left on device")
        return write(*args, **kwargs)

    saver.store.write = full_in_the_background
    _edit(window, 6)
    assert saver.flush() and saver.wait()  # failed; its news still queued for the UI thread
    assert saver.save_now()  # written over at once (a crash, SIGTERM): the copy is on disk
    qtbot.wait(50)  # the queued news arrives: stale, so nothing is said
    assert saver.last_error is None and said == []
    assert load(str(saver.recovery_file)).node("f").params["out_channels"] == 6

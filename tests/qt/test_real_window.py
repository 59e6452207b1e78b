"""A real window under Xvfb, driven with real X input events (xdotool): drag, wire, save.

The test starts its own Xvfb, runs the app in a child process on the xcb
platform, and drives it with ``xdotool`` mouse and key events. The child only
answers questions over stdin/stdout (where is this palette entry, this port;
what is the graph now; take a screenshot); every edit comes from real input.
Skipped with a reason when Xvfb/xdotool are missing, except on CI (CI=true).
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]

SCREENSHOTS = Path(__file__).parent / "screenshots"
ROOT = Path(__file__).resolve().parents[2]

def driver_head(width: int = 1400, height: int = 880) -> str:
    """The start every real-window driver shares: the app and its main window on the X
    display (RS_W/RS_H override the size), the project of ``sys.argv[1]`` (``-``: none)
    open, and ``glob`` for a widget point in screen coordinates."""
    return rf"""
import json, os, sys
from PySide6.QtCore import QPoint, QSocketNotifier, Qt
from PySide6.QtGui import QGuiApplication
from revstudio.qt.app import create_app, make_excepthook

app = create_app(["revstudio"])
from revstudio.qt.main_window import MainWindow

window = MainWindow()
sys.excepthook = make_excepthook(lambda: window, show_dialog=False)
window.resize(int(os.environ.get("RS_W", "{width}")), int(os.environ.get("RS_H", "{height}")))
window.move(0, 0)
window.show()
window.raise_()
window.activateWindow()
if sys.argv[1] != "-":
    window.files.load_path(sys.argv[1])

def glob(widget, point):
    p = widget.mapToGlobal(point)
    return [p.x(), p.y()]
"""


CHILD = driver_head() + r"""
def answer(req):
    cmd = req["cmd"]
    if cmd == "palette":
        tree = window.node_palette.tree
        item = window.node_palette.item_for(req["type"])
        tree.scrollToItem(item)
        return glob(tree.viewport(), tree.visualItemRect(item).center())
    if cmd == "canvas":
        vp = window.current_view().viewport()
        return glob(vp, vp.rect().center())
    if cmd == "port":
        view = window.current_view()
        item = view.scene().node_items[req["node"]]
        scene_pos = item.port_scene_pos(req["port"], req["output"])
        return glob(view.viewport(), view.mapFromScene(scene_pos))
    if cmd == "state":
        g = window.document.graph
        return {"nodes": {n.id: n.type for n in g}, "edges": [e.to_json() for e in g.edges],
                "dirty": window.document.is_dirty(), "path": window.document.path,
                "focus": type(app.focusWidget()).__name__ if app.focusWidget() else None}
    if cmd == "shot":
        screen = QGuiApplication.primaryScreen()
        return screen.grabWindow(0).save(req["path"])
    raise ValueError(cmd)

"""

# The tail every real-window driver shares: one JSON request per stdin line, answered by the
# driver's own ``answer(req)`` with one JSON reply per stdout line.
DRIVER_LOOP = r"""
def on_input():
    line = sys.stdin.readline()
    if not line:
        app.quit()
        return
    try:
        req = json.loads(line)
        if req.get("cmd") == "quit":  # every driver's: leave without the unsaved-changes question
            window.document.undo_stack.setClean()
            app.quit()
            reply = {"ok": True}
        elif req.get("cmd") == "example":  # every driver's: File > Examples > NAME; the graph's name
            action = next(a for a in window.examples_menu.actions() if a.text() == req["name"].replace("_", " "))
            action.trigger()
            reply = {"ok": window.document.graph.name}
        else:
            reply = {"ok": answer(req)}
    except Exception as exc:
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(reply, default=str), flush=True)

notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
notifier.activated.connect(on_input)
print(json.dumps({"ready": True}), flush=True)
sys.exit(app.exec())
"""
CHILD += DRIVER_LOOP


def _tools_missing() -> str | None:
    missing = [t for t in ("Xvfb", "xdotool") if shutil.which(t) is None]
    return f"{', '.join(missing)} not installed (run packaging/install-system-deps.sh)" if missing else None


@pytest.fixture
def xvfb():
    """A private X display; yields its DISPLAY string."""
    with private_display() as display:
        yield display


@contextlib.contextmanager
def private_display():
    """Xvfb on a display of its own; yields its DISPLAY string. Xvfb picks a free display number itself
    and writes it to a pipe (``-displayfd``), so tests in parallel processes (pytest -n 2) never race
    for one: choosing a number whose lock file is missing and then starting Xvfb on it did."""
    reason = _tools_missing()
    if reason:  # make test installs them (packaging/install-system-deps.sh): missing means a broken setup
        pytest.fail(f"real-window test cannot run: {reason}")
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1600x1000x24",
                             "-nolisten", "tcp"], pass_fds=(write_end,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_end)
    number = _display_number(read_end, proc)
    if number is None:
        proc.kill()
        proc.wait()
        pytest.fail("Xvfb -displayfd did not report a display within 30 s (or ended first)")
    try:
        yield f":{number}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


def _display_number(fd: int, proc: subprocess.Popen) -> str | None:
    """The display number Xvfb writes to ``fd`` once it accepts connections (a line: digits, newline);
    None when it ends or 30 s pass first (a hang guard: the read returns as soon as the line is there)."""
    text, deadline = b"", time.monotonic() + 30
    try:
        while not text.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 64)
            if not chunk:  # Xvfb ended (or closed the pipe) before writing a whole line
                return None
            text += chunk
    finally:
        os.close(fd)
    number = text.strip().decode("ascii", "replace")
    return number if number.isdigit() and proc.poll() is None else None


class App:
    """The app in a child process, and real input through xdotool."""

    def __init__(self, display: str, project: Path | str, home: Path, child: str = CHILD,
                 env: dict[str, str] | None = None, umask: int = 0o022) -> None:
        """Start ``child`` (a driver script ending in ``DRIVER_LOOP``) on ``project`` with a
        private HOME on ``display``; ``env``: more variables for it."""
        self.env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "HOME": str(home),
                    "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
                    "XDG_RUNTIME_DIR": str(home / "run"), "PYTHONPATH": str(ROOT), **(env or {})}
        (home / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-c", child, str(project)], env=self.env, cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, umask=umask)
        hello = self._read()
        assert hello.get("ready"), hello

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"app exited: {self.proc.stderr.read()[-3000:]}")
        return json.loads(line)

    def ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        assert "error" not in reply, reply
        return reply["ok"]

    def shot(self, name: str, docs: bool = False) -> Path:
        """A screenshot of the window as ``SCREENSHOTS/name`` (a drawn window: over 20 kB); with ``docs``,
        one of the README's pictures, copied to docs/ when REVSTUDIO_UPDATE_DOCS=1 asks for it."""
        SCREENSHOTS.mkdir(exist_ok=True)
        path = SCREENSHOTS / name
        assert self.ask(cmd="shot", path=str(path))
        assert path.stat().st_size > 20_000
        if docs and os.environ.get("REVSTUDIO_UPDATE_DOCS") == "1":  # refreshed on request only
            shutil.copy(path, ROOT / "docs" / name)
        return path

    def xdo(self, *args: object) -> None:
        subprocess.run(["xdotool", *map(str, args)], env=self.env, check=True, timeout=10)

    def drag(self, start: list[int], end: list[int], steps: int = 12) -> None:
        """Press, move in small steps (so Qt sees a drag), release."""
        self.xdo("mousemove", *start)
        time.sleep(0.15)
        self.xdo("mousedown", 1)
        for i in range(1, steps + 1):
            x = start[0] + (end[0] - start[0]) * i / steps
            y = start[1] + (end[1] - start[1]) * i / steps
            self.xdo("mousemove", int(x), int(y))
            time.sleep(0.04)
        time.sleep(0.2)
        self.xdo("mouseup", 1)
        time.sleep(0.3)

    def wait_state(self, predicate, timeout: float = 30.0) -> dict:  # returns as soon as it holds
        deadline = time.monotonic() + timeout
        state = self.ask(cmd="state")
        while not predicate(state) and time.monotonic() < deadline:
            time.sleep(0.1)
            state = self.ask(cmd="state")
        return state

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.ask(cmd="quit")
                self.proc.wait(10)
            except Exception:
                self.proc.kill()


def test_drag_wire_and_save_with_real_input(xvfb, tmp_path):
    from revstudio.core.graph import Graph
    from revstudio.core.project import load, save

    project = tmp_path / "real.revs"
    save(Graph("real"), str(project))
    app = App(xvfb, project, tmp_path / "home")
    try:
        time.sleep(0.5)  # first expose
        canvas = app.ask(cmd="canvas")
        app.drag(app.ask(cmd="palette", type="Input"), [canvas[0] - 300, canvas[1] - 40])
        state = app.wait_state(lambda s: len(s["nodes"]) == 1)
        assert list(state["nodes"].values()) == ["Input"], state
        app.drag(app.ask(cmd="palette", type="Output"), [canvas[0] + 150, canvas[1] - 40])
        state = app.wait_state(lambda s: len(s["nodes"]) == 2)
        assert sorted(state["nodes"].values()) == ["Input", "Output"], state
        ids = {t: n for n, t in state["nodes"].items()}

        src = app.ask(cmd="port", node=ids["Input"], port="out", output=True)
        dst = app.ask(cmd="port", node=ids["Output"], port="in", output=False)
        app.drag(src, dst, steps=16)
        state = app.wait_state(lambda s: s["edges"])
        assert state["edges"] == [[f"{ids['Input']}.out", f"{ids['Output']}.in"]], state
        assert state["dirty"]

        app.xdo("mousemove", canvas[0], canvas[1] + 150)
        app.xdo("click", 1)  # focus the canvas, as a user would before typing
        app.xdo("key", "ctrl+s")
        state = app.wait_state(lambda s: not s["dirty"])
        assert not state["dirty"], state
        saved = load(str(project))
        assert sorted(n.type for n in saved) == ["Input", "Output"]
        assert [e.to_json() for e in saved.edges] == state["edges"]

        SCREENSHOTS.mkdir(exist_ok=True)
        shot = SCREENSHOTS / "real_window.png"
        assert app.ask(cmd="shot", path=str(shot)) is True
        assert shot.stat().st_size > 10_000
    finally:
        app.close()


def test_displays_started_at_the_same_moment_are_all_different():
    """Four displays started at once from four threads, as pytest -n workers start theirs: each Xvfb
    starts and gets a number of its own (picking a free-looking number first let two pick the same)."""
    import threading

    barrier, found, errors = threading.Barrier(4), [], []

    def start() -> None:
        try:
            with contextlib.ExitStack() as stack:
                barrier.wait(10)
                found.append(stack.enter_context(private_display()))
                barrier.wait(60)  # every display is up while the others are
        except BaseException as exc:  # pytest.fail in a thread: collected and reported below
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert not errors, errors
    assert len(found) == 4 and len(set(found)) == 4, found

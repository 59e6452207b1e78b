"""``revstudio [FILE]``: start the Qt application and show the main window.

Start-up stays cheap (torch is imported only when something needs it). An
unexpected exception never shows a traceback: it is logged to the Log tab,
the open document is autosaved, and the user sees one short message.
"""
from __future__ import annotations

import logging
import signal
import sys
import traceback
from collections.abc import Callable
from types import TracebackType

from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from revstudio.qt import theme
from revstudio.qt.settings import APPLICATION, ORGANISATION, Settings

log = logging.getLogger("revstudio")
ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def make_excepthook(window_getter: Callable[[], object], show_dialog: bool = True) -> ExceptHook:
    """An excepthook that logs, autosaves and shows a one-line message (never a traceback)."""
    busy = False

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        nonlocal busy
        if issubclass(kind, KeyboardInterrupt):
            QCoreApplication.quit()
            return
        text = "".join(traceback.format_exception(kind, exc, tb))
        log.error("unexpected error: %s: %s\n%s", kind.__name__, exc, text)
        print(text, file=sys.stderr)  # for whoever runs it from a terminal
        window = window_getter()
        saver = getattr(window, "autosaver", None)
        saved = "Your work is autosaved."
        if saver is not None:
            saver.save_now()  # never lose an edit to a bug
            if saver.document.is_dirty() and saver.last_error:  # never claim a copy that is not there
                saved = f"{saver.last_error}."
        if busy or not show_dialog or window is None:
            return
        busy = True  # an error while the message is open must not stack dialogs
        try:
            QMessageBox.warning(
                window, "Something went wrong",  # type: ignore[arg-type]
                f"revstudio hit an unexpected error: {kind.__name__}: {exc}\n\n"
                f"{saved} Details are in the Log tab; please report them.")
        finally:
            busy = False

    return hook


def create_app(argv: list[str] | None = None) -> QApplication:
    """The QApplication with names, icon and the saved theme applied."""
    QCoreApplication.setOrganizationName(ORGANISATION)
    QCoreApplication.setApplicationName(APPLICATION)
    QApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setApplicationDisplayName("revstudio")
    app.setDesktopFileName("revstudio")
    app.setWindowIcon(theme.app_icon())
    settings = Settings()
    theme.apply_theme(app, settings.theme)
    if settings.text_scale != theme.text_scale():
        theme.set_text_scale(app, settings.text_scale)
    return app


def run_app(path: str | None) -> int:
    """Open the editor (optionally on ``path``); returns the process exit code."""
    logging.basicConfig(level=logging.WARNING, format="revstudio: %(message)s")
    for handler in logging.getLogger().handlers:  # the terminal gets warnings; the Log tab gets it all
        handler.setLevel(logging.WARNING)
    app = create_app()
    from revstudio.qt.main_window import MainWindow  # after the app: widgets need it

    window = MainWindow()
    sys.excepthook = make_excepthook(lambda: window)
    _quit_on_ctrl_c(window)
    for number in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):  # (SIGHUP: its terminal closed)
        if number is not None:
            signal.signal(number, lambda n, _f: QTimer.singleShot(0, lambda: _terminate(window, n)))
    from revstudio.qt import new_window

    if new_window.started_by_new_window():
        new_window.cascade(window)  # not exactly over the window it was asked from
    window.fit_to_screen()  # before show: a window manager places what it is given
    window.show()
    window.open_later(path)
    _tell_about_plugin_problems(window)
    code = int(app.exec())
    from revstudio.qt.canvas.editing import release_clipboard

    release_clipboard()  # while Python is alive: copied nodes' QMimeData segfaulted the exit
    return code


def _tell_about_plugin_problems(window: object) -> None:
    """Skipped plugins are in the Log tab already (logger revstudio.plugins); say so once."""
    from revstudio.core import plugins

    found = plugins.problems()
    show = getattr(window, "show_message", None)
    if found and callable(show):
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        show(f"{found[0]}{more}; see the Log tab")


def _terminate(window: QWidget, number: int = signal.SIGTERM) -> None:
    """SIGTERM (a logout, a shutdown, ``kill PID``) or SIGHUP: no one is there to answer "save changes?".

    The unsaved edits go to the recovery file, which is kept (the next start offers it), a
    training run is stopped at a checkpoint, and the app exits without closing the window
    (a clean close would discard the recovery file)."""
    saver = getattr(window, "autosaver", None)
    if saver is not None:
        saver.shutdown()  # (a copy the writer thread has under way is finished first)
        if saver.save_now():
            log.warning("terminated: the unsaved edits are in %s; the next start offers them",
                        saver.recovery_file)
    training = getattr(window, "training", None)
    if training is not None:
        training.shutdown()
    QCoreApplication.exit(128 + int(number))


def _quit_on_ctrl_c(window: QWidget) -> None:
    """Ctrl+C in the terminal closes the window the normal way (asking about unsaved work).

    Python only runs signal handlers between bytecodes, which never happens while
    Qt's event loop waits; a cheap timer gives it the chance.
    """
    signal.signal(signal.SIGINT, lambda *_: QTimer.singleShot(0, window.close))
    timer = QTimer(window)
    timer.start(250)
    timer.timeout.connect(lambda: None)

"""New, open, save, save as, recent files and examples for the one open document.

Opening a file whose graph has errors shows it with the errors marked (the
check reports them); only a file that cannot be read at all is refused, with a
message naming the file and the problem. Nothing is discarded without asking.
"""
from __future__ import annotations

import logging
import os
import stat
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from revstudio import resources
from revstudio.core.graph import Graph
from revstudio.qt.canvas.editing import STACKED_LAYOUT
from revstudio.qt.dialogs import Dialogs
from revstudio.qt.document import Document, disk_stamp
from revstudio.qt.settings import Settings

log = logging.getLogger("revstudio")
EXAMPLES_DIR = resources.path("examples")


def examples() -> list[Path]:
    """The example projects shipped in ``resources/examples``."""
    return resources.examples()


def read_project(path: str) -> Graph:
    """Load ``path``; raises ``OpenError`` with a message for the user."""
    from revstudio.core.project import ProjectError, load

    try:
        return load(path)
    except ProjectError as exc:
        text = str(exc)
        raise OpenError(text if path in text or os.path.basename(path) in text else f"{path}: {text}") from None
    except IsADirectoryError:
        raise OpenError(f"{path} is a folder, not a project file") from None
    except FileNotFoundError:
        raise OpenError(f"{path} does not exist") from None
    except PermissionError:
        raise OpenError(f"{path} cannot be read: permission denied") from None
    except OSError as exc:
        raise OpenError(f"{path} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise OpenError(f"{path} is not a text file; a .revs project is JSON text") from None


def _anchor_data(graph: Graph, folder: Path) -> None:
    """Make the training data paths absolute against ``folder``, the example's own.

    An example opens untitled, and an untitled project's relative paths start at the working
    folder: digits_revnet's ``../data/digits.npz`` was then looked for wherever the app started,
    and Train refused the example."""
    from revstudio.training.data import DATA_KEYS, absolute_spec

    anchored = {k: absolute_spec(graph.training[k], str(folder)) for k in DATA_KEYS if k in graph.training}
    if anchored:
        graph.training = {**graph.training, **anchored}


def _read_only(path: str) -> bool:
    """The file exists and its owner (or the permissions) keep it from being written."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (mode & stat.S_IWUSR) or not os.access(path, os.W_OK)


class OpenError(Exception):
    """A project file could not be read at all."""


class FileController(QObject):
    """File actions for one window and its document."""

    recentChanged = Signal(list)
    message = Signal(str)  # a short status-bar note

    def __init__(self, window: QWidget, document: Document, settings: Settings,
                 dialogs: Dialogs | None = None) -> None:
        super().__init__(window)
        self.window = window
        self.document = document
        self.settings = settings
        self.dialogs = dialogs or Dialogs()
        # Called just before writing: the window stores view state (zoom, centre) in the graph.
        self.before_save: list[Callable[[], object]] = []
        self._told: object = None  # the disk state already reported by check_disk
        self._told_personal: set[tuple[str, str, str]] = set()  # (file, key, path) said by _personal_note
        # File > Open of a file with an autosaved copy left by a crash offers it (True: restored instead)
        self.restore_instead: Callable[[str], bool] | None = None

    # ---- asking before losing edits -----------------------------------
    def display_name(self) -> str:
        if self.document.path:
            return os.path.basename(self.document.path)
        return self.document.graph.name or "untitled"

    def maybe_save(self) -> bool:
        """True if it is fine to drop the current document (saved, discarded or unchanged)."""
        name = self.display_name()
        if self.document.disk_state() == "deleted":  # this window holds the only copy now
            name += " (deleted on disk)"
        elif not self.document.is_dirty():
            return True
        answer = self.dialogs.ask_unsaved(self.window, name)
        if answer == "save":
            return self.save()
        return answer == "discard"

    # ---- actions ------------------------------------------------------
    def new_file(self) -> bool:
        if not self.maybe_save():
            return False
        self.document.replace_graph(Graph(), None)
        self.message.emit("New project")
        return True

    def open_file(self, path: str | None = None) -> bool:
        if not self.maybe_save():
            return False
        if path is None:
            path = self.dialogs.open_path(self.window, self.settings.last_dir())
            if not path:
                return False
        if self.restore_instead is not None and self.restore_instead(os.path.abspath(path)):
            return True
        return self.load_path(path)

    def open_dropped(self, paths: list[str]) -> bool:
        """Files dropped on the window: the first project (``.revs`` or an exported ``.py``, any
        case) opens; a drop with none says so, naming the file."""
        project = next((p for p in paths if p.lower().endswith((".revs", ".py"))), None)
        if project is not None:
            return self.open_file(project)
        more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
        self.message.emit(f"{os.path.basename(paths[0])}{more} is not a revstudio project: "
                          "drop a .revs file or an exported .py")
        return False

    def load_path(self, path: str) -> bool:
        """Open ``path`` without asking; refuse with a clear message if unreadable."""
        try:
            graph = read_project(path)
        except OpenError as exc:
            log.error("cannot open %s", exc)
            self.dialogs.error(self.window, "Cannot open project", f"{exc}{_example_hint(path)}")
            if not os.path.exists(path):
                self.recentChanged.emit(self.settings.remove_recent(path))
            return False
        export = path.lower().endswith(".py")
        if export:
            # the project embedded in exported code: an untitled copy, so Save never writes the
            # project's JSON over the code (Save As asks for a .revs file)
            graph.name = graph.name or os.path.splitext(os.path.basename(path))[0]
            _anchor_data(graph, Path(path).resolve().parent)
        self.document.replace_graph(graph, None if export else os.path.abspath(path))
        self.settings.set_last_dir(path)
        self.recentChanged.emit(self.settings.add_recent(path))
        report = self.document.report
        errors = sum(1 for d in (getattr(report, "diagnostics", None) or []) if d.severity == "error")
        note = f"Opened {path}" + (" as an untitled copy (Save As writes a .revs project; the code is "
                                   "never overwritten)" if export else "")
        note += f" with {errors} error(s): see Problems" if errors else ""
        stack = self.document.undo_stack
        if stack.count() and stack.text(0) == STACKED_LAYOUT:  # (the canvas laid out a pile of cards)
            note += "; laid out its nodes, which the file placed on one another (Ctrl+Z puts them back)"
        log.info(note)
        self.message.emit(note)
        return True

    def open_example(self, path: str | Path) -> bool:
        """Open an example as an untitled copy, so saving never overwrites the shipped file."""
        if not self.maybe_save():
            return False
        try:
            graph = read_project(str(path))
        except OpenError as exc:
            self.dialogs.error(self.window, "Cannot open example", str(exc))
            return False
        _anchor_data(graph, Path(path).resolve().parent)
        self.document.replace_graph(graph, None)
        self.message.emit(f"Opened example {Path(path).stem} (a copy: Save As to keep it)")
        return True

    def save(self) -> bool:
        if not self.document.path:
            return self.save_as()
        if self.document.disk_state() == "changed":
            # another program (or window) wrote the file since: never overwrite its version unasked
            answer = self.dialogs.ask_overwrite(self.window, self.document.path)
            if answer == "save_as":
                return self.save_as()
            if answer != "overwrite":
                self.message.emit(f"Not saved: {self.document.path} was changed on disk")
                return False
        return self.write(self.document.path)

    def check_disk(self) -> None:
        """Say (once per change) that the open file was changed or deleted by another program:
        a document without edits offers to reload it; one with edits keeps them (Save asks)."""
        path = self.document.path
        state = self.document.disk_state()
        seen = (state, disk_stamp(path))
        if state is None or seen == self._told or not path:
            return
        self._told = seen
        name = os.path.basename(path)
        if state == "deleted" and not os.path.isdir(os.path.dirname(path)):
            note = f"The folder of {name} was deleted or moved; Save As keeps the project elsewhere"
        elif state == "deleted":
            note = f"{name} was deleted or moved on disk; Save writes it again"
        elif not self.document.is_dirty() and self.dialogs.confirm(
                self.window, "File changed on disk",
                f"{path} was changed by another program. Reload it? (No keeps this version open; "
                "Save will ask before overwriting the file.)"):
            self.load_path(path)
            return
        else:
            note = f"{name} was changed on disk by another program; Save will ask before overwriting it"
        log.warning(note)
        self.message.emit(note)

    def save_as(self) -> bool:
        start = self.document.path or os.path.join(self.settings.last_dir(),
                                                   f"{self.document.graph.name or 'untitled'}.revs")
        path = self.dialogs.save_path(self.window, start)
        if not path:
            return False
        graph = self.document.graph
        old_stem = os.path.splitext(os.path.basename(self.document.path or ""))[0]
        if graph.name in ("", "untitled", old_stem):
            # The name followed the file (or was never chosen): it follows the new file,
            # so the tab, the inspector, the file's "name" and the export's docstring agree.
            name, graph.name = graph.name, os.path.splitext(os.path.basename(path))[0]
            if not self.write(path):
                graph.name = name  # nothing was written: no file to be named after
                return False
            return True
        return self.write(path)

    def write(self, path: str) -> bool:
        """Save the document to ``path`` (atomic); reports failure instead of raising."""
        from revstudio.core.project import ProjectError, save

        if _read_only(path):
            # replacing it would undo its owner's protection: a rename succeeds on a read-only file
            self.dialogs.error(self.window, "Cannot save project",
                               f"{path} is read-only. Choose another location with Save As "
                               "(or make the file writable first).")
            return False
        for hook in self.before_save:
            hook()
        graph = self.document.graph
        kept, source = graph.training, graph.source
        rebase = self._rebase_data(path)
        graph.source = os.path.abspath(path)  # (its data paths now start there: save writes them as they are)
        try:
            with warnings.catch_warnings():  # (a home-folder data path: said once below, in the status bar)
                warnings.simplefilter("ignore", UserWarning)
                save(graph, path)
        except (OSError, ProjectError) as exc:
            graph.source = source
            if graph.training is not kept:  # nothing was saved: the paths start at the project's folder
                graph.set_training(kept)
            reason = getattr(exc, "strerror", None) or str(exc)
            log.error("could not save %s: %s", path, reason)
            # a ProjectError of the write names the file already (and says it is unchanged)
            text = reason if path in reason else f"{path} could not be written: {reason}"
            self.dialogs.error(self.window, "Cannot save project", f"{text}. Choose another location with Save As.")
            return False
        if rebase is not None:
            # The undo stack's run settings move with the file, so undoing an earlier settings change
            # after this Save As brings back a path that names its data from the new folder.
            self.document.rebase_training(rebase)
        self.document.mark_saved(os.path.abspath(path))
        self.settings.set_last_dir(path)
        self.recentChanged.emit(self.settings.add_recent(path))
        note = self._personal_note(path)
        self.message.emit(f"Saved {path}" + (f"; {note}" if note else ""))
        log.info("saved %s", path)
        if note:
            log.warning("%s: %s", path, note)
        return True

    def _personal_note(self, path: str) -> str:
        """What to say, once per file and path, of a data path saved absolute inside a home folder."""
        from revstudio.core.data_paths import personal_path_note, personal_paths

        told = self._told_personal
        notes = []
        for key, data in personal_paths(self.document.graph.training):
            if (os.path.abspath(path), key, data) not in told:
                told.add((os.path.abspath(path), key, data))
                notes.append(personal_path_note(key, data))
        return "; ".join(notes)

    def _rebase_data(self, path: str) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
        """Saving to a new folder: data paths as that file should store them (relative to it where
        the data lies in its folder tree or just above, else absolute; docs/editor.md), so an opened
        example's absolute path does not tie the user's file to this install, and a relative path
        still names the same data from the new folder. Returns the re-expression (None: nothing to
        re-express), for the undo stack once the file is written."""
        from revstudio.core.data_paths import home_paths_relative, portable_section

        old = str(Path(self.document.path).resolve().parent if self.document.path else Path.cwd())
        new = str(Path(path).resolve().parent)
        graph = self.document.graph
        # the same folder: the paths stay as the user wrote them, but for an absolute one in a home
        # folder near the file, written relative as rs.save writes it (docs/data.md)
        same = bool(self.document.path) and old == new
        if same and home_paths_relative(graph.training, new) is graph.training:
            return None
        def rebase(section: dict[str, Any]) -> dict[str, Any]:
            return home_paths_relative(section, new) if same else portable_section(section, old, new)

        moved = rebase(graph.training)
        if moved != graph.training:
            graph.set_training(moved)  # not an edit: the same data, re-expressed
        return rebase

    def clear_recent(self) -> None:
        self.settings.clear_recent()
        self.recentChanged.emit([])


def _example_hint(path: str) -> str:
    """Where the shipped example a missing ``path`` names is, and the menu that opens it (the README's
    ``make run FILE=resources/examples/...`` path names nothing away from a checkout)."""
    from revstudio.resources import missing_example

    found = missing_example(path)
    if found is None:
        return ""
    return (f"; the example '{found.stem}' installed with revstudio is {found} "
            f"(File > New from Example > {found.stem.replace('_', ' ')} opens a copy of it)")

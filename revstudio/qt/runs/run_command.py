"""One ``revstudio COMMAND RUN ... --json`` of a saved run in a child process, for the Runs tab's actions
that write files from a run (Export with Weights…, Sample…): torch never loads in the editor, the window
keeps painting, and what the command says goes to the status bar and the Log in its own words."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from revstudio.qt.training.child_query import ChildQuery

log = logging.getLogger("revstudio.qt")


class RunCommand:
    """The child of one command on a run, and what it said (``ok``, ``words``) once it answered; a
    subclass says what to do with the answer (``_answered``)."""

    def __init__(self, window: Any, run_dir: Path, command: str, arguments: list[str]) -> None:
        self.window = window
        self.run_dir = Path(run_dir).absolute()
        self.ok: bool | None = None
        self.words = ""
        self.query = ChildQuery("revstudio", [command, str(self.run_dir), *arguments, "--json"], parent=window)
        self.query.answered.connect(self._answered)
        self.query.job = self  # type: ignore[attr-defined]  # (kept alive with its child, which the window owns)

    @property
    def running(self) -> bool:
        return self.ok is None

    def _say(self, text: str, error: bool = False, logged: str | None = None) -> None:
        """``text``'s first line in the status bar (which goes), ``logged`` or ``text`` whole in the Log."""
        (log.error if error else log.info)("%s", logged or text)
        show = getattr(self.window, "show_message", None)
        if show is not None:
            show(text.splitlines()[0])

    def _answered(self, answer: dict[str, Any]) -> None:
        raise NotImplementedError

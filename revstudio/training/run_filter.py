"""Which runs a filter's words keep: the rule the app's Runs tab filter box and ``revstudio runs --filter`` share.

The text is split into words at spaces; a run is kept when every word matches it. A word matches when
it is part of (case-insensitively) the run's name, project, label, status, data or mode. A word
``KEY:VALUE`` whose key is one of :data:`KEYS` looks at that field alone, and ``VALUE`` may list
alternatives with commas (``status:failed,killed``); a word with another key (a name holding a colon)
is an ordinary word, and ``KEY:`` with nothing after it matches every run (one is still typing).
Torch-free, no Qt: plain text in, a yes or no out.
"""
from __future__ import annotations

from collections.abc import Mapping

from revstudio.training.runs import STAMPED

KEYS = ("name", "project", "label", "status", "data", "mode")


def run_fields(name: str, label: str | None, status: str, data: object = "", mode: object = "") -> dict[str, str]:
    """What a filter looks at in one run, each field casefolded: its folder's name, the project it is named
    after (``<project>-<date>-<time>``; none for a folder named otherwise), label, status, data and mode."""
    stamped = STAMPED.fullmatch(name)
    fields = {"name": name, "project": stamped.group(1) if stamped else "", "label": label or "",
              "status": status, "data": "" if data is None else str(data), "mode": "" if mode is None else str(mode)}
    return {k: v.casefold() for k, v in fields.items()}


class RunFilter:
    """The words of one filter text, parsed once and matched against many runs' :func:`run_fields`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words: list[tuple[str | None, tuple[str, ...]]] = []
        for word in text.casefold().split():
            key, colon, value = word.partition(":")
            if colon and key in KEYS:
                options = tuple(v for v in value.split(",") if v)
                if options:  # (``status:`` alone: still being typed, keeps every run)
                    self.words.append((key, options))
            else:
                self.words.append((None, (word,)))

    def __bool__(self) -> bool:
        """Whether it leaves out any run at all (an empty or all-space text keeps every one)."""
        return bool(self.words)

    def matches(self, fields: Mapping[str, str]) -> bool:
        for key, options in self.words:
            values = list(fields.values()) if key is None else [fields.get(key, "")]
            if not any(option in value for option in options for value in values):
                return False
        return True

"""Diagnostics: what a check found, each naming the node and port it is about."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    node: str | None
    port: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = ""
        if self.node is not None:
            where = self.node + (f".{self.port}" if self.port else "")
            where += ": "
        return f"{self.severity}: {where}{self.message}"


def error(node: str | None, message: str, port: str | None = None) -> Diagnostic:
    return Diagnostic("error", node, port, message)


def warning(node: str | None, message: str, port: str | None = None) -> Diagnostic:
    return Diagnostic("warning", node, port, message)

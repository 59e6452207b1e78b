"""Diagnostics: what a check found, each naming the node and port it is about.

A diagnostic about several nodes (one plugin-swap warning for every node that uses the
type) sits on its first node and lists them all in ``nodes``, so the canvas and the
inspector mark each of them while ``check`` and the Problems tab say it once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    node: str | None
    port: str | None
    message: str
    # every node it concerns when there are more than ``node`` (empty: just ``node``)
    also: tuple[str, ...] = ()

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes it concerns: ``node`` first, then the others it names."""
        first = (self.node,) if self.node is not None else ()
        return first + tuple(n for n in self.also if n != self.node)

    def concerns(self, node_id: str) -> bool:
        return node_id == self.node or node_id in self.also

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "node": self.node, "port": self.port, "message": self.message,
                "nodes": list(self.nodes)}

    def __str__(self) -> str:
        where = ""
        if self.node is not None:
            where = self.node + (f".{self.port}" if self.port else "")
            where += ": "
        return f"{self.severity}: {where}{self.message}"


def error(node: str | None, message: str, port: str | None = None) -> Diagnostic:
    return Diagnostic("error", node, port, message)


def warning(node: str | None, message: str, port: str | None = None, also: tuple[str, ...] = ()) -> Diagnostic:
    return Diagnostic("warning", node, port, message, also)

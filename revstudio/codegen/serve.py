"""``python -m revstudio.codegen.serve``: export on request, one JSON object per line.

The editor's Code tab keeps one of these running as a child process, so torch
is imported and the graph is built outside the GUI process (DESIGN section 1:
the GUI thread only paints), and a crash while exporting cannot take the
editor down with it.

Protocol (UTF-8, one object per line, replies in request order)::

    -> {"id": 7, "project": "<project file text>", "with_training": false}
    <- {"id": 7, "ok": true, "source": "<python source>"}

``ok`` false means ``source`` is a commented explanation of why there is no
export (the graph's problems, each naming its node), fit to show in place of
the code. The process ends when its input is closed.
"""
from __future__ import annotations

import json
import sys
from typing import IO, Any


def export_or_explain(graph: Any, with_training: bool = False) -> tuple[str, bool]:
    """(source, ok): the export, or a commented explanation of why there is none."""
    from . import CodegenError, export

    try:
        return export(graph, with_training=with_training), True
    except CodegenError as exc:
        lines = ["# No export yet: the graph has problems to fix first.", "#"]
        lines += [f"#   {p}" for p in exc.problems]
        return "\n".join(lines) + "\n", False
    except Exception as exc:  # a bug must not lose the user's edit: say so where the code would be
        return f"# The code generator failed: {type(exc).__name__}: {exc}\n# Please report this.\n", False


def handle(line: str) -> dict[str, Any]:
    """The reply to one request line (never raises)."""
    try:
        request = json.loads(line)
        if not isinstance(request, dict) or not isinstance(request.get("project"), str):
            raise ValueError('expected {"id": ..., "project": "<project text>", "with_training": bool}')
    except ValueError as exc:
        return {"id": None, "ok": False, "source": f"# The exporter got a request it cannot read: {exc}\n"}
    ident = request.get("id")
    try:
        from revstudio.core.project import loads

        graph = loads(request["project"], "<editor>")
    except Exception as exc:  # the editor's graph always serialises; say so if it does not
        return {"id": ident, "ok": False, "source": f"# The graph could not be prepared for export: {exc}\n"}
    source, ok = export_or_explain(graph, bool(request.get("with_training", False)))
    return {"id": ident, "ok": ok, "source": source}


def serve(requests: IO[str], replies: IO[str]) -> int:
    """Answer every line of ``requests`` on ``replies`` until the input ends."""
    for line in requests:
        if line.strip():
            replies.write(json.dumps(handle(line)) + "\n")  # ASCII: json escapes the rest
            replies.flush()
    return 0


def main() -> int:
    replies = sys.stdout
    sys.stdout = sys.stderr  # anything a library prints must not corrupt the replies
    requests = open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    try:
        return serve(requests, replies)
    except (BrokenPipeError, KeyboardInterrupt):  # the editor went away
        return 0


if __name__ == "__main__":
    sys.exit(main())

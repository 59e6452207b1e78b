"""Child processes of the frozen app (PyInstaller, packaging/revstudio.spec).

There ``sys.executable`` is the ``revstudio`` program itself, not a Python: it cannot run
``-P -m MODULE``. So :func:`revstudio.cli.child_argv` starts ``revstudio --run-module MODULE ARGS``
there instead, and the program's ``main`` hands that to :func:`run_module`, which runs MODULE as
``python -P -m MODULE ARGS`` would: as ``__main__``, with ``sys.argv`` = [its file, *ARGS], and the
current folder kept off ``sys.path`` (a ``json.py`` planted there must never run in a child).
Standard library only: it runs before anything else is imported.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence

RUN_MODULE = "--run-module"  # the frozen program's marker: "run this module as python -m would"


def is_frozen() -> bool:
    """Whether this process is the frozen app (PyInstaller sets ``sys.frozen``)."""
    return bool(getattr(sys, "frozen", False))


def child_argv(module: str, args: Sequence[str]) -> list[str]:
    """The frozen app's form of ``python -P -m MODULE ARGS``: the program, the marker, MODULE, ARGS."""
    return [sys.executable, RUN_MODULE, module, *args]


def _keep_the_current_folder_off_the_path() -> None:
    """What ``-P`` does: no entry of ``sys.path`` that means the current folder ('' or '.', or the
    folder itself), so nothing planted where the child was started can be imported."""
    here = os.path.realpath(os.getcwd()) if os.path.isdir(os.curdir) else None
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.realpath(p) != here]


def run_module(args: Sequence[str]) -> int:
    """``revstudio --run-module MODULE ARGS``: run MODULE as ``python -P -m MODULE ARGS`` would.

    Returns only when the module returns without ``sys.exit`` (0); its ``SystemExit`` passes through,
    as from ``python -m``. A missing or unknown MODULE is said in one line (exit 2)."""
    import importlib.util
    import runpy

    if not args or not args[0] or args[0].startswith("-"):
        print(f"revstudio: {RUN_MODULE} needs a module name (revstudio starts its own child processes "
              "with it: 'revstudio --run-module revstudio train FILE' is 'revstudio train FILE')",
              file=sys.stderr)
        return 2
    module, rest = args[0], list(args[1:])
    _keep_the_current_folder_off_the_path()
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        print(f"revstudio: {RUN_MODULE} {module}: no such module in this revstudio", file=sys.stderr)
        return 2
    sys.argv = [module, *rest]  # (run_module puts the module's file in sys.argv[0], as -m does)
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0

"""The layers of DESIGN section 1: import-linter contracts, and what importing the core loads."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    pytest.importorskip("importlinter")
    script = Path(sys.executable).with_name("lint-imports")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "importlinter.cli"]
    # --no-cache: a stale grimp cache has reported broken contracts as kept
    result = subprocess.run([*command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


HEADLESS = textwrap.dedent("""
    import sys
    import revstudio.core
    import revstudio.core.commands, revstudio.core.grouping, revstudio.core.project
    import revstudio.nodes
    from revstudio.core.spec import registry
    assert len(list(registry)) > 0, "the catalog registered nothing"
    try:
        from revstudio.core.check import check
    except ImportError:
        check = None
    from revstudio.core.project import loads
    graph = loads('''{"format": "revstudio", "version": 1, "name": "t",
        "nodes": [{"id": "x", "type": "Input", "params": {"shape": [3, 8, 8]}},
                  {"id": "c", "type": "Conv", "params": {"out_channels": 4}},
                  {"id": "y", "type": "Output"}],
        "edges": [["x.out", "c.in"], ["c.out", "y.in"]]}''')
    if check is not None:
        check(graph)
    heavy = sorted(m for m in sys.modules
                   if m.split(".")[0] in ("torch", "PySide6", "pyqtgraph", "shiboken6")
                   or m == "revstudio.qt" or m.startswith("revstudio.qt."))
    print(" ".join(heavy))
""")


def test_the_core_and_the_catalog_load_neither_torch_nor_qt() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", HEADLESS], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"importing the core loaded: {result.stdout.strip()}"


MAX_LINES = 500  # DESIGN section 1 / STYLE 13: split a module by responsibility before it grows past this


def test_no_module_grows_past_the_size_the_project_keeps() -> None:
    long = {str(path.relative_to(ROOT)): n for path in sorted((ROOT / "revstudio").rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split out a cohesive piece): {long}"

"""What packaging/revstudio.spec leaves out of the frozen app, checked without a build (a build takes
5 to 40 minutes here: tests/packaging/test_freeze.py).

setuptools comes into the build only through torch's C++-extension builder; once it is in,
PyInstaller's runtime hook imports it at every start of the app, about 0.5 s of each start, and the
app starts itself again for every child (Train, Memory, the export server, each --nproc worker). So
the spec leaves it out, and here the commands and the editor run with every module the spec leaves
out made unimportable (and the editor's modules and its children's imported): none may need one.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "packaging" / "revstudio.spec"
EXAMPLE = ROOT / "resources" / "examples" / "revnet_coupling.revs"


def spec_excludes() -> list[str]:
    """The ``excludes`` of the spec's ``Analysis(...)``, read without running PyInstaller."""
    for node in ast.walk(ast.parse(SPEC.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Analysis":
            for keyword in node.keywords:
                if keyword.arg == "excludes":
                    return list(ast.literal_eval(keyword.value))
    raise AssertionError(f"{SPEC} has no Analysis(excludes=[...])")


# Runs a revstudio command line, or imports the editor and its children's modules, in a process where
# the modules the spec excludes cannot be imported (as in the frozen app).
_BLOCKED_RUN = """
import sys
for name in [m for m in sys.modules if any(m == x or m.startswith(x + ".") for x in {excluded!r})]:
    del sys.modules[name]  # (a .pth file of the venv may have loaded one)
for name in {excluded!r}:
    sys.modules[name] = None  # import fails and importlib.util.find_spec says None, as in the frozen app
args = sys.argv[1:]
if args == ["--editor"]:
    import revstudio.qt.app, revstudio.codegen.serve, torch.distributed.run  # noqa
    from revstudio.qt import main_window  # noqa
else:
    from revstudio.cli import main
    sys.exit(main(args))
"""


def _run_blocked(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", QT_QPA_PLATFORM="offscreen")
    code = _BLOCKED_RUN.format(excluded=spec_excludes())
    return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_spec_leaves_setuptools_out() -> None:
    assert {"setuptools", "pkg_resources"} <= set(spec_excludes())


def test_nothing_revstudio_runs_needs_a_module_the_spec_leaves_out(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for args in (["train", str(EXAMPLE), "--steps", "2", "--batch-size", "8", "--val-every", "1",
                  "--gradcheck-every", "1", "--memory-every", "1", "--out", str(run)],
                 ["evaluate", str(run), "--no-save"],
                 ["export", str(run), "-o", str(tmp_path / "m.py"), "--with-training"],
                 ["memory", str(EXAMPLE), "--repeat", "1", "--top", "2"],
                 ["--editor"]):
        result = _run_blocked(tmp_path, *args)
        assert result.returncode == 0, f"{args[0]}: {result.stdout[-1500:]}{result.stderr[-3000:]}"

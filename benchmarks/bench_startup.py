"""Start-up time of the editor: from launching the process to the window on screen.

Each run is a fresh Python process that does what ``revstudio [FILE]`` does
(create the app, build the main window, show it, open the file) and reports
when the event loop has painted the shown window, plus whether torch was
imported along the way (it must not be). Target: < 1.5 s.

    .venv/bin/python benchmarks/bench_startup.py            # median of 5 runs
    .venv/bin/python benchmarks/bench_startup.py --quick    # one run, smoke test
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 1.5

CHILD = r"""
import sys, time, json
from PySide6.QtCore import QStandardPaths, QTimer
QStandardPaths.setTestModeEnabled(True)   # never touch the real settings/recovery files
from revstudio.qt.app import create_app
app = create_app(["revstudio"])
from revstudio.qt.main_window import MainWindow
window = MainWindow()
window.show()
painted = []
window._after_paint.append(lambda: painted.append(time.time()))  # noqa: SLF001 - a probe
def done():
    print(json.dumps({"painted": painted[0], "opened": time.time(), "torch": "torch" in sys.modules,
                      "nodes": len(window.document.graph)}), flush=True)
    window.document.undo_stack.setClean()
    app.quit()
window.opened.connect(lambda: QTimer.singleShot(0, done))
window.open_later(sys.argv[1] if len(sys.argv) > 1 else None)
app.exec()
"""


def one_run(project: str | None, platform: str) -> dict[str, float | bool]:
    env = {**os.environ, "QT_QPA_PLATFORM": platform, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as home:
        env["HOME"] = env["XDG_CONFIG_HOME"] = env["XDG_DATA_HOME"] = home
        t0 = time.time()
        out = subprocess.run([sys.executable, "-c", CHILD, *([project] if project else [])], env=env,
                             capture_output=True, text=True, timeout=120, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"start-up run failed:\n{out.stderr[-2000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return {"painted_s": data["painted"] - t0, "opened_s": data["opened"] - t0, "torch": data["torch"],
            "nodes": data["nodes"]}


def sample_project() -> str:
    """A RevNet-style project of a realistic size (about 100 nodes), written to a temp file."""
    from revstudio.core.generate import large_graph
    from revstudio.core.project import save

    path = os.path.join(tempfile.mkdtemp(), "startup.revs")
    save(large_graph(100), path)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one run of each case")
    parser.add_argument("--platform", default="offscreen", help="Qt platform (offscreen, or xcb with DISPLAY)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    runs = 1 if args.quick else args.runs
    ok = True
    for label, project in (("empty window", None), ("with a 100-node project", sample_project())):
        results = [one_run(project, args.platform) for _ in range(runs)]
        painted = statistics.median(r["painted_s"] for r in results)
        opened = statistics.median(r["opened_s"] for r in results)
        torch = any(r["torch"] for r in results)
        ok &= painted < TARGET_S and not torch
        print(f"{label:<24} window painted {painted:.2f} s, file shown {opened:.2f} s "
              f"(median of {runs}; target: painted < {TARGET_S} s)  torch imported: {'yes' if torch else 'no'}"
              f"  nodes: {results[0]['nodes']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Installing a plugin for a test without pip: a ``*.dist-info`` folder on PYTHONPATH.

``importlib.metadata`` finds a distribution by its ``NAME-VERSION.dist-info``
folder on ``sys.path`` and reads its entry points from ``entry_points.txt``,
exactly as after ``pip install`` (which writes the same two files). Building a
venv takes minutes on CI; this takes milliseconds, so these tests run in every
``make test`` and the venv test (tests/packaging) installs the real wheel once.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PLUGIN = ROOT / "examples" / "plugin"


def add_distribution(site: Path, name: str, version: str, entry_points: dict[str, str],
                     modules: dict[str, str] | None = None) -> Path:
    """Write ``name``'s dist-info (and module files by relative path) into ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = ["[revstudio.nodes]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    tops = sorted({v.split(":")[0].split(".")[0] for v in entry_points.values()})
    (info / "top_level.txt").write_text("\n".join(tops) + "\n")  # import name -> distribution
    for rel, text in (modules or {}).items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return site


def haar_site(site: Path) -> Path:
    """The example plugin (examples/plugin) as if pip had installed it into ``site``."""
    return add_distribution(site, "revstudio-haar", "0.1.0", {"haar": "revstudio_haar.nodes:SPECS"})


def env_with(*paths: Path) -> dict[str, str]:
    """The environment of a child revstudio that sees ``paths`` (and this checkout) first."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("OMP_NUM_THREADS", "1")
    env["QT_QPA_PLATFORM"] = "offscreen"
    return env


def haar_env(site: Path) -> dict[str, str]:
    return env_with(haar_site(site), EXAMPLE_PLUGIN / "src")


def revstudio(env: dict[str, str], *args: str, cwd: Path | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "revstudio", *args], env=env, cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout)


def python(env: dict[str, str], code: str, cwd: Path | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-c", code], env=env, cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout)

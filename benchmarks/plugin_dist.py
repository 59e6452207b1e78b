"""A plugin installed for a benchmark without pip: its ``*.dist-info`` folder on PYTHONPATH.

``importlib.metadata`` finds a distribution by its ``NAME-VERSION.dist-info`` folder on ``sys.path``
and reads its entry points from ``entry_points.txt``, as after ``pip install`` (which writes the same
files). The plugin benchmarks' child ``revstudio memory`` runs then load the plugin as a user's would.
"""
from __future__ import annotations

from pathlib import Path


def add_distribution(site: Path, name: str, entry: str, target: str,
                     modules: dict[str, str] | None = None, version: str = "0.1.0") -> Path:
    """Write distribution ``name``'s dist-info into ``site`` with the ``revstudio.nodes`` entry point
    ``entry = target`` (``package.module:SPECS``), and the given module files (relative path -> text)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[revstudio.nodes]\n{entry} = {target}\n")
    (info / "top_level.txt").write_text(target.split(".")[0] + "\n")  # import name -> distribution
    for rel, text in (modules or {}).items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return site

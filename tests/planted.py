"""Modules planted in a child's current folder (``json.py``, ``torch.py``, ``revstudio.py``) that leave a
marker file when imported: a child revstudio starts must never import from the folder it runs in."""
from __future__ import annotations

from pathlib import Path


def plant(folder: Path) -> Path:
    """The three modules in ``folder``; the marker file any of them writes (its name) when imported."""
    marker = folder / "planted-module-ran"
    for name in ("json", "torch", "revstudio"):
        (folder / f"{name}.py").write_text(
            f"import pathlib\npathlib.Path({str(marker)!r}).write_text({name!r})\nraise SystemExit(3)\n",
            encoding="utf-8")
    return marker

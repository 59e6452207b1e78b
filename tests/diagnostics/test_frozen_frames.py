"""``memory --top``'s "allocated at" column in the frozen app (PyInstaller, packaging/revstudio.spec).

There every module is compiled with its path relative to the app's folder (``sys._MEIPASS``):
``revstudio/diagnostics/memory_tracker.py``, ``torch/nn/modules/module.py``, ``contextlib.py``. The
real build named the tracker's own ``__torch_dispatch__`` as where every tensor was allocated. Here the
tracker and two stand-ins are compiled the same way, in a process made to look frozen.
"""
from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
TRACKER = "revstudio/diagnostics/memory_tracker.py"


def _compiled(source: str, relative: str, monkeypatch: pytest.MonkeyPatch, name: str) -> types.ModuleType:
    """A module whose code names ``relative`` as its file, as the frozen app's modules do."""
    module = types.ModuleType(name)
    module.__file__ = str(ROOT / relative)
    monkeypatch.setitem(sys.modules, name, module)
    exec(compile(source, relative, "exec"), module.__dict__)
    return module


@pytest.fixture
def frozen_tracker(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(ROOT), raising=False)
    source = (ROOT / TRACKER).read_text(encoding="utf-8")
    return _compiled(source, TRACKER, monkeypatch, "revstudio.diagnostics.memory_tracker")


def test_the_frozen_apps_allocations_name_the_layer_not_the_tracker(frozen_tracker, monkeypatch) -> None:
    layer = _compiled("import torch\n\ndef grow(x):\n    return torch.cat([x, x])\n", "mylayers.py",
                      monkeypatch, "mylayers")
    # a standard-library frame between them (frozen: "contextlib.py"), never the answer
    stdlib = _compiled("def call(f, x):\n    return f(x)\n", "contextlib.py", monkeypatch, "_frozen_contextlib")
    x = torch.ones(64)
    with frozen_tracker.LiveTensorTracker(explain=True) as tracker:
        y = stdlib.call(layer.grow, x)
    places = [t["where"] for t in tracker.peak_tensors()]
    del y
    assert places == ["mylayers.py:4 grow"], places


def test_revstudios_own_frames_are_named_by_their_place_in_the_package(frozen_tracker, monkeypatch) -> None:
    layer = _compiled("import torch\n\ndef grow(x):\n    return x * 3\n", "revstudio/nodes/fake_layer.py",
                      monkeypatch, "revstudio.nodes.fake_layer")
    x = torch.ones(8)
    with frozen_tracker.LiveTensorTracker(explain=True) as tracker:
        y = layer.grow(x)
    places = [t["where"] for t in tracker.peak_tensors()]
    del y
    assert places == ["revstudio/nodes/fake_layer.py:4 grow"], places

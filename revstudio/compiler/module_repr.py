"""What ``print(model)`` shows: a notebook prints a cell's model whole, so a model (or a group
body) of hundreds of layers lists its first and last ones and says how many it leaves out;
``named_children()`` has every one. Up to ``HEAD + TAIL + SLACK`` layers print as torch prints them.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn

HEAD, TAIL, SLACK = 20, 5, 5
REGIONS_SHOWN = 5


def short_repr(module: nn.Module) -> str:
    children = list(module.named_children())
    if len(children) <= HEAD + TAIL + SLACK:
        return nn.Module.__repr__(module)

    def child(name: str, layer: nn.Module) -> str:
        return f"({name}): " + repr(layer).replace("\n", "\n  ")

    extra = module.extra_repr()
    lines = extra.split("\n") if extra else []
    lines += [child(n, m) for n, m in children[:HEAD]]
    lines.append(f"... {len(children) - HEAD - TAIL} more layers (named_children() lists every one) ...")
    lines += [child(n, m) for n, m in children[-TAIL:]]
    return module._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


def regions_text(regions: Sequence[Any]) -> str:
    """``region-a (20 nodes), region-b (8 nodes)``, the first few and how many more."""
    shown = ", ".join(f"{r.id} ({len(r.nodes)} nodes)" for r in regions[:REGIONS_SHOWN]) or "none"
    more = len(regions) - REGIONS_SHOWN
    return shown + (f" and {more} more (model.regions)" if more > 0 else "")

"""``MemoryEstimate.activation_bytes(mode)`` checks the mode once, not once per node: an undo to a
state the editor's memo holds shows its figures at once, and the status bar, the region badges and
the Inspector ask for these totals ~18 times (18,000 mode checks at 1,007 nodes, in the undo's
first paint). The totals and the refusal of an unknown mode are as before."""
from __future__ import annotations

import pytest

import revstudio.diagnostics.estimate as estimate_module
from revstudio.core.generate import large_graph
from revstudio.diagnostics.check import full_check
from revstudio.diagnostics.estimate_units import MODES


def test_activation_bytes_checks_the_mode_once_and_sums_every_node(monkeypatch):
    est = full_check(large_graph(100)).estimate
    assert len(est.nodes) > 100
    checked: list[str] = []
    check = estimate_module.known_mode

    def counted(mode):
        checked.append(mode)
        return check(mode)

    monkeypatch.setattr(estimate_module, "known_mode", counted)
    for mode in MODES:
        checked.clear()
        total = est.activation_bytes(mode)
        assert checked == [mode]  # was one check per node
        assert total == sum(node.activation_bytes[mode] for node in est.nodes.values())
    assert est.activation_bytes("reversible") < est.activation_bytes("standard")
    with pytest.raises(ValueError, match="mode 'fast' is not known"):
        est.activation_bytes("fast")

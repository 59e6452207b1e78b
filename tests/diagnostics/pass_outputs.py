"""Every figure the editor's whole-graph passes produce (the region analysis, the memory estimate,
its peak walks and a budget's cuts), serialised and hashed per graph, batch and device: the
optimised passes must give these byte for byte (``test_pass_outputs.py``; regenerate the recorded
digests with ``PYTHONPATH=. python tests/diagnostics/pass_outputs.py`` only for a change meant to
alter results)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
RECORDED = Path(__file__).with_name("data") / "pass_outputs.json"

from random_revnets import random_revnet, random_seqnet, random_skipnet  # noqa: E402

from revstudio.core.examples import example_projects  # noqa: E402
from revstudio.core.generate import glow_repeat, large_graph, random_graph, revnet_chain  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.diagnostics.budget import budget_choice, budget_peak  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402

BUDGETS = (0, 1 << 16, 1 << 20)
CASES = ((1, "cpu"), (8, "cpu"), (8, "cuda"), (32, "cpu"))


def plain(x: Any) -> Any:
    """``x`` as JSON-able data, every field of dataclasses and plain objects included."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {"__cls": type(x).__name__, **{f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)}}
    if isinstance(x, dict):
        return {repr(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, (set, frozenset)):
        return sorted(repr(v) for v in x)
    if isinstance(x, (int, float, str, bool)) or x is None:
        return x
    fields = getattr(x, "__dict__", None)
    if fields is not None:
        return {"__cls": type(x).__name__,
                **{k: plain(v) for k, v in fields.items() if not callable(v) and not k.startswith("_")}}
    return repr(x)


def graphs() -> dict[str, Graph]:
    found = dict(example_projects())
    found["large100"] = large_graph(100)
    found["chain4"], found["chain4c"] = revnet_chain(4), revnet_chain(4, wired=False)
    found["glow3"] = glow_repeat(3)
    for seed in range(8):
        found[f"rev{seed}"], found[f"seq{seed}"] = random_revnet(seed), random_seqnet(seed)
        found[f"skip{seed}"], found[f"any{seed}"] = random_skipnet(seed), random_graph(seed)
    return found


def outputs(graph: Graph, batch: int, device: str) -> dict[str, Any]:
    report = full_check(graph, batch=batch, device=device)
    row: dict[str, Any] = {"regions": plain(report.regions), "near": plain(report.near_misses),
                           "diagnostics": [repr((d.node, d.port, d.message)) for d in report.diagnostics]}
    est = report.estimate
    if est is not None:
        row.update(json=est.to_json(), summary=est.summary_lines(), peaks=plain(est.peaks),
                   breaks=list(est.batch_breaks), facts=plain(est.facts))
        if batch == 8:
            for budget in BUDGETS:
                row[f"budget {budget}"] = plain(budget_choice(graph, report, budget, batch=batch))
                row[f"budget peak {budget}"] = plain(budget_peak(graph, report, budget, batch=batch))
    return row


def digest(row: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(row, sort_keys=True, default=repr).encode()).hexdigest()


def digests() -> dict[str, str]:
    return {f"{name} batch {batch} {device}": digest(outputs(graph, batch, device))
            for name, graph in graphs().items() for batch, device in CASES}


if __name__ == "__main__":
    RECORDED.write_text(json.dumps(digests(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORDED}")

"""The inspector's read-only facts, as rich text: the project's summary, a selection's sums, one
node's shapes, counts, memory per mode, region and diagnostics (from the latest check report)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from revstudio.core.graph import Graph, Node
from revstudio.core.grouping import group_users
from revstudio.core.spec import registry
from revstudio.diagnostics.estimate import precision_note
from revstudio.qt import report_facts as rf
from revstudio.qt.document import Document
from revstudio.qt.inspector_text import note, table
from revstudio.qt.memory_figures import ORDER, batch_label, estimate_of, node_lines


class InspectorFacts:
    """The facts half of :class:`revstudio.qt.inspector.Inspector`."""

    document: Document
    graph: Graph
    selection: list[str]

    def _summary_facts(self, report: Any) -> str:
        g = self.document.graph
        if len(self.selection) > 1:
            return self._selection_facts(report)
        if self.graph is not g:  # a group body: its own counts; shapes live on its Group nodes
            # every node naming it, in the project and in the bodies (``block/coupling``: a coupling's F
            # inside a repeated block), as Ungroup and the group's rename see them
            name = next((k for k, body in g.groups.items() if body is self.graph), None)
            users = group_users(g, name) if name is not None else []
            return table([("Nodes", str(len(self.graph.nodes))), ("Edges", str(len(self.graph.edges))),
                           ("Used by", ", ".join(users) or "no node yet")])
        rows = [("Nodes", str(len(g.nodes))), ("Edges", str(len(g.edges))), ("Groups", str(len(g.groups)))]
        if report is not None:
            errors, warnings = rf.counts(report)
            params = rf.human_count(getattr(report, "parameters", None))
            # with errors, layers past the break have no shape, so no size: the count is partial
            rows.append(("Parameters", f"{params} so far (fix the errors for the total)" if errors else params))
            rows.append(("Diagnostics", f"{errors} error{'s' * (errors != 1)}, "
                                        f"{warnings} warning{'s' * (warnings != 1)}"))
            rows.append(("Reversible regions", str(len(getattr(report, "regions", None) or []))))
            est = estimate_of(report)
            if est is not None:
                partial = "; so far (fix the errors for the total)" if errors else ""
                rows.append(("Memory figures",
                             f"{batch_label(est)}; weights {rf.human_bytes(est.parameter_bytes())}{partial}"))
                precision = str((g.training or {}).get("precision") or "fp32")
                caution = precision_note(precision)
                if caution:  # the project trains under autocast: these are not its steps' figures
                    rows.append(("Precision", f"{precision} runs: {caution}"))
                rows += [(f"Memory ({m})", f"kept {rf.human_bytes(est.activation_bytes(m))}, "
                                           f"peak {rf.human_bytes(est.peak_bytes(m))}") for m in ORDER]
                from revstudio.diagnostics.explain import mode_notes

                rows += [("Why", why) for why in mode_notes(est)]
        if self.document.analysis_error:
            rows.append(("Analysis", self.document.analysis_error))
        return table(rows)

    def _selection_facts(self, report: Any) -> str:
        """Several nodes selected: their own figures, summed (not the project's)."""
        ids = [n for n in self.selection if n in self.graph.nodes]
        types: dict[str, int] = {}
        for nid in ids:
            types[self.graph.nodes[nid].type] = types.get(self.graph.nodes[nid].type, 0) + 1
        rows = [("Selected", ", ".join(f"{n} {t}" for t, n in sorted(types.items())))]
        sub = self._body_report(report)
        infos = [rf.node_info(sub, nid) for nid in ids]
        counted = [int(i.parameters) for i in infos if i is not None and getattr(i, "parameters", None) is not None]
        if counted:
            partial = len(counted) < len(ids)
            rows.append(("Parameters", rf.human_count(sum(counted)) + (" (of the nodes with shapes)" if partial else "")))
        if sub is report:
            kept: dict[str, int] = {}
            for nid in ids:
                for mode, n in (rf.node_memory(report, nid) or {}).items():
                    kept[mode] = kept.get(mode, 0) + n
            rows += [(f"Kept ({m})", rf.human_bytes(kept[m])) for m in ORDER if m in kept]
            where = rf.regions_by_node(report)
            regions = sorted({rf.region_label(*where[nid]) for nid in ids if nid in where})
            rows.append(("Reversible", ", ".join(f"in {r}" for r in regions) if regions else "none of them"))
        picked = Counter(ids)
        errors = sum(picked[d.node] for d in getattr(sub, "diagnostics", None) or ()
                     if d.severity == "error" and d.node in picked)
        if errors:
            rows.append(("Diagnostics", f"{errors} error{'s' * (errors != 1)} in the selection"))
        return table(rows)

    def _body_report(self, report: Any) -> Any:
        """The report that covers the graph shown: the main one or a group body's."""
        if self.graph is self.document.graph:
            return report
        name = next((n for n, b in self.document.graph.groups.items() if b is self.graph), None)
        return (getattr(report, "groups", None) or {}).get(name) if name else None

    def _node_facts(self, report: Any, node: Node) -> str:
        rows: list[tuple[str, str]] = []
        sub = self._body_report(report)
        info = rf.node_info(sub, node.id)
        if info is not None:
            for port, shape in (getattr(info, "inputs", None) or {}).items():
                rows.append((f"in · {port}", rf.format_shape(shape)))
            spec = registry.find(node.type)  # which axis is time: (time, features) data read the other way round
            read = spec.reads((getattr(info, "inputs", None) or {}).get("in")) if spec is not None else None
            if read:
                rows.append(("Reads", read))
            for port, shape in (getattr(info, "outputs", None) or {}).items():
                rows.append((f"out · {port}", rf.format_shape(shape)))
            # a node that failed (a missing plugin's type, say) has no count: "0" would be a claim
            counted = getattr(info, "parameters", None) if getattr(info, "ok", True) else None
            rows.append(("Parameters", rf.human_count(counted)))
        elif sub is None:
            rows.append(("Shapes", "not analysed yet for this group; use it from a Group node"))
        mem = rf.node_memory(sub, node.id) if sub is report else None
        if mem:
            pbytes = rf.node_parameter_bytes(report, node.id)
            if pbytes:
                rows.append(("Weights", rf.human_bytes(pbytes)))
            rows += node_lines(report, node.id) or [(f"Kept ({m})", rf.human_bytes(b)) for m, b in mem.items()]
        region = rf.region_of(sub, node.id) if sub is report else None
        if region is not None:
            index, reg = region
            label = rf.region_label(index, reg)
            saved = rf.region_saved(report, label)
            rows.append(("Reversible", f"in {label}" + (f", saves {rf.human_bytes(saved)}" if saved else "")))
        elif sub is report and getattr(report, "estimate", None) is not None:
            rows.append(("Reversible", "no: runs with plain autograd"))
        text = table(rows)
        diags = rf.diagnostics_for(sub, node.id)
        misses = rf.near_misses_for(sub, node.id)
        for d in diags:
            if d not in misses:
                text += note(d.severity, d.message, "@error" if d.severity == "error" else "@warning")
        for d in misses:
            text += note("why not reversible", d.message, "@warning")
        return text


"""``revstudio memory FILE --depth 1,2,4,8 [--depth-node NAME]``: memory against depth.

For each depth the project's Repeat node (the only one, or ``--depth-node``) runs that many
copies; one training step per mode is measured as ``revstudio memory`` measures it
(``memory.measure_modes``: CUDA allocator statistics, or exact live-tensor accounting on the
CPU) beside the static estimate, and the least-squares growth per added block says in bytes
how flat each mode stays.
"""
from __future__ import annotations

import argparse
from typing import Any

from revstudio.cli import CliError, json_text, printable
from revstudio.diagnostics.depth_sweep import DepthError, growth_words, parse_depths, pick_repeat, slope

from ._runargs import graph_errors, load_checked, refuse_unfit, resolve_device
from .memory import MODES, estimate_note, measure_modes, measured_where, method, where_words

SHOWN = ("standard", "checkpoint", "reversible")  # the table's columns: the most memory first


def depths_arg(text: str) -> list[int]:
    """argparse type for --depth."""
    try:
        return parse_depths(text)
    except DepthError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_UNSET: Any = object()


def cli_flag(name: str, value: Any = _UNSET) -> str:
    """How the command's messages name an option: '--top', '--depth-node blocks', '--depth 1,2,4,8'."""
    if value is _UNSET:
        return f"--{name}"
    return f"--{name} {','.join(map(str, value)) if isinstance(value, list) else value}"


def refuse_other_options(args: argparse.Namespace, flag: Any = cli_flag) -> None:
    """--depth measures peaks per depth; the options that add other sections are refused, not dropped.
    ``flag``: how the message names an option (``rs.memory`` names its keywords)."""
    if args.depth is None:
        if args.depth_node is not None:  # ('' and rs.memory's depth_node=0 too: they went on to a sweep of no depths)
            raise CliError(f"{flag('depth-node', args.depth_node)} names the Repeat node a depth sweep varies; "
                           f"add the depths, e.g. {flag('depth', [1, 2, 4, 8])}", 2)
        return
    given = [flag(name) for name, value in (("top", args.top or None), ("budget", args.budget),
                                            ("repeat", args.repeat)) if value is not None]
    if given:
        raise CliError(f"{flag('depth')} measures each depth's peaks only; leave out {' and '.join(given)} "
                       f"(measure one depth with them without {flag('depth')})", 2)


def sweep(path: str, batch: int, depths: list[int], node: str | None, device: Any, seed: int = 0,
          precision: str = "fp32", graph: Any = None) -> dict[str, Any]:
    """The depth sweep of project ``path`` as ``--depth --json`` prints it (``rs.memory(depth=...)``'s
    too: ``graph`` the project in memory that ``path`` names); CliError where the command exits 1 or 2."""
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate import input_dtype, precision_note

    if precision == "fp16" and device.type != "cuda":
        raise CliError("--precision fp16 needs a CUDA device; on the CPU use --precision bf16 or fp32", 2)
    graph, _report = load_checked(path, batch=batch, device=device, graph=graph)
    try:
        repeat = pick_repeat(graph, node)
    except DepthError as exc:
        raise CliError(f"{path}: {exc}", 2) from None
    modelled = precision_note(precision) is None
    checked = []  # every depth checked and sized before any is run: a refusal comes before minutes of steps
    for depth in depths:
        deep = graph.copy()
        deep.set_param(repeat, "times", depth)
        report = full_check(deep, batch=batch, device=device)
        if not report.valid:
            raise CliError(f"{path}: with {repeat} at times {depth} the graph has errors: {report.errors[0]}", 1)
        refuse_unfit(f"{path} ({repeat} times {depth})", deep, report, batch, input_dtype(deep), device)
        checked.append((depth, deep, report))
    rows: list[dict[str, Any]] = []
    for depth, deep, report in checked:
        with graph_errors(path):
            measured = measure_modes(deep, batch, device, 1, seed, precision=precision)
        est = report.estimate.to_json().get("modes", {}) if report.estimate is not None and modelled else {}
        modes: dict[str, dict[str, Any]] = {}
        for mode in MODES:
            e = est.get(mode, {}).get("peak_bytes")
            modes[mode] = {"peak_bytes": int(measured[mode]["peak_bytes"]),
                           "estimate_peak_bytes": int(e) if isinstance(e, int) else None}
        rows.append({"depth": depth, "parameters": int(report.parameters),
                     "network_digest": measured_where(deep)["network_digest"], "modes": modes})
    slopes = {mode: {kind: _rounded(slope(depths, [r["modes"][mode][key] for r in rows]))
                     for kind, key in (("measured", "peak_bytes"), ("estimate", "estimate_peak_bytes"))}
              for mode in SHOWN}
    # a figure quoted from the sweep names where it was measured: the versions and threads once (the
    # same for every depth), the network a row (each depth is another network)
    where = {k: v for k, v in measured_where(graph).items() if k != "network_digest"}
    return {"file": path, "batch": batch, "device": str(device), "precision": precision, "node": repeat,
            "depths": depths, "measured_with": method(device), "rows": rows,
            "bytes_per_block": slopes, "estimate_note": estimate_note(device, precision), **where}


def _rounded(value: float | None) -> int | None:
    return None if value is None else int(round(value))


def run(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    out = sweep(args.file, args.batch, args.depth, args.depth_node, device, args.seed, args.precision)
    if args.json:
        print(json_text(out))
    else:
        print(printable(table(out)))
    return 0


def table(out: dict[str, Any]) -> str:
    """The sweep as text: one row per depth, per mode the measured peak and the estimate's."""
    from revstudio.core.digest import short
    from revstudio.diagnostics.estimate import fmt_bytes

    head = ["times", "parameters"] + [f"{m} peak" for m in SHOWN] + ["network"]
    rows = [head]
    for r in out["rows"]:
        cells = [str(r["depth"]), f"{r['parameters']:,}"]
        for mode in SHOWN:
            m = r["modes"][mode]
            est = m["estimate_peak_bytes"]
            cells.append(fmt_bytes(m["peak_bytes"]) + (f" (est {fmt_bytes(est)})" if est is not None else ""))
        cells.append(short(r.get("network_digest")))
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    cast = "" if out["precision"] == "fp32" else f", forward under {out['precision']} autocast"
    lines = [f"{out['file']}: peak of one training step as Repeat node {out['node']} runs more copies, "
             f"batch {out['batch']}, {out['device']}{cast} ({out['measured_with']}; bytes exclude weights and "
             "inputs)"]
    if "versions" in out:
        lines.append(f"  {where_words(out)}")
    if out.get("estimate_note"):
        lines.append(f"  {out['estimate_note']}")
    for r in rows:
        lines.append("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
    if len(out["depths"]) < 2:
        lines.append("  growth per added block: give two depths or more to see it")
    else:
        lines.append("  growth per added block (least squares): "
                     + growth_words(out["bytes_per_block"], fmt_bytes))
    return "\n".join(lines)

"""Shared pieces of the commands that run a model (``gradcheck``, ``memory``).

Loading and checking a project, and turning ``--device`` / ``--batch`` into
values, with errors a user can act on (exit 2 for bad usage or files, exit 1
for a graph with errors).
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import shlex
import sys
from collections.abc import Iterator
from typing import Any

from revstudio.cli import CliError
from revstudio.core.check import Report
from revstudio.core.graph import Graph


def positive_int(text: str) -> int:
    """argparse type for --batch: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; use e.g. --batch 4") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small; use a batch of at least 1")
    if value > 1 << 16:
        raise argparse.ArgumentTypeError(f"{value} is too large; use a batch of at most {1 << 16}")
    return value


def load_checked(path: str, batch: int = 1, device: Any = None, graph: Graph | None = None) -> tuple[Graph, Report]:
    """Load and fully check a project; a graph with errors is a CliError with exit 1.
    ``device``: "cpu" or the torch.device the estimate is for (None: the project's;
    see ``full_check``). ``graph``: the project already in memory (the Python API's), which
    ``path`` only names."""
    from revstudio.clicmd.check import load_project
    from revstudio.diagnostics.check import full_check

    shows = "rs.check(graph)" if graph is not None else f"'revstudio check {path}'"
    if graph is None:
        graph = load_project(path)
    report = full_check(graph, batch=batch, device=device)
    if not report.valid:
        lines = [f"{path}: the graph has errors; fix them first ({shows} shows all):"]
        lines += [f"  {d}" for d in report.errors[:10]]
        if len(report.errors) > 10:
            lines.append(f"  ... and {len(report.errors) - 10} more")
        raise CliError("\n".join(lines), 1)
    missing = missing_io(graph, report)
    if missing:
        raise CliError(f"{path}: {missing}", 1)
    return graph, report


def missing_io(graph: Graph, report: Report) -> str | None:
    """What a graph without an Input or an Output node lacks and what to add, naming the output
    nothing reads (where the Output goes); None when it has both."""
    lacks = [t for t in ("Input", "Output") if not any(n.type == t for n in graph)]
    if not lacks:
        return None
    if not graph.nodes:
        return "the project is empty: draw a network (an Input node, layers, an Output node) first"
    todo = []
    if "Input" in lacks:
        todo.append("add an Input node with the shape of one sample (its shape parameter) and wire it into "
                    "the first layer")
    if "Output" in lacks:
        order = [n for n in getattr(report, "order", []) if n in graph.nodes] or list(graph.nodes)
        loose = [f"{n}.{port}" for n in reversed(order) if graph.nodes[n].type != "Output"
                 for port in graph.ports(n)[1] if not graph.edges_from(n, port)]
        todo.append(f"add an Output node and wire {loose[0]} (which nothing reads) into it" if loose
                    else "add an Output node after the last layer")
    return (f"the graph has no {' and no '.join(lacks)} node: running it feeds data into an Input node and "
            f"takes the loss at an Output node; {' and '.join(todo)}")


def resolve_device(text: str | None) -> Any:
    """'auto' (or None: CUDA when available) or any device torch names ('cpu', 'cuda:1', 'mps', 'xpu')
    -> a torch.device this machine has; the names and the check are ``rs.compile``'s
    (``device_probe.device_name``, ``compiler.devices``)."""
    from revstudio.compiler.devices import DeviceUnavailable, flag_refusal, usable_device
    from revstudio.diagnostics.device_probe import command_line_device

    try:
        if text is not None:
            command_line_device(text)
        return usable_device(text)
    except (RuntimeError, ValueError) as exc:
        raise CliError(str(exc) if str(exc).startswith("--device") and not isinstance(exc, DeviceUnavailable)
                       else flag_refusal(text, exc), 2) from None


def refuse_data_elsewhere(file: str, specs: dict[str, str | None]) -> None:
    """Refuse a relative data path (``specs``: {the option: the spec given}) that names no file
    from the folder of project ``file`` (where relative data paths start) but does name one from
    the current folder, saying which path to give: the command would stop at "no such file"
    naming a path the user never typed. ``train`` and ``gradcheck`` say the same."""
    from revstudio.training.data import found_here

    base = os.path.dirname(os.path.abspath(file))
    found = found_here(specs, base)
    if found is not None:
        flag, path, here, given = found
        raise CliError(f"{flag} {specs[flag]}: a relative data path starts at the project's folder ({base}), "
                       f"where there is no {path}; the one in the current folder is {here}: give "
                       f"{flag} {shlex.quote(given)}")


def compile_error(exc: Exception) -> CliError | None:
    """The compiler's own error (names the node), or a plugin's failure (names the plugin), as exit 1;
    None for anything else."""
    try:
        from revstudio.compiler import CompileError
    except ImportError:  # pragma: no cover - compiler always ships with the package
        return None
    if isinstance(exc, CompileError):
        return CliError(f"cannot compile the graph: {exc}", 1)
    from revstudio.core.plugins import PluginError, blame_plugin
    from revstudio.core.spec import registry

    if isinstance(exc, PluginError):  # a plugin's layer broke its contract: it names the node
        return CliError(str(exc), 1)
    blamed = blame_plugin(registry, exc)  # raised inside a plugin's own code, not revstudio's
    return CliError(blamed, 1) if blamed else None


def whole_number(text: str, minimum: int, example: str = "") -> int:
    """argparse helper: ``text`` as a whole number >= ``minimum``, or a message saying what to type."""
    hint = f"; use e.g. {example}" if example else ""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number{hint}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{value} is negative; use 0 (none) or more" if minimum == 0
                                         else f"{value} is too small; use at least {minimum}")
    return value


THREADS_HELP = ("CPU threads of the process (torch.set_num_threads; none: torch's own count, recorded "
                "beside the result): the count changes the last bits and the speed, so the same count repeats "
                "a result bit for bit")


def threads(text: str) -> int:
    """argparse type for --threads: a whole number from 1 to ``THREADS_MAX`` (more than the machine's CPUs
    is allowed, and said: ``training.threads``)."""
    from revstudio.training.config import THREADS_MAX  # (torch-free)

    value = whole_number(text, 1, "--threads 1")
    if value > THREADS_MAX:
        raise argparse.ArgumentTypeError(f"{value} is too large; use at most {THREADS_MAX} threads")
    return value


@contextlib.contextmanager
def threads_set(count: int | None) -> Iterator[None]:
    """The CPU threads ``--threads`` asks for, set before any work and put back after (None: torch's
    default, untouched); a note on stderr where it is more than this machine's CPUs."""
    if count is None:
        yield
        return
    import torch

    from revstudio.training.threads import apply, over_note

    before = torch.get_num_threads()
    apply(count)
    note = over_note(count, "--threads")
    if note:
        print(f"note: {note}", file=sys.stderr)
    try:
        yield
    finally:  # (a command run in process, cli.main in a notebook: its threads as they were)
        torch.set_num_threads(before)


NO_BUDGET = "none"  # --memory-budget none: run without the project's budget


def memory_amount(text: str) -> int | str:
    """argparse type for a memory budget: bytes, or an amount such as 64MiB or 1.5GB; ``none``
    (:data:`NO_BUDGET`) sets none, whatever the project's ``training.memory_budget``."""
    from revstudio.diagnostics.budget import parse_bytes

    if text.strip().lower() == NO_BUDGET:
        return NO_BUDGET
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count(text: str) -> int:
    """argparse type for counts such as --top: a whole number >= 0."""
    return whole_number(text, 0, "--top 10")


REPEAT_MAX = 1000  # timed steps per mode: a median of more says nothing new, and 10**20 never ended


def repeats(text: str) -> int:
    """argparse type for --repeat: timed steps, 1 to :data:`REPEAT_MAX`."""
    value = whole_number(text, 1, "--repeat 5")
    if value > REPEAT_MAX:
        shown = text if len(text) <= 20 else f"{text[:20]}..."
        raise argparse.ArgumentTypeError(f"{shown} is too many timed steps; use at most {REPEAT_MAX} "
                                         "(the median of 5, the default, is steady already)")
    return value


def seed(text: str) -> int:
    """argparse type for --seed: a whole number from 0 to ``SEED_MAX``."""
    from revstudio.training.config import SEED_MAX

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; use e.g. --seed 1") from None
    if not 0 <= value <= SEED_MAX:
        shown = text if len(text) <= 20 else f"{text[:20]}..."
        raise argparse.ArgumentTypeError(f"{shown} is out of range; use a seed from 0 to {SEED_MAX}")
    return value


def port(text: str) -> int:
    """argparse type for --master-port: a TCP port, 1 to 65535."""
    value = whole_number(text, 1, "--master-port 29500")
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port; use 1 to 65535, e.g. --master-port 29500")
    return value


def tolerance(text: str) -> float:
    """argparse type for --tolerance: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a tolerance; use a number of 0 or more, e.g. 1e-8")
    return value


@contextlib.contextmanager
def graph_errors(path: str) -> Iterator[None]:
    """Running the graph of ``path``: the compiler's errors and bad values (they name the
    node or value) become exit 1 with the file named; anything else is a bug and rises."""
    try:
        yield
    except Exception as exc:
        err = compile_error(exc)
        if err is not None:
            raise err from None
        if isinstance(exc, ValueError):
            raise CliError(f"{path}: {exc}", 1) from None
        raise


def machine_memory(device: Any) -> tuple[int | None, str]:
    """(bytes, what) a run on ``device`` can use at most: the GPU's memory, or on the CPU the
    smallest of physical memory, the cgroup limit and this process's address-space limit."""
    if getattr(device, "type", "cpu") == "cuda":
        import torch

        return int(torch.cuda.get_device_properties(device).total_memory), str(device)
    limits: list[tuple[int, str]] = []
    try:
        limits.append((os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "this machine"))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            text = f.read().strip()
        if text.isdigit():
            limits.append((int(text), "this container"))
    except OSError:
        pass
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            limits.append((int(soft), "this process (its memory limit)"))
    except (ImportError, OSError, ValueError):
        pass
    if not limits:
        return None, "this machine"
    return min(limits)


def refuse_unfit(path: str, graph: Graph, report: Report, batch: int, dtype: str, device: Any) -> None:
    """Refuse, before compiling or allocating, a run whose sizes cannot fit or take minutes to build."""
    from revstudio.diagnostics.sizes import fit_problem

    available, where = machine_memory(device)
    problem = fit_problem(graph, report, batch, dtype, available, where)
    if problem is not None:
        raise CliError(f"{path}: {problem}", 1)

"""The CPU thread count of a process: ``training.threads`` / ``--threads N`` applied before any work.

The count of intra-op threads decides how torch splits a CPU reduction, so it changes a run's last
bits (and its speed): two runs with the same count repeat each other bit for bit, a run with another
count differs in the last bits. Under ``--nproc K`` each process takes N threads of its own (K * N
in all). More threads than the machine has CPUs is allowed, as ``torch.set_num_threads`` allows it
(the count, not the cores, decides the numbers, so a run of another machine can be repeated here),
and said in a note: the threads then share the CPUs, which is slower.
"""
from __future__ import annotations

import os
from typing import Any


def machine_cpus() -> int:
    """The CPUs this process may run on (its affinity, as a container or ``taskset`` limits it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # (no affinity on macOS and Windows)
        return os.cpu_count() or 1


def apply(threads: int | None) -> int:
    """Set this process's intra-op thread count (None: leave torch's default) and, where torch still
    allows it, its inter-op threads to the same; returns the intra-op count now in effect."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
        try:  # (only before inter-op work started and only once per process: else it stays as it is,
            torch.set_num_interop_threads(threads)  # which never changes a result, only the overlap)
        except RuntimeError:
            pass
    return torch.get_num_threads()


def over_note(threads: int | None, key: str = "training.threads") -> str | None:
    """Words for a count above the machine's CPUs, else None."""
    cpus = machine_cpus()
    if threads is None or threads <= cpus:
        return None
    return (f"{key} {threads} is more than the {cpus} CPU{'s' * (cpus != 1)} this process may use: the "
            f"threads share them, which is slower; the numbers are those of {threads} threads")


def threads_changed_note(then: object, now: int) -> str | None:
    """Words for a resume on another thread count than the run's last start (``then``, from its
    checkpoint; None or a non-number for a checkpoint that does not record it), else None. (Copied
    verbatim into an exported training script.)"""
    if isinstance(then, bool) or not isinstance(then, int) or then == now:
        return None
    return (f"the run trained on {then} CPU thread{'s' * (then != 1)} before and goes on with {now}: the "
            f"losses from here may differ in their last bits from those of a run that kept {then} "
            f"(training.threads, --threads N)")


__all__ = ["apply", "machine_cpus", "over_note", "threads_changed_note"]


def apply_for_run(threads: int | None, resume: dict[str, Any] | None, resume_dir: str | None) -> int | None:
    """Set the process's CPU threads to a run's ``training.threads`` (:func:`apply`); returns the count it
    had where it changed it, else None. A resumed checkpoint from before checkpoints recorded the
    count is given the one its run's environment.json recorded (rewritten as this start goes on), so
    the started row can say a resume changed it."""
    import torch

    if resume is not None and "threads" not in resume and resume_dir:
        from .run_compare import provenance

        resume["threads"] = provenance(resume_dir)["environment"].get("threads")
    if threads is None:
        return None
    before = torch.get_num_threads()
    apply(threads)
    return before


def restore(count: int) -> None:
    """Put back the CPU threads :func:`apply_for_run` found (an in-process run ends)."""
    import torch

    torch.set_num_threads(count)

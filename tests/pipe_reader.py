"""A reader that goes away: a command's output read by ``head -n N``, for tests of how it ends."""
from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def read_then_leave(argv: Sequence[str], lines: int, cwd: str | Path,
                    env: Mapping[str, str]) -> tuple[int, list[str], str]:
    """Run ``argv``, read ``lines`` lines of its output, then close the pipe as ``head -n lines``
    does; return (its exit code, the lines read, all it wrote to stderr)."""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=dict(env))
    try:
        assert proc.stdout is not None and proc.stderr is not None
        read = [proc.stdout.readline().decode() for _ in range(lines)]
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, read, err

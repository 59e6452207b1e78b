"""Exported scripts run in children forked from one process that has imported torch already.

Starting ``python -I`` and importing torch costs 1.5-2 s of CPU, and the ``torch._dynamo`` that the
first optimizer imports 2 s more: most of what a short exported training run takes, and the codegen
tests run such scripts about a hundred times. A *zygote*, a ``python -I`` child started once per test
process, imports both (and nothing of revstudio) and forks one child per script. Each child is still a process of its own: its own ``__main__`` (the script,
through the very ``-c`` program ``run_script`` always ran), working folder, environment, standard
streams (to files here, read back whole) and exit status (a signal reads as ``-N``, as in
``subprocess``); revstudio stays unimportable (the zygote never imported it and the blocker is in
place before the script runs). What a fork cannot redo is what Python and torch read at start-up:
the interpreter's flags (``-I``, as before) and the import-time environment, which is the one every
``run_script`` gives (``OMP_NUM_THREADS=1``, no ``PYTHON*`` variables).
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

# Runs in the zygote. After a fork the child returns from serve() with its streams, folder, environment
# and argv set, and goes on to the program that follows (the blocker and runpy, as a fresh child did).
SERVE = r'''
import json
import os
import sys

import torch  # noqa: F401  the seconds every script spent starting; no torch op runs here (no threads)
# the first optimizer a script builds imports torch._dynamo (torch.optim's _disable_dynamo): 2 s of CPU
# (sympy, fx, ...) that a 6-step run spent again in every child, where the run itself took 0.13 s;
# importing it starts no thread either
import torch._dynamo  # noqa: F401


def serve():
    ask = os.fdopen(os.dup(0), "rb", buffering=0)
    tell = os.fdopen(os.dup(1), "wb", buffering=0)
    while True:
        line = ask.readline()
        if not line:
            os._exit(0)
        job = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            ask.close()
            tell.close()
            for fd, (name, flags) in enumerate([(os.devnull, os.O_RDONLY),
                                                (job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                                (job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)]):
                opened = os.open(name, flags, 0o644)
                os.dup2(opened, fd)
                os.close(opened)
            os.chdir(job["cwd"])
            os.environ.clear()
            os.environ.update(job["env"])
            sys.argv = ["-c", *job["argv"]]
            return
        tell.write((json.dumps({"pid": pid}) + "\n").encode())
        _, status = os.waitpid(pid, 0)
        tell.write((json.dumps({"status": status}) + "\n").encode())


serve()
'''


class Zygote:
    """One zygote process; ``run`` forks a child of it per script, one at a time."""

    def __init__(self, program: str, env: dict[str, str]) -> None:
        # SERVE runs on one line of its own; on the program's first line where that is blank (BLOCKER's is),
        # so every line of the program keeps its number and a traceback reads as a fresh child's
        serve = f"exec(compile({SERVE!r}, '<zygote>', 'exec'))"
        first, _, rest = program.partition("\n")
        code = f"{serve}\n{rest}" if not first.strip() else f"{serve}\n{program}"
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.folder = Path(tempfile.mkdtemp(prefix="revstudio-zygote-"))
        self.pending = b""
        atexit.register(self.close)

    def _reply(self, timeout: float) -> dict[str, int]:
        """The zygote's next line (read from the pipe unbuffered, so select sees every byte not yet read)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, 4096)
            assert chunk, f"the zygote ended (exit status {self.proc.poll()}): no child can be forked"
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float
            ) -> subprocess.CompletedProcess[str]:
        assert self.proc.stdin is not None
        out, err = self.folder / "stdout", self.folder / "stderr"
        job = {"argv": argv, "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.flush()
        pid = self._reply(60)["pid"]
        try:
            status = self._reply(timeout)["status"]
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            self._reply(60)
            raise subprocess.TimeoutExpired(argv, timeout) from None
        return subprocess.CompletedProcess(argv, os.waitstatus_to_exitcode(status),
                                           out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8"))

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        for name in ("stdout", "stderr"):
            (self.folder / name).unlink(missing_ok=True)
        self.folder.rmdir()


_zygotes: dict[str, Zygote] = {}


def run_forked(program: str, argv: list[str], cwd: Path, env: dict[str, str], timeout: float
               ) -> subprocess.CompletedProcess[str]:
    """``python -I -c program *argv`` in ``cwd`` with ``env``, forked from a zygote that has torch."""
    key = json.dumps([program, env.get("OMP_NUM_THREADS")])
    if key not in _zygotes or _zygotes[key].proc.poll() is not None:
        _zygotes[key] = Zygote(program, env)
    return _zygotes[key].run(argv, cwd, env, timeout)

"""Where the wheel-install test's time goes (tests/packaging/test_install.py): each step, wall and CPU.

Builds the sdist, the wheel from it and the example plugin's wheel as the test's fixture does, then
makes the test's venv both ways in a scratch folder:

* new (the test today): ``venv --without-pip``, ``pip --dry-run --report`` of ``TORCH WHEELS``, the
  resolved third-party distributions hard-linked in (tests/packaging/venv_kit.py), ``pip install
  TORCH WHEELS`` for real;
* old (``--old``; about a minute here, minutes on a loaded machine): ``venv`` with ensurepip, ``pip
  install TORCH``, ``pip install WHEELS``: torch's 750 MB unpacked again.

    python benchmarks/bench_install_venv.py            # the new way (about 20 s on 2 quiet cores)
    python benchmarks/bench_install_venv.py --old      # and the old way, in the same run

CPU is this process's and its children's (user + system). Numbers: packaging/README.md and
benchmarks/README.md ("Test suite time").
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "packaging"))
import venv_kit  # noqa: E402

TORCH = os.environ.get("REVSTUDIO_TEST_TORCH", "torch==2.13.0")


def _cpu() -> float:
    return sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for field in ("ru_utime", "ru_stime"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", action="store_true", help="also make the venv the old way (copies torch)")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME")}
    env["OMP_NUM_THREADS"] = "1"
    home = Path(tempfile.mkdtemp(prefix="bench-install-"))
    rows: list[tuple[str, float, float]] = []

    def step(name: str, action: Callable[[], object]) -> object:
        wall, cpu = time.perf_counter(), _cpu()
        result = action()
        rows.append((name, time.perf_counter() - wall, _cpu() - cpu))
        return result

    def run(*command: object) -> None:
        subprocess.run([str(c) for c in command], cwd=home, env=env, check=True, capture_output=True, timeout=1800)

    try:
        dist = home / "dist"
        step("build the sdist", lambda: run(sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
                                            dist, ROOT))
        (sdist,) = dist.glob("*.tar.gz")
        wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", dist]
        step("the wheel from the sdist", lambda: run(*wheel, sdist))
        step("the plugin's wheel", lambda: run(*wheel, ROOT / "examples" / "plugin"))
        requirements = [TORCH, *sorted(map(str, dist.glob("*.whl")))]
        new, python = home / "new", home / "new" / "bin" / "python"
        step("new: venv --without-pip", lambda: run(sys.executable, "-m", "venv", "--without-pip", new))
        resolved = step("new: pip --dry-run --report", lambda: venv_kit.resolve(python, requirements, home, env))
        assert isinstance(resolved, dict)
        linked = step("new: hard-link the resolved dists", lambda: venv_kit.link_distributions(new, resolved, ROOT))
        step("new: pip install TORCH WHEELS", lambda: run(*venv_kit.pip(python), "install", "-q", *requirements))
        if args.old:
            old = home / "old" / "bin" / "python"
            step("old: venv (ensurepip)", lambda: run(sys.executable, "-m", "venv", home / "old"))
            step("old: pip install TORCH", lambda: run(old, "-m", "pip", "install", "-q", TORCH))
            step("old: pip install WHEELS", lambda: run(old, "-m", "pip", "install", "-q", *requirements[1:]))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"resolved {len(resolved)} distributions, linked {len(linked)}: {', '.join(linked)}")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print(f"| {'step':36s} | {'wall s':>7s} | {'CPU s':>6s} |\n|{'-' * 38}|{'-' * 8}:|{'-' * 7}:|")
    for name, wall, cpu in rows:
        print(f"| {name:36s} | {wall:7.1f} | {cpu:6.1f} |")
    for way in ("new", "old"):
        part = [r for r in rows if r[0].startswith(way + ":")]
        if part:
            print(f"| {'the venv, ' + way + ' way, in all':36s} | {sum(r[1] for r in part):7.1f} | "
                  f"{sum(r[2] for r in part):6.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

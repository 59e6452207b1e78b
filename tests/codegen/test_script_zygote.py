"""``run_script`` forks exported scripts from a process with torch loaded (script_zygote.py): what a
script sees and what the test reads back must be what a freshly started ``python -I`` child gives."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from codegen_harness import BLOCKER, run_script

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the zygote forks on Linux only")

SCRIPT = r'''
import os, signal, sys
print("argv", sys.argv[1:], "cwd", os.getcwd(), "pid", os.getpid(), "ppid", os.getppid())
print("env", os.environ.get("ZYGOTE_TEST_VALUE"), os.environ.get("OMP_NUM_THREADS"),
      sorted(k for k in os.environ if k.startswith("PYTHON")))
print("main", __name__, "stdin", sys.stdin.read() == "")
print("to stderr\r\nline two", file=sys.stderr)
how = sys.argv[1]
if how == "revstudio":
    import revstudio  # noqa: F401
elif how == "raise":
    raise ValueError("raised on purpose")
elif how == "signal":
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGTERM)
elif how == "exit":
    sys.exit(3)
'''


def _fresh(path: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The child run_script started before it forked: ``python -I -c`` with the same program."""
    code = BLOCKER + "import runpy\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.run([sys.executable, "-I", "-c", code, str(path), *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600, stdin=subprocess.DEVNULL)


def _same_but_pids(text: str) -> str:
    return " ".join(w for w in text.split() if not w.isdigit())


def test_a_forked_script_gets_and_gives_what_a_fresh_child_does(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "probe.py"
    script.write_text(SCRIPT, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("ZYGOTE_TEST_VALUE", "from the test")
    seen = {}
    for how, code in [("exit", 3), ("raise", 1), ("signal", -15), ("revstudio", 1), ("fine", 0)]:
        forked, fresh = run_script(script, [how, "two words"], work), _fresh(script, [how, "two words"], work)
        assert forked.returncode == fresh.returncode == code, (how, forked.stderr, fresh.stderr)
        assert _same_but_pids(forked.stdout) == _same_but_pids(fresh.stdout), how
        assert forked.stderr == fresh.stderr, how
        seen[how] = forked
    out = seen["fine"].stdout
    assert f"argv ['fine', 'two words'] cwd {work} pid" in out
    assert "env from the test 1 []" in out and "main __main__ stdin True" in out
    assert int(out.split("pid ")[1].split()[0]) != os.getpid()
    assert seen["fine"].stderr == "to stderr\nline two\n"
    assert "ValueError: raised on purpose" in seen["raise"].stderr
    assert "revstudio must not be imported by an export (tried revstudio)" in seen["revstudio"].stderr
    # a later script gets its own, newer environment (the zygote keeps none of the last one's)
    monkeypatch.setenv("ZYGOTE_TEST_VALUE", "changed")
    assert "env changed 1 []" in run_script(script, ["fine"], work).stdout


def test_a_script_past_its_time_is_killed_and_the_next_one_runs(tmp_path: Path) -> None:
    from script_zygote import run_forked

    code = "import sys, time\nif sys.argv[1] == 'hang':\n    time.sleep(600)\nprint('ran', sys.argv[1])\n"
    env = {"OMP_NUM_THREADS": "1", "PATH": os.environ.get("PATH", "")}
    with pytest.raises(subprocess.TimeoutExpired):
        run_forked(code, ["hang"], tmp_path, env, timeout=2)
    done = run_forked(code, ["next"], tmp_path, env, timeout=60)
    assert done.returncode == 0 and done.stdout == "ran next\n"


def test_a_forked_script_finds_what_every_training_run_imports_already_loaded(tmp_path: Path) -> None:
    """torch, and torch._dynamo that the first optimizer imports: 2 s of CPU each that every short
    script run spent again (a 6-step run itself takes 0.13 s). Still nothing of revstudio."""
    script = tmp_path / "loaded.py"
    script.write_text("import sys\nprint(sorted(m for m in ('torch', 'torch._dynamo', 'revstudio') if m in sys.modules))\n",
                      encoding="utf-8")
    done = run_script(script, [], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "['torch', 'torch._dynamo']\n"

"""venv_kit, the install test's way to a fresh venv without copying torch: what it links and what not."""
from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import venv_kit

ROOT = Path(__file__).resolve().parents[2]
NUMPY = metadata.version("numpy")


def _venv(tmp_path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    return tmp_path / "venv"


def test_a_resolved_distribution_is_linked_file_by_file_and_runs_from_the_new_venv(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    resolved = {"numpy": NUMPY, "revstudio": metadata.version("revstudio"), "no-such-dist": "1.0",
                "pyqtgraph": "0.0.1"}  # revstudio never, a missing one and another version are left to pip
    assert venv_kit.link_distributions(venv, resolved, ROOT) == ["numpy"]
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert venv_kit.installed(python, tmp_path, env) == {"numpy": NUMPY}
    where = subprocess.run([str(python), "-I", "-c", "import numpy; print(numpy.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120, check=True).stdout.strip()
    linked = Path(where)
    assert venv in linked.parents and not linked.is_symlink(), where
    original = Path(str(metadata.distribution("numpy").locate_file("numpy/__init__.py")))
    assert os.path.samefile(linked, original)  # a hard link: nothing copied
    script = (venv / "bin" / "f2py").read_text(encoding="utf-8")
    assert script.startswith(f"#!{venv / 'bin'}{os.sep}python") and sys.prefix not in script, script[:200]
    f2py = subprocess.run([str(venv / "bin" / "f2py"), "-v"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert f2py.returncode == 0 and f2py.stdout.strip() == NUMPY, f2py.stdout + f2py.stderr


def test_a_file_already_in_the_venv_is_never_overwritten(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    venv_kit.link_distributions(venv, {"numpy": NUMPY}, ROOT)
    try:
        venv_kit.link_distributions(venv, {"numpy": NUMPY}, ROOT)
    except AssertionError as clash:
        assert "is there already" in str(clash)
    else:
        raise AssertionError("linking over existing files went through")


def test_the_source_tree_is_never_linked(tmp_path: Path) -> None:
    """A distribution installed from inside the given source tree (an editable one) is left to pip."""
    venv = _venv(tmp_path)
    numpy_home = Path(str(metadata.distribution("numpy").locate_file(""))).resolve()
    assert venv_kit.link_distributions(venv, {"numpy": NUMPY}, numpy_home.parent) == []
    assert not (venv / "bin" / "f2py").exists()


def test_a_test_env_kept_inside_the_checkout_still_lends_its_packages(tmp_path: Path) -> None:
    """make keeps .venv inside the checkout (CI's layout): its installed packages are not the sources.
    Counting them as the source tree linked nothing, and the install test fell back to copying torch."""
    venv = _venv(tmp_path)
    checkout = Path(sys.prefix).resolve().parent  # the folder that holds the test env, as a checkout holds .venv
    assert venv_kit.link_distributions(venv, {"numpy": NUMPY}, checkout) == ["numpy"]

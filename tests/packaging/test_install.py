"""Install revstudio as a user would: sdist -> wheel -> a fresh venv, then use it.

One module fixture builds the sdist, builds the wheel from that sdist (so a
file missing from the sdist fails here), builds the example plugin's wheel and
installs all of it into a new venv without system site-packages, with the
torch ``make`` installs (``torch==2.13.0``, from the machine's wheel folder).
pip first resolves ``pip install TORCH WHEELS`` for the empty venv
(``--dry-run --report``); the third-party distributions it names that this
test's environment has at those versions are hard-linked in from their RECORD
(venv_kit.py: no 750 MB copy of torch), then pip installs the same
requirements into the venv for real, so revstudio and the plugin come from
their wheels and anything not linked from the index. Children run outside the
checkout with no PYTHONPATH, so only the installed copy can answer. Marked
``install`` so ``make test-quick`` / ``-m "not install"`` skips it, while
``make test`` (CI) runs it (packaging/README.md has the times).
``REVSTUDIO_TEST_VENV=DIR`` reuses a venv an earlier run made (only the
freshly built wheels are reinstalled).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
import venv_kit

import revstudio

ROOT = Path(__file__).resolve().parents[2]
TORCH = os.environ.get("REVSTUDIO_TEST_TORCH", "torch==2.13.0")  # what the Makefile installs

pytestmark = pytest.mark.install


def _run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 900) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def _clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH, no checkout: what a user's shell has."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME")}
    env.update(OMP_NUM_THREADS="1", QT_QPA_PLATFORM="offscreen", **extra)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    pytest.importorskip("build")
    # --no-isolation: the build backend of this venv (setuptools); no download
    _run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", out, ROOT], cwd=out)
    (sdist,) = out.glob("revstudio-*.tar.gz")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, sdist], cwd=out)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out,
          ROOT / "examples" / "plugin"], cwd=out)
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("venv")
    wheels = sorted(dist.glob("*.whl"))
    reuse = os.environ.get("REVSTUDIO_TEST_VENV")  # a venv made by an earlier run: only the wheels change
    if reuse:
        pip = [*venv_kit.pip(Path(reuse) / "bin" / "python"), "install", "-q"]
        _run([*pip, "--force-reinstall", "--no-deps", *wheels], cwd=home, env=_clean_env())
        return Path(reuse)
    _run([sys.executable, "-m", "venv", "--without-pip", home / "venv"], cwd=home)
    python = home / "venv" / "bin" / "python"
    requirements = [TORCH, *map(str, wheels)]
    resolved = venv_kit.resolve(python, requirements, home, _clean_env())  # writes home/pip-report.json
    venv_kit.link_distributions(home / "venv", resolved, ROOT)
    _run([*venv_kit.pip(python), "install", "-q", *requirements], cwd=home, env=_clean_env())
    return home / "venv"


def _bin(venv: Path, name: str) -> Path:
    return venv / "bin" / name


def test_the_sdist_carries_the_resources_and_what_builds_them(dist: Path) -> None:
    (sdist,) = dist.glob("revstudio-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / "resources").rglob("*") if p.is_file()
                and "__pycache__" not in p.parts}
    assert expected and expected <= names, sorted(expected - names)
    assert {"setup.py", "pyproject.toml", "MANIFEST.in", "CHANGELOG.md", "packaging/revstudio.desktop"} <= names


def test_the_wheel_carries_every_resource_file(dist: Path) -> None:
    (wheel,) = dist.glob("revstudio-*-py3-none-any.whl")
    assert wheel.name.startswith(f"revstudio-{revstudio.__version__}-")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = z.read(f"revstudio-{revstudio.__version__}.dist-info/entry_points.txt").decode()
    # every file under resources/ (new ones too: nothing keeps a list), as revstudio/_resources/...
    for path in (ROOT / "resources").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            assert "revstudio/_resources/" + path.relative_to(ROOT / "resources").as_posix() in names, path
    assert "revstudio/_resources/__init__.py" in names
    assert "[revstudio.nodes]\nbuiltin = revstudio.nodes:CATALOG" in entry_points


WHERE = ("import json, sys, revstudio, revstudio_haar; "
         "print(json.dumps([revstudio.__file__, revstudio_haar.__file__, sys.path]))")


def test_the_venv_holds_what_pip_resolved_and_only_the_wheels_revstudio(venv: Path, tmp_path: Path) -> None:
    """The venv is what ``pip install TORCH WHEELS`` gives an empty one, and revstudio runs from it alone."""
    env = _clean_env()
    report = venv.parent / "pip-report.json"
    if report.is_file():  # (not with REVSTUDIO_TEST_VENV)
        wanted = {i["metadata"]["name"]: i["metadata"]["version"]
                  for i in json.loads(report.read_text(encoding="utf-8"))["install"]}
        assert venv_kit.installed(_bin(venv, "python"), tmp_path, env) == venv_kit.installed_names(wanted)
    _run([*venv_kit.pip(_bin(venv, "python")), "check"], cwd=tmp_path, env=env)  # every requirement met
    own, plugin, path = json.loads(_run([_bin(venv, "python"), "-c", WHERE], cwd=tmp_path, env=env).stdout)
    site = venv.resolve() / "lib"
    assert site in Path(own).resolve().parents and site in Path(plugin).resolve().parents, (own, plugin)
    assert not any(p and ROOT in [Path(p).resolve(), *Path(p).resolve().parents] for p in path), path
    for pth in site.rglob("*.pth"):  # nothing put another environment or the checkout on the path
        assert str(ROOT) not in pth.read_text() and sys.prefix not in pth.read_text(), pth


def test_version_check_and_examples_from_the_installed_command(venv: Path, tmp_path: Path) -> None:
    env = _clean_env()
    version = _run([_bin(venv, "revstudio"), "--version"], cwd=tmp_path, env=env).stdout.strip()
    assert version == revstudio.__version__
    listing = json.loads(_run([_bin(venv, "revstudio"), "examples", "--json"], cwd=tmp_path, env=env).stdout)
    stems = {e["name"] for e in listing["examples"]}
    assert {p.stem for p in (ROOT / "resources" / "examples").glob("*.revs")} <= stems
    path = Path(_run([_bin(venv, "revstudio"), "examples", "revnet_wired"], cwd=tmp_path, env=env).stdout.strip())
    assert "site-packages" in path.parts and path.is_file()
    report = _run([_bin(venv, "revstudio"), "check", path, "--json"], cwd=tmp_path, env=env)
    assert json.loads(report.stdout)["valid"]
    plugins = json.loads(_run([_bin(venv, "revstudio"), "plugins", "--json"], cwd=tmp_path, env=env).stdout)
    builtin = plugins["plugins"][0]
    # the built-in catalog came through its entry point, from the installed metadata
    assert builtin["builtin"] and builtin["distribution"] == "revstudio"
    assert builtin["version"] == revstudio.__version__ and not plugins["problems"]


EDITOR = textwrap.dedent("""
    import sys
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    import revstudio.qt.app as qt_app
    from revstudio.qt import theme

    seen = {}
    tries = [0]

    def look():
        from revstudio.qt.main_window import MainWindow
        windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
        tries[0] += 1
        if (not windows or windows[0].document.graph.name == "untitled") and tries[0] < 240:
            QTimer.singleShot(250, look)  # the file opens once the event loop runs
            return
        window = windows[0]
        seen["graph"] = window.document.graph.name
        seen["palette"] = window.node_palette.visible_type_ids()
        seen["title"] = window.windowTitle()
        window.close()
        QApplication.instance().quit()

    create = qt_app.create_app
    def create_app(*args):
        app = create(*args)
        QTimer.singleShot(250, look)
        return app
    qt_app.create_app = create_app

    from revstudio.cli import main
    code = main([sys.argv[1]])          # `revstudio FILE`, the editor, offscreen
    style = theme.stylesheet("dark")
    print({"code": code, "resources": str(theme.RESOURCES), "style": len(style), "tokens": "@base" in style,
           "icon": not theme.icon("save").isNull(), "app_icon": not theme.app_icon().isNull(), **seen})
""")


def test_the_installed_editor_starts_with_its_icons_theme_and_plugins(venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"  # the editor's settings and recovery files stay in here
    env = _clean_env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"))
    example = _run([_bin(venv, "revstudio"), "examples", "glow_flow"], cwd=tmp_path, env=env).stdout.strip()
    out = _run([_bin(venv, "python"), "-c", EDITOR, example], cwd=tmp_path, env=env, timeout=300)
    seen = eval(out.stdout.strip().splitlines()[-1], {})  # our own dict literal
    assert seen["code"] == 0 and seen["graph"] == "glow-flow"
    assert "site-packages" in seen["resources"] and seen["style"] > 1000 and not seen["tokens"]
    assert seen["icon"] and seen["app_icon"]
    assert {"Conv", "HaarDownsample", "InvertibleLeakyReLU"} <= set(seen["palette"])


def test_the_installed_plugin_checks_runs_and_exports(venv: Path, tmp_path: Path) -> None:
    env = _clean_env()
    project = ROOT / "examples" / "plugin" / "haar_flow.revs"
    revs = _bin(venv, "revstudio")
    assert json.loads(_run([revs, "check", project, "--json"], cwd=tmp_path, env=env).stdout)["valid"]
    _run([revs, "gradcheck", project], cwd=tmp_path, env=env, timeout=300)
    _run([revs, "export", project, "-o", tmp_path / "model.py"], cwd=tmp_path, env=env, timeout=300)
    text = (tmp_path / "model.py").read_text()
    assert "from revstudio_haar.haar import HaarDownsample" in text
    assert "the plugin revstudio-haar (import revstudio_haar)" in text  # the real dist-info knows the name
    run = ("import torch, model; m = model.Model(); x = torch.randn(2, 3, 16, 16); z = m(x); "
           "assert torch.allclose(m.inverse(z), x, atol=1e-4); print('ok')")
    assert _run([_bin(venv, "python"), "-c", run], cwd=tmp_path, env=env).stdout.strip() == "ok"


def test_resources_are_found_inside_a_zip(dist: Path, tmp_path: Path) -> None:
    """A pure wheel is a zip: on sys.path as it is, resources come out through importlib.resources."""
    (wheel,) = dist.glob("revstudio-*-py3-none-any.whl")
    code = ("import revstudio.resources as r; p = r.root(); "
            "print(r.files().__class__.__name__, p.is_dir(), r.path('icons', 'save.svg').is_file(), "
            "len(r.examples()))")
    env = _clean_env(PYTHONPATH=str(wheel))
    out = _run([sys.executable, "-P", "-c", code], cwd=tmp_path, env=env).stdout.split()
    kind, is_dir, has_icon, examples = out
    assert kind != "PosixPath" and is_dir == "True" and has_icon == "True"
    assert int(examples) == len(list((ROOT / "resources" / "examples").glob("*.revs")))

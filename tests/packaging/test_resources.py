"""revstudio.resources: the data files are found in a checkout, in a zip and beside a frozen package."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from revstudio import resources

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_reads_resources_in_place() -> None:
    assert resources.root() == ROOT / "resources"
    assert resources.path("icons", "save.svg").is_file()
    stems = {p.stem for p in resources.examples()}
    assert stems == {p.stem for p in (ROOT / "resources" / "examples").glob("*.revs")}
    assert resources.example("glow_flow") == ROOT / "resources" / "examples" / "glow_flow.revs"
    assert resources.example("glow_flow.revs") == resources.example("glow_flow")
    assert resources.example("nope") is None


def _zip_like_the_wheel(target: Path) -> Path:
    """revstudio/ and resources/ laid out as the wheel has them (revstudio/_resources/...)."""
    with zipfile.ZipFile(target, "w") as z:
        for path in (ROOT / "revstudio").rglob("*.py"):
            z.write(path, path.relative_to(ROOT).as_posix())
        for path in (ROOT / "resources").rglob("*"):
            if path.is_file():
                z.write(path, "revstudio/_resources/" + path.relative_to(ROOT / "resources").as_posix())
        z.writestr("revstudio/_resources/__init__.py", '"""data"""\n')
    return target


def _run(code: str, pythonpath: Path, cwd: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = str(pythonpath)
    result = subprocess.run([sys.executable, "-P", "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_inside_a_zip_resources_come_out_through_importlib_resources(tmp_path: Path) -> None:
    archive = _zip_like_the_wheel(tmp_path / "revstudio.zip")
    code = ("import revstudio.resources as r; p = r.root(); "
            "print(type(r.files()).__name__, p.is_dir(), r.path('icons', 'save.svg').is_file(), "
            "len(r.examples()), r.example('glow_flow').read_text().startswith('{'))")
    kind, is_dir, icon, count, readable = _run(code, archive, tmp_path)
    assert kind != "PosixPath"  # a zipfile.Path: read from the archive, then copied to a real folder
    assert (is_dir, icon, readable) == ("True", "True", "True")
    assert int(count) == len(list((ROOT / "resources" / "examples").glob("*.revs")))


def test_a_frozen_layout_finds_the_folder_beside_the_package(tmp_path: Path) -> None:
    """PyInstaller (packaging/revstudio.spec) puts resources/ at revstudio/_resources, no package there."""
    site = tmp_path / "frozen"
    (site / "revstudio").mkdir(parents=True)
    for name in ("__init__.py", "resources.py"):
        (site / "revstudio" / name).write_bytes((ROOT / "revstudio" / name).read_bytes())
    (site / "revstudio" / "_resources" / "icons").mkdir(parents=True)
    (site / "revstudio" / "_resources" / "icons" / "save.svg").write_text("<svg/>")
    out = _run("import revstudio.resources as r; print(r.path('icons', 'save.svg').is_file(), r.root())",
               site, tmp_path)
    assert out == ["True", str(site / "revstudio" / "_resources")]

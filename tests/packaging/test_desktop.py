"""`make install-desktop`: the launcher entry, icon and .revs file type, into a temp XDG_DATA_HOME."""
from __future__ import annotations

import configparser
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIME = "application/x-revstudio-project"
NS = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    # make is the README's own test command, so it is always there where the tests run
    assert shutil.which("make") is not None, "make is not installed; the README's commands need it"
    return subprocess.run(["make", "-s", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=120)


def test_the_mime_type_claims_revs_files_and_the_entry_opens_them() -> None:
    tree = ET.parse(ROOT / "packaging" / "revstudio-mime.xml")
    (mime,) = tree.getroot().findall("m:mime-type", NS)
    assert mime.get("type") == MIME
    assert [g.get("pattern") for g in mime.findall("m:glob", NS)] == ["*.revs"]
    # the magic matches what every saved project starts with
    match = mime.find("m:magic/m:match", NS)
    assert match is not None
    assert match.get("value") in (ROOT / "resources" / "examples" / "glow_flow.revs").read_text()[:64]
    entry = configparser.ConfigParser(interpolation=None)
    entry.read(ROOT / "packaging" / "revstudio.desktop")
    desktop = entry["Desktop Entry"]
    assert MIME in desktop["MimeType"].split(";") and desktop["Exec"].endswith("%f")
    assert desktop["Icon"] == "revstudio"


def test_install_desktop_writes_every_file_and_uninstall_removes_them(tmp_path: Path) -> None:
    data = tmp_path / "share"
    result = _make("install-desktop", f"XDG_DATA_HOME={data}", "DESKTOP_EXEC=/opt/rev studio/bin/revstudio")
    assert result.returncode == 0, result.stderr
    desktop = data / "applications" / "revstudio.desktop"
    assert (data / "icons/hicolor/scalable/apps/revstudio.svg").read_bytes() == (
        ROOT / "resources/icons/revstudio.svg").read_bytes()
    assert (data / "icons/hicolor/scalable/mimetypes/application-x-revstudio-project.svg").is_file()
    assert (data / "mime/packages/revstudio.xml").is_file()
    text = desktop.read_text()
    assert 'Exec="/opt/rev studio/bin/revstudio" %f' in text and "TryExec=/opt/rev studio/bin/revstudio" in text
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
    if shutil.which("update-mime-database"):  # the database a file manager asks: *.revs -> our type
        assert f"{MIME}:*.revs" in (data / "mime" / "globs2").read_text()
        assert (data / "mime" / "application" / "x-revstudio-project.xml").is_file()
    if shutil.which("update-desktop-database"):  # and our type -> revstudio.desktop
        assert f"{MIME}=revstudio.desktop;" in (data / "applications" / "mimeinfo.cache").read_text()

    result = _make("uninstall-desktop", f"XDG_DATA_HOME={data}")
    assert result.returncode == 0, result.stderr
    assert not desktop.exists() and not (data / "mime/packages/revstudio.xml").exists()


def test_prefix_puts_it_under_prefix_share(tmp_path: Path) -> None:
    result = _make("install-desktop", f"PREFIX={tmp_path}", "XDG_DATA_HOME=")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "share" / "applications" / "revstudio.desktop").is_file()

"""``revstudio merge CURRENT BASE OTHER [--name PATH] [--json]``: git's merge driver for projects
(``revstudio merge --setup [DIR]`` sets it up in the git repository holding DIR).

Merges the changes from BASE to OTHER into CURRENT by meaning (``core.project_merge``): two
branches that each added nodes merge cleanly, where git's line merge always left conflict
markers. CURRENT is rewritten with the result (atomically), exit 0. Where both sides changed the
same thing, each conflict is named on stderr and CURRENT gets git's line merge with its markers
(``git merge-file``, as without this driver), exit 1; a file that cannot be read is named, exit 2,
the same markers written. Set up once per clone (docs/cli.md), by ``--setup`` or by hand:

    git config merge.revstudio.driver "revstudio merge %A %O %B --name %P"
    echo "*.revs merge=revstudio" >> .gitattributes
"""
from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys

from revstudio.cli import CliError, json_text, printable

ATTRIBUTE = "*.revs merge=revstudio"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("current", metavar="CURRENT", nargs="?", help="this branch's version; the result is written here")
    parser.add_argument("base", metavar="BASE", nargs="?", help="the common ancestor's version (may be empty)")
    parser.add_argument("other", metavar="OTHER", nargs="?", help="the other branch's version")
    parser.add_argument("--setup", metavar="DIR", nargs="?", const=".",
                        help="make this the merge driver of .revs files in the git repository holding DIR "
                             "(default: the current folder)")
    parser.add_argument("--name", metavar="PATH", help="the project's path in the repository, for messages (git's %%P)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8-sig") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{path}: cannot read the file ({getattr(exc, 'strerror', None) or exc}); check the path: "
                       "CURRENT, BASE and OTHER are the three versions' project files") from None


def _line_merge(args: argparse.Namespace, name: str) -> bool:
    """Write git's own line merge, with its conflict markers, into CURRENT: what the user resolves
    by hand (and what opening the file then explains). False where git cannot be run."""
    git = shutil.which("git")
    if git is None:
        return False
    labels = [f"{name} (this branch)", f"{name} (base)", f"{name} (other branch)"]
    done = subprocess.run([git, "merge-file", *(a for label in labels for a in ("-L", label)),
                           args.current, args.base, args.other], capture_output=True, text=True)
    return 0 <= done.returncode < 128  # (the number of conflicts; 255: git could not merge)


def run(args: argparse.Namespace) -> int:
    from revstudio.core.project import ProjectError
    from revstudio.core.project_merge import merge_projects
    from revstudio.core.tempfiles import write_atomic

    if args.setup is not None:
        if args.current is not None:
            raise CliError("--setup takes no CURRENT BASE OTHER: run 'revstudio merge --setup [DIR]' once per clone")
        return _setup(args.setup, args.json)
    if args.other is None:
        raise CliError("give CURRENT BASE OTHER (git's %A %O %B), or --setup to make this git's merge driver")
    name = args.name or args.current
    base, current, other = (_read(p) for p in (args.base, args.current, args.other))
    try:
        result = merge_projects(base, current, other, names=(f"{name} (base)", f"{name} (this branch)", f"{name} (other branch)"))
    except ProjectError as exc:
        marked = _line_merge(args, name)
        raise CliError(f"{exc}; cannot merge it by its nodes{_left(marked)}") from None
    if result.conflicts:
        marked = _line_merge(args, name)
        if args.json:
            print(json_text({"merged": False, "file": name, "conflicts": result.conflicts, "notes": result.notes,
                             "markers": marked}))
        else:
            for conflict in result.conflicts:
                print(f"revstudio: {printable(name)}: {printable(conflict)}", file=sys.stderr)
            print(f"revstudio: {printable(name)}: {len(result.conflicts)} conflict(s) to resolve by hand"
                  f"{_left(marked)}", file=sys.stderr)
        return 1
    try:
        write_atomic(args.current, result.text)
    except OSError as exc:
        raise CliError(f"{args.current}: cannot write the merged project ({exc.strerror or exc})") from None
    if args.json:
        print(json_text({"merged": True, "file": name, "conflicts": [], "notes": result.notes}))
    else:
        print(f"merged {printable(name)} by its nodes, wires and settings")
        for note in result.notes:
            print(f"  {printable(note)}")
    return 0


def _left(marked: bool) -> str:
    return ("; the file holds git's line merge with conflict markers, each side's lines between them"
            if marked else "; the file holds this branch's version (git was not found to mark the conflicts)")


def _setup(folder: str, as_json: bool) -> int:
    """Set the driver in the repository's own git config (each clone's, never committed: it names this
    machine's revstudio) and add the attribute line to the top folder's ``.gitattributes`` (committed)."""
    import os

    git = shutil.which("git")
    if git is None:
        raise CliError("git was not found on PATH; install git, then run 'revstudio merge --setup' again")
    top = subprocess.run([git, "-C", folder, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode != 0:
        raise CliError(f"{folder}: not inside a git repository ({top.stderr.strip() or 'git rev-parse failed'}); "
                       "run it in the clone that holds your projects")
    root = top.stdout.strip()
    found = sys.executable if getattr(sys, "frozen", False) else shutil.which("revstudio")  # (frozen: this app)
    program = shlex.quote(found) if found else f"{shlex.quote(sys.executable)} -m revstudio"
    driver = f"{program} merge %A %O %B --name %P"
    for key, value in (("merge.revstudio.name", "revstudio projects, merged by nodes, wires and settings"),
                       ("merge.revstudio.driver", driver)):
        done = subprocess.run([git, "-C", root, "config", key, value], capture_output=True, text=True)
        if done.returncode != 0:
            raise CliError(f"{root}: git config {key} failed: {done.stderr.strip()}")
    attributes = os.path.join(root, ".gitattributes")
    try:
        with open(attributes, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise CliError(f"{attributes}: cannot read it ({exc.strerror or exc})") from None
    added = ATTRIBUTE not in (line.strip() for line in text.splitlines())
    if added:
        try:
            with open(attributes, "a", encoding="utf-8") as f:
                f.write(("\n" if text and not text.endswith("\n") else "") + ATTRIBUTE + "\n")
        except OSError as exc:
            raise CliError(f"{attributes}: cannot add '{ATTRIBUTE}' ({exc.strerror or exc})") from None
    if as_json:
        print(json_text({"repository": root, "driver": driver, "attributes": attributes, "added": added}))
    else:
        print(f"git in {printable(root)} merges .revs files with: {printable(driver)}")
        print(f"{printable(attributes)}: {'added' if added else 'already has'} '{ATTRIBUTE}'"
              + (" (commit it, so every clone merges projects this way; each clone runs --setup once)"
                 if added else ""))
    return 0

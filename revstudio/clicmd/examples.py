"""``revstudio examples [NAME] [--json]``: the example projects installed with revstudio.

Without NAME, lists every example (name and file); with NAME, prints the path of
that one, so ``revstudio check "$(revstudio examples glow_flow)"`` works from any
install (wheel, zip, frozen app). Exit 2 when NAME is not an example, or is empty.
"""
from __future__ import annotations

import argparse

from revstudio.cli import CliError, json_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME", help="print the path of this example")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    from revstudio import resources

    found = resources.examples()
    if args.name == "":  # (an unset shell variable: a script wanted one path, not the whole list)
        names = ", ".join(p.stem for p in found) or "none are installed"
        raise CliError(f"NAME is empty; leave it out to list the examples, or name one ({names})")
    if args.name:
        path = resources.example(args.name)
        if path is None:
            names = ", ".join(p.stem for p in found) or "none are installed"
            raise CliError(f"no example called {args.name!r} (examples: {names})")
        print(json_text({"name": path.stem, "path": str(path)}) if args.json else path)
        return 0
    if args.json:
        print(json_text({"examples": [{"name": p.stem, "path": str(p)} for p in found]}))
    else:
        width = max((len(p.stem) for p in found), default=0)
        for p in found:
            print(f"{p.stem:<{width}}  {p}")
    return 0

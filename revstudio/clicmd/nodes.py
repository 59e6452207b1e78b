"""``revstudio nodes [TYPE ...] [--json]``: the node reference (docs/nodes.md, docs/cli.md).

Without TYPE, one line per node type, built-in and installed plugins' alike: type, category,
invertible or not, and its one-line summary. With TYPE(s), each one's full entry: ports,
parameters, the shape rule in words, invertibility, what its backward keeps and an example.
All of it is ``revstudio.core.node_reference``'s, read from the type's one declaration, as the
app's palette and inspector show it. A TYPE that is not a node type exits 2 naming the closest.
"""
from __future__ import annotations

import argparse

from revstudio.cli import CliError, json_text, printable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("types", nargs="*", metavar="TYPE", help="show the full entry of these node types")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    from revstudio.core import node_reference as ref
    from revstudio.core.spec import registry

    specs = list(registry)
    if not args.types:
        rows = [ref.overview_row(spec, registry) for spec in specs]
        if args.json:
            print(json_text({"nodes": rows}))
            return 0
        width = max((len(r["type"]) for r in rows), default=0)
        cat = max((len(r["category"]) for r in rows), default=0)
        for r in rows:
            mark = "invertible" if r["invertible"] else "          "
            whose = "" if r["builtin"] else f" [plugin {r['plugin']}]"
            print(printable(f"{r['type']:<{width}}  {r['category']:<{cat}}  {mark}  {r['summary']}{whose}"))
        print(f"\n{len(rows)} node types; 'revstudio nodes TYPE' shows one in full (docs/nodes.md has them all)")
        return 0
    chosen = []
    for name in args.types:
        spec = registry.find(name)
        if spec is None:
            meant = ref.closest(name, [s.type_id for s in specs])
            hint = f" (did you mean {' / '.join(repr(m) for m in meant)}?)" if meant else ""
            raise CliError(f"unknown node type {name!r}{hint}; 'revstudio nodes' lists them all")
        chosen.append(spec)
    if args.json:
        print(json_text({"nodes": [ref.entry(spec, registry) for spec in chosen]}))
    else:
        print(printable("\n\n".join(ref.text(spec, registry) for spec in chosen)))
    return 0

"""``revstudio nodes [TYPE ...] [--json]``: the node reference (docs/nodes.md, docs/cli.md).

Without TYPE, one line per node type, built-in and installed plugins' alike: type, category,
invertible or not, and its one-line summary. With TYPE(s), each one's full entry: ports,
parameters, the shape rule in words, invertibility, what its backward keeps and an example.
All of it is ``revstudio.core.node_reference``'s, read from the type's one declaration, as the
app's palette and inspector show it. TYPE is matched as written, then in any case when exactly one
type (or old, renamed id) matches; a TYPE that is not a node type exits 2 naming the closest.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from revstudio.cli import CliError, json_text, printable

if TYPE_CHECKING:
    from revstudio.core.spec import NodeSpec


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
    chosen = [_lookup(name, specs) for name in args.types]
    if args.json:
        print(json_text({"nodes": [ref.entry(spec, registry) for spec in chosen]}))
    else:
        print(printable("\n\n".join(ref.text(spec, registry) for spec in chosen)))
    return 0


def _lookup(name: str, specs: list[NodeSpec]) -> NodeSpec:
    """The type ``name`` names: as written (an old id too), else the one type whose id or old id
    matches it in any case. Several such types, or none, exit 2 naming them or the closest."""
    from revstudio.core import node_reference as ref
    from revstudio.core.spec import registry

    spec = registry.find(name)
    if spec is not None:
        return spec
    folded = name.casefold()
    matches = [s for s in specs if any(i.casefold() == folded for i in (s.type_id, *s.legacy_ids))]
    if len(matches) == 1:
        return matches[0]
    if matches:
        which = " / ".join(repr(s.type_id) for s in matches)
        raise CliError(f"node type {name!r} matches {which} but for case; write it as one of them")
    meant = ref.closest(name, [s.type_id for s in specs])
    hint = f" (did you mean {' / '.join(repr(m) for m in meant)}?)" if meant else ""
    raise CliError(f"unknown node type {name!r}{hint}; 'revstudio nodes' lists them all")

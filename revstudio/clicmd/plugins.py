"""``revstudio plugins [--json]``: the node-type plugins found, their types, and their problems.

Lists every entry point of the ``revstudio.nodes`` group (the built-in catalog
first) with the package that provides it and its node types, then under
"problems:" each problem a plugin reported: a plugin or type skipped and why, or
one that loaded with something to fix (malformed ``examples``). Exit 0, or 1 when
there is a problem.
"""
from __future__ import annotations

import argparse
from typing import Any

from revstudio.cli import json_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def collect() -> dict[str, Any]:
    from revstudio.core import plugins
    from revstudio.core.spec import registry

    found: dict[str, dict[str, Any]] = {}
    for spec in registry:
        provider = registry.provider(spec.type_id)
        key = provider.label if provider else "(registered by hand)"
        entry = found.setdefault(key, {
            "entry_point": provider.name if provider else None,
            "value": provider.value if provider else None,
            "distribution": provider.distribution if provider else None,
            "version": provider.version if provider else None,
            "builtin": bool(provider and provider.builtin),
            "types": [],
        })
        entry["types"].append(spec.type_id)
    for provider in registry.found():  # a plugin none of whose types loaded is listed too, with none
        if provider.label not in found:
            found[provider.label] = {"entry_point": provider.name, "value": provider.value,
                                     "distribution": provider.distribution, "version": provider.version,
                                     "builtin": False, "types": []}
    return {"plugins": list(found.values()),
            "problems": [{"plugin": p.plugin, "message": p.message} for p in plugins.problems()]}


def run(args: argparse.Namespace) -> int:
    info = collect()
    if args.json:
        print(json_text(info))
    else:
        for entry in info["plugins"]:
            who = entry["distribution"] or entry["value"]
            version = f" {entry['version']}" if entry["version"] else ""
            kind = "built-in catalog" if entry["builtin"] else f"entry point {entry['entry_point']!r}"
            count = len(entry["types"])
            print(f"{who}{version} ({kind}): {count} node type{'s' * (count != 1)}")
            print("  " + (", ".join(entry["types"]) or "(none loaded: see below)"))
        if info["problems"]:  # each message says itself whether its plugin or type was skipped
            print("problems:")
        for problem in info["problems"]:
            print(f"  plugin {problem['plugin']}: {problem['message']}")
    return 1 if info["problems"] else 0

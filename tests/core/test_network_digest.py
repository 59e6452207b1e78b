"""The network digest: the same for every file that draws the same network, another for any change to it."""
from __future__ import annotations

import json
from pathlib import Path

from revstudio.core.digest import network_digest, short
from revstudio.core.project import load, loads

ROOT = Path(__file__).resolve().parents[2]
COUPLING = ROOT / "resources" / "examples" / "revnet_coupling.revs"


def _digest_of(doc: dict) -> str:
    return network_digest(loads(json.dumps(doc)))


def test_what_does_not_change_the_network_keeps_its_digest() -> None:
    doc = json.loads(COUPLING.read_text(encoding="utf-8"))
    first = network_digest(load(COUPLING))
    assert first.startswith("sha256:") and len(first) == len("sha256:") + 64
    moved = json.loads(json.dumps(doc))
    moved["nodes"].reverse()  # (the order of nodes and edges in the file)
    moved["edges"].reverse()
    moved["groups"]["f"]["nodes"].reverse()
    moved["name"] = "renamed-project"
    moved["training"] = {"version": 1, "lr": 0.5, "seed": 7}  # (the run settings are config.json's)
    for node in moved["nodes"]:
        node["pos"] = [node["pos"][0] + 40, node["pos"][1] - 10]
    stem = next(n for n in moved["nodes"] if n["id"] == "stem")
    stem["params"]["stride"] = 1  # (a parameter written out at its default value)
    assert _digest_of(moved) == first


def test_any_change_to_the_network_changes_its_digest() -> None:
    doc = json.loads(COUPLING.read_text(encoding="utf-8"))
    first = _digest_of(doc)
    wider = json.loads(json.dumps(doc))
    next(n for n in wider["nodes"] if n["id"] == "stem")["params"]["out_channels"] = 16
    deeper = json.loads(json.dumps(doc))
    next(n for n in deeper["nodes"] if n["id"] == "blocks")["params"]["times"] = 3
    inner = json.loads(json.dumps(doc))
    next(n for n in inner["groups"]["f"]["nodes"] if n["id"] == "f_relu")["params"]["fn"] = "tanh"
    digests = {first, _digest_of(wider), _digest_of(deeper), _digest_of(inner)}
    assert len(digests) == 4


def test_a_table_shows_the_digest_short() -> None:
    assert short("sha256:" + "ab" * 32) == "sha256:abababababab"
    assert short(None) == "-"

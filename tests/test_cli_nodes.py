"""``revstudio nodes [TYPE ...] [--json]``: the node reference on the command line."""
from __future__ import annotations

import json

import pytest

import revstudio.core.spec as spec_module
from revstudio.cli import main
from revstudio.core import node_reference as ref
from revstudio.core.params import Int
from revstudio.core.plugins import Provider
from revstudio.core.spec import NodeSpec, Registry, registry


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["nodes", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_list_has_every_type_with_its_category_summary_and_invertibility(capsys) -> None:
    code, out, err = run(capsys)
    assert code == 0 and not err
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for spec in registry:
        line = lines[spec.type_id]
        assert spec.category in line and ref.summary(spec) in line
        assert ("invertible" in line.split(ref.summary(spec))[0]) == spec.invertible, line
    assert f"{len(list(registry))} node types" in out


def test_a_type_prints_its_full_entry(capsys) -> None:
    code, out, err = run(capsys, "BiRNN", "AdditiveCoupling")
    assert code == 0 and not err
    assert out == ref.text(registry.get("BiRNN"), registry) + "\n\n" + \
        ref.text(registry.get("AdditiveCoupling"), registry) + "\n"
    assert "time is the last axis" in out and "Parameters:" in out and "Example:" in out


def test_a_mistyped_type_names_the_closest_and_exits_2(capsys) -> None:
    code, out, err = run(capsys, "BiRNN", "BiRNM")
    assert code == 2 and not out
    assert err.strip() == ("revstudio: unknown node type 'BiRNM' (did you mean 'BiRNN'?); "
                           "'revstudio nodes' lists them all")
    code, out, err = run(capsys, "coupling", "--json")
    assert code == 2 and not err
    data = json.loads(out)
    assert data["exit_code"] == 2 and "'AdditiveCoupling'" in data["error"] and "'AffineCoupling'" in data["error"]


def test_a_type_in_another_case_finds_the_one_type_it_names(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(capsys, "birnn", "ADDITIVECOUPLING")
    assert code == 0 and not err
    assert out == ref.text(registry.get("BiRNN"), registry) + "\n\n" + \
        ref.text(registry.get("AdditiveCoupling"), registry) + "\n"
    fresh = Registry()
    list(fresh)
    for type_id in ("Haar", "HAAR"):
        fresh.register(NodeSpec(type_id=type_id, category="Wavelets", help="A Haar step.", params={}, inputs=("in",),
                                outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")}))
    monkeypatch.setattr(spec_module, "registry", fresh)
    code, out, err = run(capsys, "haar")
    assert code == 2 and not out
    assert err.strip() == ("revstudio: node type 'haar' matches 'Haar' / 'HAAR' but for case; "
                           "write it as one of them")
    code, out, _ = run(capsys, "HAAR")
    assert code == 0 and out.startswith("HAAR (Wavelets")


def test_json_lists_rows_and_entries_as_docs_cli_md_says(capsys) -> None:
    code, out, _ = run(capsys, "--json")
    rows = json.loads(out)["nodes"]
    assert code == 0 and [r["type"] for r in rows] == [s.type_id for s in registry]
    assert set(rows[0]) == {"type", "title", "category", "summary", "invertible", "builtin", "plugin"}
    code, out, _ = run(capsys, "Conv", "--json")
    (entry,) = json.loads(out)["nodes"]
    assert code == 0 and set(entry) == {"type", "title", "category", "summary", "invertible", "builtin", "plugin",
                                        "help", "legacy_ids", "inputs", "outputs", "parameters", "shape_rule",
                                        "memory", "example"}
    assert entry["parameters"]["padding"] == {"kind": "int_or_choice", "default": '"same"',
                                              "allowed": registry.get("Conv").params["padding"].describe(),
                                              "options": ["same"], "meaning": registry.get("Conv").params["padding"].help}
    assert entry["example"]["outputs"] == {"out": [16, 32, 32]}


def test_a_plugin_type_is_listed_and_marked(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = Registry()
    list(fresh)
    fresh.register(NodeSpec(type_id="Haar", category="Wavelets", help="A Haar step.",
                            params={"levels": Int(default=1, help="Levels.")}, inputs=("in",), outputs=("out",),
                            infer=lambda ctx: {"out": ctx.input("in")}),
                   Provider("haar", "rsp_haar:SPECS", "revstudio-haar", "1.0"))
    monkeypatch.setattr(spec_module, "registry", fresh)
    code, out, _ = run(capsys)
    line = next(line for line in out.splitlines() if line.startswith("Haar"))
    assert code == 0 and line.endswith("A Haar step. [plugin revstudio-haar]")
    assert "[plugin" not in next(line for line in out.splitlines() if line.startswith("Conv"))
    code, out, _ = run(capsys, "Haar")
    assert code == 0 and out.startswith("Haar (Wavelets, plugin revstudio-haar)\n")


def test_the_usage_names_the_command(capsys) -> None:
    assert main(["--help"]) == 0
    assert "nodes" in capsys.readouterr().out
    assert main(["nodes", "--help"]) == 0
    assert "TYPE" in capsys.readouterr().out

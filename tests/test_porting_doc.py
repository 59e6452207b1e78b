"""docs/porting.md stays true: its MemCNN-style model, rebuilt with the Python API, has the same
parameters, outputs and gradients once rs.load_weights has brought its weights over."""
from __future__ import annotations

from pathlib import Path

import pytest
from doc_blocks import ROOT, run_doc_blocks


def test_the_porting_example_runs_as_written() -> None:
    pytest.importorskip("torch")
    scope = run_doc_blocks("porting.md", 2)
    assert scope["report"].valid and len(scope["mapping"]) == len(scope["model"].state_dict())
    assert scope["worst"] < 1e-12


def test_the_readme_links_the_page_and_the_weight_names_are_the_ones_its_table_gives() -> None:
    pytest.importorskip("torch")
    import revstudio as rs
    from revstudio.core.examples import example_projects

    assert "[docs/porting.md](docs/porting.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    text = (ROOT / "docs" / "porting.md").read_text(encoding="utf-8")
    for row in ("`<Repeat id>.blocks.<copy, from 0>.<node id>.`",
                "`<coupling id>.f.<node id>.` / `<coupling id>.g.<node id>.`",
                "`<Group node id>.body.<node id>.`"):
        assert row in text
    g = example_projects()["revnet_coupling"]
    g.rename_node("blocks", "stack")
    g.groups["block"].set_param("coupling", "f", "g")   # F named by another group: still `.f.`
    g.set_group("wrapped", g.groups.pop("block"))
    g.set_param("stack", "group", "wrapped")
    outer = rs.Graph()
    outer.add_node("GroupInput", "in")
    outer.add_node("Group", "inner", {"group": "wrapped"})
    outer.add_node("GroupOutput", "out")
    outer.connect("in.out", "inner.in")
    outer.connect("inner.out", "out.in")
    g.set_group("outer", outer)
    g.set_param("stack", "group", "outer")
    keys = list(rs.compile(g, device="cpu").state_dict())
    assert "stack.blocks.1.inner.body.coupling.f.g_conv1.weight" in keys, keys


def test_opening_a_pytorch_model_of_ones_own_says_how_to_bring_it_over(tmp_path: Path) -> None:
    from revstudio.core.project import ProjectError, load

    path = tmp_path / "my_revnet.py"
    path.write_text("import torch\n\nclass RevNet(torch.nn.Module):\n    pass\n", encoding="utf-8")
    with pytest.raises(ProjectError) as err:
        load(path)
    text = str(err.value)
    assert "my_revnet.py is not a revstudio export (no REVSTUDIO_PROJECT constant)" in text
    assert "rebuild it as a graph" in text and "rs.load_weights (docs/porting.md)" in text

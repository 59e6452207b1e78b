"""Delete, copy, cut, paste (also into another document), duplicate, align and layout."""
from __future__ import annotations

import math
import random

import pytest
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication

from revstudio.core import project
from revstudio.core.generate import revnet_chain
from revstudio.core.graph import Graph
from revstudio.qt.canvas import CLIPBOARD_MIME, GraphView, layout
from revstudio.qt.canvas.node_item import WIDTH
from revstudio.qt.document import Document


@pytest.fixture
def make_view(qtbot):
    docs: list[Document] = []

    def make(graph: Graph) -> GraphView:
        doc = Document(graph)
        docs.append(doc)
        v = GraphView(doc)
        qtbot.addWidget(v)
        v.resize(900, 600)
        return v

    yield make
    for doc in docs:
        doc.undo_stack.clear()  # no clean-state signal while Qt tears documents down


def chain() -> Graph:
    g = Graph("chain")
    g.add_node("Input", "x", {"shape": [8, 16, 16]}, (0, 0))
    g.add_node("Conv", "a", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (260, 40))
    g.add_node("Activation", "b", {"fn": "tanh"}, (520, -30))
    g.add_node("Output", "o", {}, (780, 10))
    g.connect("x.out", "a.in")
    g.connect("a.out", "b.in")
    g.connect("b.out", "o.in")
    return g


def test_delete_selection_removes_nodes_and_wires_in_one_step(make_view):
    view = make_view(chain())
    doc = view.document
    before = project.dumps(doc.graph)
    view.select_nodes(["a"])
    wire = view.scene().wire_items[next(e for e in doc.graph.edges if str(e) == "b.out -> o.in")]
    wire.setSelected(True)
    view.delete_selection()
    assert "a" not in doc.graph.nodes and not doc.graph.edges_into("o")
    assert [str(e) for e in doc.graph.edges] == []
    doc.undo_stack.undo()
    assert project.dumps(doc.graph) == before


def test_copy_paste_renames_ids_and_keeps_internal_wires(make_view):
    view = make_view(chain())
    doc = view.document
    view.select_nodes(["a", "b"])
    assert view.copy()
    data = QApplication.clipboard().mimeData()
    assert data.hasFormat(CLIPBOARD_MIME)
    pasted = view.paste()
    assert len(pasted) == 2 and not {"a", "b"} & set(pasted)
    assert sorted(view.selected_node_ids()) == sorted(pasted)
    new_a = next(n for n in pasted if doc.graph.node(n).type == "Conv")
    new_b = next(n for n in pasted if doc.graph.node(n).type == "Activation")
    assert [str(e) for e in doc.graph.edges_from(new_a)] == [f"{new_a}.out -> {new_b}.in"]
    assert not doc.graph.edges_into(new_a)  # links to the rest of the graph are not copied
    assert doc.graph.node(new_b).params == {"fn": "tanh"}
    ax, ay = doc.graph.node("a").pos
    assert doc.graph.node(new_a).pos != (ax, ay)
    doc.undo_stack.undo()
    assert set(doc.graph.nodes) == {"x", "a", "b", "o"}


def test_cut_then_paste_into_a_second_document(make_view):
    first = make_view(chain())
    second = make_view(Graph("other"))
    first.select_nodes(["a", "b"])
    first.cut()
    assert set(first.document.graph.nodes) == {"x", "o"}
    pasted = second.paste()
    assert sorted(pasted) == ["a", "b"]  # free ids in the other file are kept
    assert [str(e) for e in second.document.graph.edges] == ["a.out -> b.in"]
    assert set(second.scene().node_items) == {"a", "b"}
    second.document.undo_stack.undo()
    assert not second.document.graph.nodes
    first.document.undo_stack.undo()
    assert set(first.document.graph.nodes) == {"x", "a", "b", "o"}


def test_pasting_a_repeat_brings_its_groups_along(make_view):
    source = make_view(revnet_chain(2, channels=4, size=8, wired=False))
    target = make_view(chain())
    source.select_nodes(["blocks"])
    source.copy()
    pasted = target.paste()
    graph = target.document.graph
    assert len(pasted) == 1 and graph.node(pasted[0]).type == "Repeat"
    group = graph.node(pasted[0]).params["group"]
    assert group in graph.groups
    src_groups = source.document.graph.groups
    assert set(graph.groups) == set(src_groups)  # the block and the f/g bodies it uses
    for name, body in src_groups.items():
        assert set(graph.groups[name].nodes) == set(body.nodes)
    target.document.undo_stack.undo()
    assert not graph.groups and set(graph.nodes) == {"x", "a", "b", "o"}


def test_pasting_a_group_whose_name_is_taken_by_a_different_body_renames_it(make_view):
    source = make_view(revnet_chain(2, channels=4, size=8, wired=False))
    other = revnet_chain(2, channels=6, size=8, wired=False)  # same group names, other bodies
    target = make_view(other)
    source.select_nodes(["blocks"])
    source.copy()
    said: list[str] = []
    target.message.connect(said.append)
    pasted = target.paste()
    graph = target.document.graph
    group = graph.node(pasted[0]).params["group"]
    assert group != "block" and group in graph.groups
    # the status line says so: the pasted node names a group the user never named
    assert said[-1].endswith(f"; groups f, g, block differ from this project's: pasted as f_1, g_1, {group}"), said
    assert graph.node("blocks").params["group"] == "block"  # the existing node is untouched
    # the renamed block refers to renamed copies of the f/g bodies it was copied with
    src = source.document.graph
    refs = [v for n in graph.groups[group].nodes.values() for v in n.params.values()
            if isinstance(v, str) and v in graph.groups]
    assert refs and all(r not in ("f", "g") for r in refs)
    for r in refs:
        original = r.rsplit("_", 1)[0]
        assert {k: n.params for k, n in graph.groups[r].nodes.items()} == \
            {k: n.params for k, n in src.groups[original].nodes.items()}
    target.document.current_report()
    problems = [d.message for d in target.document.report.diagnostics
                if d.severity == "error" and d.node == pasted[0] and "connect" not in d.message]
    assert not problems


def test_paste_of_foreign_text_is_refused_with_a_reason(make_view):
    view = make_view(chain())
    said: list[str] = []
    view.message.connect(said.append)
    QApplication.clipboard().setText("hello, not a graph")
    assert view.paste() == []
    assert said and said[-1].startswith("Cannot paste")
    QApplication.clipboard().setText('{"format": "revstudio", "version": 1, "nodes": [{"id": 3}]}')
    assert view.paste() == []
    assert "clipboard" in said[-1]
    assert set(view.document.graph.nodes) == {"x", "a", "b", "o"}


def test_duplicate_puts_the_copy_beside_the_original(make_view):
    view = make_view(chain())
    view.select_nodes(["b"])
    new = view.duplicate()
    assert len(new) == 1
    items = view.scene().node_items
    assert items[new[0]].pos().x() > items["b"].sceneBoundingRect().right()
    copy = items[new[0]].sceneBoundingRect().adjusted(8, 8, -8, -8)
    assert not any(copy.intersects(i.sceneBoundingRect()) for n, i in items.items() if n != new[0])


def test_a_duplicate_is_not_set_on_a_wire(make_view):
    """Ctrl+D on an Input whose wire ran right to a far node put the copy on that wire, where it
    looked wired into the chain (the wire entered its input dot and left by its output dot)."""
    g = chain()
    g.node("a").pos = (640.0, 0.0)
    g.node("b").pos = (900.0, 0.0)
    g.node("o").pos = (1160.0, 0.0)
    view = make_view(g)
    view.select_nodes(["x"])
    (new,) = view.duplicate()
    scene = view.scene()
    copy = scene.node_items[new].sceneBoundingRect()
    crossing = [str(e) for e, w in scene.wire_items.items() if w.scene_path().intersects(copy)]
    assert not crossing, (copy, crossing)
    assert copy.left() > scene.node_items["x"].sceneBoundingRect().right()  # still beside the original


def test_duplicate_is_called_duplicate_in_history_undo_and_status(make_view):
    """Ctrl+D showed as "Paste b1" in History and "Undid Paste b1", and said "Pasted 1 node"."""
    view = make_view(chain())
    said = []
    view.message.connect(said.append)
    view.select_nodes(["b"])
    new = view.duplicate()
    stack = view.document.undo_stack
    assert stack.undoText() == f"Duplicate {new[0]}"
    assert said[-1].startswith("Duplicated 1 node")
    view.select_nodes(["a", "b"])
    view.duplicate()
    assert stack.undoText() == "Duplicate 2 nodes" and said[-1].startswith("Duplicated 2 nodes")
    view.copy()
    view.paste()
    assert stack.undoText() == "Paste 2 nodes" and said[-1].startswith("Pasted 2 nodes")


@pytest.mark.parametrize("axis", layout.ALIGN_AXES)
def test_align_is_one_undoable_move(make_view, axis):
    g = chain()
    g.node("a").pos = (261.0, 40.5)  # an older file's half pixel; the mean of three centres is a third
    view = make_view(g)
    doc = view.document
    before = project.dumps(doc.graph)
    view.select_nodes(["x", "a", "b"])
    count = doc.undo_stack.count()
    assert view.align(axis)
    assert doc.undo_stack.count() == count + 1
    items = [view.scene().node_items[n] for n in ("x", "a", "b")]
    rects = [i.sceneBoundingRect() for i in items]
    key = {
        "left": lambda i: i.pos().x(), "right": lambda i: i.pos().x() + WIDTH,
        "top": lambda i: i.pos().y(), "bottom": lambda i: i.pos().y() + i.height,
        "horizontal": lambda i: i.pos().y() + i.height / 2, "vertical": lambda i: i.pos().x() + WIDTH / 2,
    }[axis]
    # whole pixels, as layout and dragging leave them; centres share one whole pixel
    assert all(v == int(v) for n in ("x", "a", "b") for v in doc.graph.node(n).pos), rects
    assert len({math.floor(key(i)) for i in items}) == 1, rects
    doc.undo_stack.undo()
    assert project.dumps(doc.graph) == before


@pytest.mark.parametrize("axis", ["horizontal", "vertical"])
def test_distribute_spaces_the_selection_evenly_in_one_step(make_view, axis):
    g = chain()
    g.node("a").pos, g.node("b").pos = (130.0, 333.0), (617.5, 90.0)  # uneven gaps, a half pixel
    view = make_view(g)
    doc = view.document
    before = project.dumps(doc.graph)
    view.select_nodes(["x", "a", "b", "o"])
    count = doc.undo_stack.count()
    view.distribute(axis)
    assert doc.undo_stack.count() == count + 1
    k = 0 if axis == "horizontal" else 1
    items = sorted((view.scene().node_items[n] for n in ("x", "a", "b", "o")),
                   key=lambda i: (i.pos().x(), i.pos().y())[k] + (WIDTH if k == 0 else i.height) / 2)
    lo = [(i.pos().x(), i.pos().y())[k] for i in items]
    hi = [lo[j] + (WIDTH if k == 0 else items[j].height) for j in range(len(items))]
    gaps = [lo[j + 1] - hi[j] for j in range(len(items) - 1)]
    assert max(gaps) - min(gaps) <= 1, gaps  # even, to the whole pixel
    assert all(v == int(v) for n in ("x", "a", "b", "o") for v in doc.graph.node(n).pos)
    doc.undo_stack.undo()
    assert project.dumps(doc.graph) == before
    view.select_nodes(["x", "a"])
    assert not view.distribute(axis)  # two nodes: nothing to spread


def test_distribute_is_in_the_align_menus(make_view):
    view = make_view(chain())
    view.select_nodes(["x", "a", "b"])
    menu, _ = view.build_context_menu(QPointF(-500, -500))
    align = next(a.menu() for a in menu.actions() if a.menu() is not None and a.text() == "Align")
    texts = [a.text() for a in align.actions()]
    assert "Distribute Horizontally" in texts and "Distribute Vertically" in texts


def test_layout_of_the_whole_graph_is_one_command_and_left_to_right(make_view):
    g = revnet_chain(2, channels=4, size=8)
    rng = random.Random(3)
    for node in g.nodes.values():
        node.pos = (rng.uniform(-900, 900), rng.uniform(-900, 900))
    view = make_view(g)
    doc = view.document
    before = project.dumps(doc.graph)
    count = doc.undo_stack.count()
    assert view.auto_layout(selection_only=False)
    assert doc.undo_stack.count() == count + 1
    pos = {n: doc.graph.node(n).pos for n in doc.graph.nodes}
    for e in doc.graph.edges:
        assert pos[e.src.node][0] < pos[e.dst.node][0], f"{e} should point right"
    rects = [i.sceneBoundingRect() for i in view.scene().node_items.values()]
    for i, r in enumerate(rects):
        for s in rects[i + 1:]:
            assert not r.adjusted(6, 6, -6, -6).intersects(s.adjusted(6, 6, -6, -6)), "nodes overlap"
    doc.undo_stack.undo()
    assert project.dumps(doc.graph) == before


def test_layout_of_a_selection_keeps_it_in_place(make_view):
    view = make_view(chain())
    doc = view.document
    view.select_nodes(["a", "b", "o"])
    left = min(doc.graph.node(n).pos[0] for n in ("a", "b", "o"))
    top = min(doc.graph.node(n).pos[1] for n in ("a", "b", "o"))
    assert view.auto_layout(selection_only=True)
    assert doc.graph.node("x").pos == (0.0, 0.0)
    assert min(doc.graph.node(n).pos[0] for n in ("a", "b", "o")) == left
    assert min(doc.graph.node(n).pos[1] for n in ("a", "b", "o")) == top
    xs = [doc.graph.node(n).pos[0] for n in ("a", "b", "o")]
    assert xs == sorted(xs) and len(set(xs)) == 3


def test_layered_layout_orders_layers_and_separates_components():
    sizes = {n: (100.0, 50.0) for n in "abcdeXY"}
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e"), ("X", "Y")]
    pos = layout.layered_layout("abcdeXY", edges, sizes)
    assert pos["a"][0] < pos["b"][0] == pos["c"][0] < pos["d"][0] < pos["e"][0]
    assert pos["b"][1] != pos["c"][1]
    assert min(pos["X"][1], pos["Y"][1]) > max(pos[n][1] for n in "abcde")  # stacked below
    # a cycle (reported by the checker) still gets a layout
    cyc = layout.layered_layout("pq", [("p", "q"), ("q", "p")], {"p": (10, 10), "q": (10, 10)})
    assert cyc["p"] != cyc["q"]


@pytest.mark.parametrize("seed", [11, 29, 47])
def test_random_gui_edits_undo_back_to_the_original(make_view, seed):
    view = make_view(revnet_chain(2, channels=4, size=8))
    doc = view.document
    original = project.dumps(doc.graph)
    rng = random.Random(seed)
    types = ["Conv", "Activation", "Dropout", "Linear", "Output"]
    for _ in range(40):
        ids = list(doc.graph.nodes)
        action = rng.choice(["add", "delete", "dup", "paste", "align", "layout", "connect", "quick", "move"])
        if action == "add":
            view.add_node_at(rng.choice(types), QPointF(rng.uniform(-500, 500), rng.uniform(-500, 500)))
        elif action == "delete" and ids:
            view.select_nodes(rng.sample(ids, min(len(ids), rng.randint(1, 3))))
            view.delete_selection()
        elif action == "dup" and ids:
            view.select_nodes(rng.sample(ids, min(len(ids), 2)))
            view.duplicate()
        elif action == "paste" and ids:
            view.select_nodes(rng.sample(ids, min(len(ids), 3)))
            view.copy()
            view.paste()
        elif action == "align" and len(ids) > 1:
            view.select_nodes(rng.sample(ids, 2))
            view.align(rng.choice(layout.ALIGN_AXES))
        elif action == "layout":
            view.auto_layout(selection_only=False)
        elif action == "connect" and len(ids) > 1:
            a, b = rng.sample(ids, 2)
            outs, ins = doc.graph.ports(a)[1], doc.graph.ports(b)[0]
            if outs and ins:
                from revstudio.core.graph import PortRef
                view.scene().connect_ports(PortRef(a, outs[0]), PortRef(b, ins[0]), replace=rng.random() < 0.5)
        elif action == "quick" and ids:
            n = rng.choice(ids)
            outs = doc.graph.ports(n)[1]
            if outs:
                popup = view.open_quick_add(QPointF(0, 0), f"{n}.{outs[0]}")
                popup.choose(rng.choice(["Activation", "Dropout"]))
        elif action == "move" and ids:
            item = view.scene().node_items[rng.choice(ids)]
            item.setPos(item.pos() + QPointF(rng.uniform(-50, 50), rng.uniform(-50, 50)))
            view.scene().commit_moves()
        # the scene never drifts from the graph
        assert set(view.scene().node_items) == set(doc.graph.nodes)
        assert set(view.scene().wire_items) == set(doc.graph.edges)
    final = project.dumps(doc.graph)
    assert doc.undo_stack.count() > 10
    while doc.undo_stack.canUndo():
        doc.undo_stack.undo()
    assert project.dumps(doc.graph) == original
    while doc.undo_stack.canRedo():
        doc.undo_stack.redo()
    assert project.dumps(doc.graph) == final
    assert set(view.scene().node_items) == set(doc.graph.nodes)


def test_history_names_the_node_a_paste_created(make_window, settle):
    # a pasted 'a' that became 'a_copy' was listed in History as "Paste a"
    window = make_window(chain())
    view = window.current_view()
    view.select_nodes(["a"])
    assert view.copy()
    assert view.paste() == ["a_copy"]
    settle()
    stack = window.document.undo_stack
    assert stack.text(stack.index() - 1) == "Paste a_copy"
    history = window.history.model()
    assert history.data(history.index(stack.index(), 0)) == "Paste a_copy"


def test_the_paste_message_names_a_renamed_group():
    from revstudio.qt.canvas.clipboard import paste_message

    assert paste_message("Pasted", {"a": "a"}, {}) == "Pasted 1 node"
    assert paste_message("Pasted", {"a": "a_copy", "b": "b"}, {"block": "block_1"}) == \
        "Pasted 2 nodes (renamed a → a_copy); group block differs from this project's block: pasted as block_1"


def test_copies_are_named_after_the_nodes_they_copy(make_view):
    # conv1 and conv2 copied and pasted became conv3 and conv4: in the canvas and as the exported
    # code's attributes they read as two more layers of the row, with nothing saying what they copy
    g = Graph("row")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    for i, x in ((1, 240), (2, 480)):
        g.add_node("Conv", f"conv{i}", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (x, 0))
    g.connect("x.out", "conv1.in")
    g.connect("conv1.out", "conv2.in")
    view = make_view(g)
    view.select_nodes(["conv1", "conv2"])
    assert view.copy()
    assert view.paste() == ["conv1_copy", "conv2_copy"]
    assert [str(e) for e in g.edges_into("conv2_copy")] == ["conv1_copy.out -> conv2_copy.in"]
    assert view.paste() == ["conv1_copy2", "conv2_copy2"]
    view.select_nodes(["conv1"])
    assert view.duplicate() == ["conv1_copy3"]
    view.select_nodes(["conv2_copy"])
    assert view.duplicate() == ["conv2_copy3"]  # a copy of a copy counts on from the same node
    assert "conv3" not in g.nodes and "conv4" not in g.nodes


def test_nodes_from_another_window_keep_their_ids_where_free_and_are_named_as_copies_where_not(make_view):
    source = make_view(chain())
    source.select_nodes(["a", "b"])
    assert source.copy()  # (the system clipboard: what another revstudio window reads)
    other = Graph("other")
    other.add_node("Activation", "b", {"fn": "relu"}, (0, 0))
    target = make_view(other)
    assert target.paste() == ["a", "b_copy"]
    assert other.node("b").params == {"fn": "relu"} and other.node("b_copy").params == {"fn": "tanh"}

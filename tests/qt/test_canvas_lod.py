"""Zoomed out: nodes are blocks in their type's colour, the selection is a thick outline,
a broken input is a red bar, and clicking a Problem zooms in on its node."""
from __future__ import annotations

from PySide6.QtGui import QColor, QImage

from revstudio.core.graph import Graph
from revstudio.qt.canvas import GraphView
from revstudio.qt.document import Document


def _graph(broken: bool = False) -> Graph:
    g = Graph("lod")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    g.add_node("Conv", "c", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (220, 0))
    g.add_node("Output", "y", {}, (440, 0))
    g.connect("x.out", "c.in")
    if not broken:
        g.connect("c.out", "y.in")
    return g


def _count(image: QImage, color: QColor, tolerance: int = 18) -> int:
    n = 0
    for y in range(0, image.height(), 2):
        for x in range(0, image.width(), 2):
            p = image.pixelColor(x, y)
            if abs(p.red() - color.red()) + abs(p.green() - color.green()) + abs(p.blue() - color.blue()) < tolerance:
                n += 1
    return n


def _far_view(qtbot, graph: Graph) -> GraphView:
    view = GraphView(Document(graph))
    qtbot.addWidget(view)
    view.resize(500, 300)
    view.show()
    qtbot.waitExposed(view)
    view.resetTransform()
    view.scale(0.2, 0.2)
    view.centerOn(view.scene().nodes_rect().center())
    return view


def test_a_selection_far_out_is_a_thick_outline(qtbot):
    view = _far_view(qtbot, _graph())
    color = view.scene().theme.selection
    before = _count(view.grab().toImage(), color)
    view.select_all()
    after = _count(view.grab().toImage(), color)
    assert after > before + 60, (before, after)  # three cards with a 4 px outline each


def test_a_broken_input_far_out_is_a_red_bar(qtbot):
    g = _graph(broken=True)
    view = _far_view(qtbot, g)
    assert view.scene().node_items["y"].error_ports or view.scene().node_items["y"].errors
    assert _count(view.grab().toImage(), view.scene().theme.error) > 40


def test_far_out_cards_show_their_type_in_its_colour(qtbot):
    view = _far_view(qtbot, _graph())
    theme = view.scene().theme
    image = view.grab().toImage()
    assert _count(image, theme.category_color(view.scene().node_items["c"].display.category)) > 20


def test_clicking_a_problem_brings_its_node_into_readable_view(make_window, settle):
    from revstudio.core.generate import large_graph

    g = large_graph(120)
    g.add_node("Activation", "stray", {"fn": "relu"}, (9000, 3000))  # unwired: a Problem
    window = make_window(g)
    view = window.current_view()
    view.fit_all()
    assert view.zoom() < 0.5
    panel = window.diagnostics
    row = next(i for i in range(panel.tree.topLevelItemCount())
               if panel.tree.topLevelItem(i).data(0, panel.tree.topLevelItem(i).type() + 0x101) == "stray"
               or panel.tree.topLevelItem(i).text(1).startswith("stray"))
    panel.tree.itemClicked.emit(panel.tree.topLevelItem(row), 0)
    settle()
    assert view.selected_node_ids() == ["stray"]
    assert view.zoom() >= 0.8
    centre = view.mapFromScene(view.scene().node_items["stray"].sceneBoundingRect().center())
    assert view.viewport().rect().contains(centre)


def test_far_names_stay_readable_and_even(qtbot):
    """Zoomed out, a long type name is cut with "…" at a readable size rather than stubbed
    ("Inv.") in large letters beside a tiny "ActNorm"; much further out, stubs remain."""
    from revstudio.qt.canvas.node_item import far_title

    mid = 0.3  # a 9-node flow fitted to the view
    names = {n: far_title(n, 90.0, mid) for n in ("Squeeze", "ActNorm", "InvConv1x1", "AffineCoupling", "Input")}
    for name, (text, _) in names.items():  # whole, or its first four letters or more and "…"
        assert text == name or (text.endswith("…") and name.startswith(text[:-1]) and len(text) >= 5), names
    assert names["AffineCoupling"][0].endswith("…")
    assert all(size * mid >= 6.0 for _, size in names.values()), names  # 6 pt on screen at least
    sizes = [size for name, (_, size) in names.items() if name != "Input"]
    assert max(sizes) / min(sizes) < 1.3, names  # even from card to card
    far = 0.14  # a 25-node RevNet fitted
    assert far_title("Activation", 90.0, far)[0] == "Acti."  # "Act." would read as ActNorm too
    assert far_title("Conv", 90.0, far)[0] == "Conv"
    assert far_title("Concat", 90.0, far)[0] == "Conc."  # "Con." would read as Conv too


def test_far_out_the_region_label_stays_above_its_nodes(qtbot) -> None:
    """Fitted to a wide RevNet (zoom ~0.1) the label read "ersible · saves _0.0 KiB ..." through
    the nodes' top row; it now keeps ~12 screen px in the band above the box, its budget part kept."""
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QFontMetricsF

    from revstudio.core.generate import revnet_chain

    graph = revnet_chain(4, channels=4, size=8)
    graph.training = {"version": 1, "memory_budget": 20_000, "batch_size": 8}
    view = GraphView(Document(graph))
    qtbot.addWidget(view)
    (region,) = view.scene().region_items
    assert region.label.endswith("steps kept")
    box = region.box()
    for lod in (0.11, 0.09, 0.075):
        font, rect, shown, inside = region.label_layout(lod)
        assert not inside and rect.bottom() <= box.top()  # above the box: no node covers it
        assert region.boundingRect().contains(rect.adjusted(0, 0, 0, -1))  # drawn where the item repaints
        assert 10 <= QFontMetricsF(font).height() * lod <= 16  # readable, screen px
        assert shown.startswith("reversible") and shown.endswith("steps kept")
    # hovering the band above the box is not hovering the region (no tooltip from empty canvas)
    assert region.shape().contains(box.center()) and not region.shape().contains(QPointF(box.left() + 20, box.top() - 40))
    _, _, _, inside = region.label_layout(0.03)  # nodes are specks: inside, as large as fits
    assert inside
    _, rect, shown, inside = region.label_layout(0.5)
    assert not inside and rect.bottom() <= box.top() and shown == region.label


class _RecordingPainter:
    """Stands in for the QPainter a card paints with at zoom ``lod``: keeps each text and its font."""

    def __init__(self, lod: float) -> None:
        from PySide6.QtGui import QFont, QTransform

        self._transform = QTransform.fromScale(lod, lod)
        self.font = QFont()
        self.texts: list[tuple[str, float]] = []

    def worldTransform(self):  # noqa: N802 - QPainter API
        return self._transform

    def setFont(self, font) -> None:  # noqa: N802 - QPainter API
        from PySide6.QtGui import QFont

        self.font = QFont(font)

    def drawText(self, *args) -> None:  # noqa: N802 - QPainter API
        text = next(a for a in args if isinstance(a, str))
        self.texts.append((text, self.font.pointSizeF()))

    def __getattr__(self, name):  # pens, brushes, shapes: not text
        return lambda *args, **kwargs: None


def test_a_cards_words_are_drawn_large_enough_to_read_or_not_at_all(qtbot):
    # Between 35 % (where cards turn into blocks) and about 60 % the detailed card drew its title,
    # id and port names 4-5 px high: a title such as "Merge" read as "....." in a screenshot.
    # Every word drawn now is at least 4.5 pt (6 px) on screen, from the 10 % floor to 400 %, and
    # the title is always there while the card is drawn in detail.
    from PySide6.QtWidgets import QStyleOptionGraphicsItem

    from revstudio.qt.canvas.node_item import FAR

    min_pt = 4.5  # 6 px at 96 dpi

    g = _graph()
    g.add_node("AffineCoupling", "block0_a_rather_long_coupling_id", {}, (660, 0))
    view = GraphView(Document(g))
    qtbot.addWidget(view)
    option = QStyleOptionGraphicsItem()
    for percent in range(10, 401, 5):
        lod = percent / 100
        for node_id, item in view.scene().node_items.items():
            painter = _RecordingPainter(lod)
            item.paint(painter, option, None)
            small = [(t, round(pt * lod, 2)) for t, pt in painter.texts if pt * lod < min_pt - 1e-6]
            assert not small, (percent, node_id, small)
            if lod >= FAR:
                assert painter.texts and painter.texts[0][0].rstrip("…").strip(". "), (percent, node_id)


def test_a_wires_shape_label_is_drawn_large_enough_to_read_or_not_at_all(qtbot):
    # From 45 % to about 64 % the wires' shape labels ("4x16x16", 7 pt) were drawn 3-4.5 pt on
    # screen, grey dots on every wire of a fitted graph; the wire's tooltip keeps the shape.
    from PySide6.QtWidgets import QStyleOptionGraphicsItem

    min_pt = 4.5
    view = GraphView(Document(_graph()))
    qtbot.addWidget(view)
    option = QStyleOptionGraphicsItem()
    wires = list(view.scene().wire_items.values())
    assert wires and all(w.label for w in wires)
    for percent in range(10, 401, 5):
        lod = percent / 100
        for wire in wires:
            for hovered in (False, True):
                wire._hovered = hovered
                painter = _RecordingPainter(lod)
                wire.paint(painter, option, None)
                small = [(t, round(pt * lod, 2)) for t, pt in painter.texts if pt * lod < min_pt - 1e-6]
                assert not small, (percent, str(wire.edge), small)
                if percent == 100 and hovered:
                    assert painter.texts  # readable: the label is drawn
        assert all("shape" in w.toolTip() for w in wires)


def test_a_region_label_ends_before_a_node_standing_in_its_band(qtbot):
    """An Output a little higher than a narrow region's top covered the end of its label
    ("… (batch 32, float32)" ran under the card); the label now ends before it, cut in the
    middle, with the whole text in the tooltip, and comes back whole when the node moves away."""
    from revstudio.core.commands import Move

    g = Graph("band")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    g.add_node("Permute", "p", {}, (240, 0))
    g.add_node("Output", "y", {}, (480, -40))
    g.connect("x.out", "p.in")
    g.connect("p.out", "y.in")
    doc = Document(g)
    view = GraphView(doc)
    qtbot.addWidget(view)
    scene = view.scene()
    (region,) = scene.region_items
    card = scene.node_items["y"].sceneBoundingRect()
    _, rect, shown, _ = region.label_layout(1.0)
    assert rect.right() <= card.left(), (rect, card)
    assert shown != region.label and "…" in shown and shown.startswith("reversible")
    assert region.label in region.toolTip()
    doc.push(Move(g, {"y": (480.0, 200.0)}))
    _, rect, shown, _ = region.label_layout(1.0)
    assert shown == region.label


class _PenPainter(_RecordingPainter):
    """Keeps every pen a card sets (its outline among them)."""

    def __init__(self, lod: float) -> None:
        super().__init__(lod)
        self.pens = []

    def setPen(self, pen) -> None:  # noqa: N802 - QPainter API
        from PySide6.QtGui import QPen

        if isinstance(pen, QPen):
            self.pens.append(QPen(pen))


def test_a_warned_nodes_outline_cannot_be_taken_for_the_selection(qtbot):
    """Warned nodes (an unread Input) were outlined in the selection's amber, solid, as thick: five
    duplicated Inputs read as five selected nodes (#e8a33d vs #f0b429 dark, #c27803 vs #d48806 light)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QStyleOptionGraphicsItem

    g = _graph()
    g.add_node("Input", "unread", {"shape": [4, 8, 8]}, (0, 200))
    for dark in (True, False):
        view = GraphView(Document(g))
        qtbot.addWidget(view)
        scene = view.scene()
        scene.set_theme(dark)
        warned, chosen = scene.node_items["unread"], scene.node_items["c"]
        assert warned.warnings and not chosen.warnings and not chosen.errors
        chosen.setSelected(True)
        for lod in (1.0, 0.5, 0.2):
            looks = []
            for item, colour in ((warned, scene.theme.warning), (chosen, scene.theme.selection)):
                painter = _PenPainter(lod)
                item.paint(painter, QStyleOptionGraphicsItem(), None)
                pens = [p for p in painter.pens if p.color() == colour]
                assert pens, (dark, lod)
                looks.append({(p.style(), round(p.widthF(), 1)) for p in pens})
            w, s = scene.theme.warning, scene.theme.selection
            near = abs(w.red() - s.red()) + abs(w.green() - s.green()) + abs(w.blue() - s.blue()) < 120
            if near:  # the same hue: the pen's style must tell them apart
                assert all(style != Qt.PenStyle.SolidLine for style, _ in looks[0]), (dark, lod, looks)


def _two_branch_fitted(qtbot):
    from revstudio import resources
    from revstudio.core.project import load

    view = GraphView(Document(load(resources.path("examples", "two_branch.revs"))))
    qtbot.addWidget(view)
    view.resize(1000, 620)  # (a canvas on a 1366x768 laptop)
    view.show()
    qtbot.waitExposed(view)
    view.fit_all()
    return view


def _painted(item, lod: float) -> list[tuple[str, float]]:
    """The words a card paints at ``lod``, each with its size on screen (points)."""
    from PySide6.QtWidgets import QStyleOptionGraphicsItem

    painter = _RecordingPainter(lod)
    item.paint(painter, QStyleOptionGraphicsItem(), None)
    return [(text, pt * lod) for text, pt in painter.texts]


def test_at_a_typical_examples_fitted_zoom_cards_show_their_words_at_100_and_a_big_title_above(qtbot, qapp):
    # Fitted (68 %), a card drew its title 6 pt and its id, port names and params 5 pt on screen
    # (6-7 px), whatever the text size. At 100 % text it still does (the ports and parameters are
    # what a user draws with); at a larger text size, which asks for larger words, it shows its type
    # and id at a readable size and leaves the detail out until zoomed in to where that reads too.
    from revstudio.qt import theme
    from revstudio.qt.canvas.card_text import card_text

    try:
        for percent in theme.TEXT_SCALES:
            theme.set_text_scale(qapp, percent)
            view = _two_branch_fitted(qtbot)
            lod = view.zoom()
            readable = card_text(percent).readable_pt
            if percent == 100:
                assert card_text(percent).words_zoom <= lod < 0.7, lod
                texts = [t for t, pt in _painted(view.scene().node_items["a_conv"], lod)]
                assert "out_channels: 4" in texts and "a_conv" in texts, texts
                for node_id, item in view.scene().node_items.items():
                    assert all(pt >= readable - 1e-6 for _t, pt in _painted(item, lod)), node_id
                view.close()
                continue
            assert 0.5 < lod < card_text(percent).words_zoom, lod
            for node_id, item in view.scene().node_items.items():
                words = _painted(item, lod)
                texts = [t for t, _pt in words]
                assert texts and texts[0] == item.display.title, (percent, node_id, words)
                assert words[0][1] >= card_text(percent).big_pt - 1e-6  # the type, bigger than readable
                assert all(pt >= readable - 1e-6 for _t, pt in words), (percent, node_id, words)
                assert set(texts) <= {item.display.title, node_id}  # no port names, no params
            view.close()
        theme.set_text_scale(qapp, 100)
        view = _two_branch_fitted(qtbot)
        item = view.scene().node_items["a_conv"]
        assert [t for t, _pt in _painted(item, 0.6)] == ["Conv", "a_conv"]  # zoomed out past 67 %
        view.close()
    finally:
        theme.set_text_scale(qapp, 100)


def test_the_text_size_scales_a_cards_words_and_none_is_drawn_too_small_to_read(qtbot, qapp):
    from revstudio.qt import theme
    from revstudio.qt.canvas.card_text import LINE_GAP, card_text
    from revstudio.qt.canvas.node_item import FAR

    g = _graph()
    g.add_node("AffineCoupling", "block0_a_rather_long_coupling_id", {}, (660, 0))
    view = GraphView(Document(g))
    qtbot.addWidget(view)
    conv = view.scene().node_items["c"]
    sizes = {}
    try:
        for percent in theme.TEXT_SCALES:
            theme.set_text_scale(qapp, percent)
            readable = card_text(percent).readable_pt
            for zoom in range(35, 401, 5):
                lod = zoom / 100
                for node_id, item in view.scene().node_items.items():
                    words = _painted(item, lod)
                    assert all(pt >= readable - 1e-6 for _t, pt in words), (percent, zoom, node_id, words)
                    # (a card too short on screen to hold its title readable shows none: 54 px at 35 %)
                    if lod >= FAR and item.height * lod >= card_text(percent).big_pt * 4 / 3 * LINE_GAP:
                        assert words and words[0][0].rstrip("…"), (percent, zoom, node_id)
            at_4 = dict(_painted(conv, 4.0))
            sizes[percent] = at_4["out_channels: 4"]  # a parameter line zoomed in
    finally:
        theme.set_text_scale(qapp, 100)
    assert sizes[150] > sizes[100] and sizes[200] >= sizes[150], sizes


def test_a_new_text_size_repaints_the_canvas_at_once(make_window, qtbot, qapp, revnet):
    """Cards keep their paint in a cache: without dropping it, they kept the old text size until
    each happened to repaint."""
    from revstudio.qt import theme

    window = make_window(revnet)
    view = window.current_view()
    view.resetTransform()  # 100 %: every card's words drawn
    qtbot.wait(50)
    try:
        window.settings.text_scale = 150
        window.apply_preferences()
        qtbot.wait(300)  # (the panels' new sizes settle)
        shown = view.grab().toImage()
        for item in view.scene().node_items.values():
            item.update()  # (what a fresh paint of each card draws now)
        qtbot.wait(50)
        assert view.grab().toImage() == shown
    finally:
        window.settings.text_scale = 100
        window.apply_preferences()
        theme.set_text_scale(qapp, 100)

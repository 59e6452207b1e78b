"""Import hygiene of the catalog: no torch on import, and torch-only module files
that the code exporter can inline verbatim (only torch/math/typing imports, no clashes)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import revstudio.nodes
from revstudio.nodes import RECIPES

TORCH_DIR = Path(revstudio.nodes.__file__).parent / "torch_modules"
TORCH_FILES = sorted(p for p in TORCH_DIR.glob("*.py") if p.name != "__init__.py")
ALLOWED = {"torch", "math", "typing"}


def test_importing_the_catalog_loads_neither_torch_nor_qt() -> None:
    code = ("import sys, revstudio.nodes; from revstudio.core.spec import registry; "
            "assert len(list(registry)) >= 24; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'PySide6', 'pyqtgraph')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_registry_loads_the_catalog_lazily() -> None:
    code = ("from revstudio.core.spec import registry; import sys; "
            "assert 'revstudio.nodes' not in sys.modules; registry.get('Conv'); "
            "assert 'revstudio.nodes' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_torch_module_files_import_only_torch_math_and_typing() -> None:
    assert TORCH_FILES
    for path in TORCH_FILES:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0 and node.module is not None, f"{path.name}: relative import"
                assert node.module.split(".")[0] in ALLOWED, f"{path.name}: from {node.module}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in ALLOWED, f"{path.name}: import {alias.name}"


def test_torch_module_files_can_be_inlined_together() -> None:
    """Pasting every file into one namespace works; shared top-level names have identical source."""
    seen: dict[str, str] = {}
    namespace: dict[str, object] = {}
    for path in TORCH_FILES:
        source = path.read_text()
        tree = ast.parse(source)
        for node in tree.body:
            names = []
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            for name in names:
                text = ast.get_source_segment(source, node) or ""
                assert seen.setdefault(name, text) == text, f"{name} defined differently in {path.name}"
        exec(compile(source, str(path), "exec"), namespace)  # our own package source, not user data
    classes = {name for name, value in namespace.items() if isinstance(value, type)}
    expected = {"Conv1d", "Conv2d", "Linear", "BiRNN", "Activation", "Identity", "Split", "Concat", "Merge",
                "Flatten", "Reshape", "Permute", "InvConv1x1", "ActNorm", "Squeeze", "AdditiveCoupling",
                "AffineCoupling", "Repeat", "GroupCall", "GlobalAvgPool"}
    assert expected <= classes


def test_every_type_has_a_recipe() -> None:
    from revstudio.core.spec import registry

    builtin = {spec.type_id for spec in registry if registry.provider(spec.type_id).builtin}  # type: ignore[union-attr]
    assert set(RECIPES) == builtin

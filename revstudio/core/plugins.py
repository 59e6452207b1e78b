"""Node types from installed packages: the ``revstudio.nodes`` entry-point group.

Every package that adds node types (the built-in catalog included) names a list
of :class:`NodeSpec` in that group (docs/plugins.md). :func:`load_into` reads
the group once per process. A plugin that cannot be loaded (import error, not a
list of specs, a type id that is already taken) is skipped and reported once,
by name, through :func:`problems` and the ``revstudio.plugins`` logger; it never
stops the app or the CLI. The registry remembers which package provides each
type (:class:`Provider`), so project files can record what to install.
"""
from __future__ import annotations

import logging
import reprlib
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module, metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .spec import NodeSpec, Registry

GROUP = "revstudio.nodes"
BUILTIN = "revstudio.nodes:CATALOG"

# The plugins shipped in revstudio's source as examples, published on no package index: their
# distribution -> their folder in a checkout. ``pip install revstudio-haar`` finds nothing.
SHIPPED = {"revstudio-haar": "examples/plugin"}


def install_advice(dist: str) -> str:
    """What to do to install ``dist``, the distribution a project's plugin record names: for a plugin
    shipped with revstudio's source, ``pip install`` of its folder (this checkout's, where it is one);
    for any other, the package that provides it, by its name or its source folder."""
    folder = SHIPPED.get(dist)
    if folder is None:
        return (f"install the package that provides it, the distribution {dist} (pip install {dist} where it is "
                "published on a package index, else pip install the folder of its source)")
    here = Path(__file__).resolve().parents[2] / folder
    try:
        ours = f'name = "{dist}"' in (here / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        ours = False
    if ours:
        return f"install it from revstudio's source, where it ships as an example (pip install {shlex.quote(str(here))})"
    return (f"it is revstudio's example plugin, shipped in revstudio's source and not on PyPI: install it from a "
            f"revstudio checkout (pip install ./{folder})")
BUILTIN_DISTRIBUTION = "revstudio"
log = logging.getLogger("revstudio.plugins")


@dataclass(frozen=True)
class Provider:
    """Where one node type comes from."""

    name: str                  # the entry point's name ("builtin", "haar")
    value: str                 # what it points at ("revstudio_haar.nodes:SPECS")
    distribution: str | None   # the package to install ("revstudio-haar"); None: not known
    version: str | None = None

    @property
    def builtin(self) -> bool:
        return self.value == BUILTIN

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def label(self) -> str:
        """How messages name the plugin: ``revstudio-haar (entry point 'haar')``."""
        if self.distribution:
            return f"{self.distribution} (entry point {self.name!r})"
        return f"entry point {self.name!r} ({self.value})"


BUILTIN_PROVIDER = Provider("builtin", BUILTIN, BUILTIN_DISTRIBUTION)


@dataclass(frozen=True)
class PluginProblem:
    """A plugin, or one of its node types, that was skipped, and why."""

    plugin: str      # Provider.label
    message: str

    def __str__(self) -> str:
        return f"plugin {self.plugin}: {self.message}"


_problems: list[PluginProblem] = []


def problems() -> list[PluginProblem]:
    """Every plugin problem found in this process so far (each reported once)."""
    return list(_problems)


def report(plugin: str, message: str) -> None:
    """Record a problem unless the same one was reported already; log it once."""
    problem = PluginProblem(plugin, message)
    if problem in _problems:
        return
    _problems.append(problem)
    log.warning("%s", problem)


def why_missing(distribution: str, type_id: str) -> str | None:
    """Why the installed plugin ``distribution`` does not provide ``type_id``, from the problems
    reported while loading it: ``"could not be loaded (...)"``, ``"declares no node types (...)"`` or
    ``"skipped it: ..."``; None when it reported none, as when it is not installed at all."""
    prefix, skipped = f"{distribution} (entry point ", f"node type {type_id!r} skipped: "
    mine = [p.message for p in _problems if p.plugin.startswith(prefix)]
    for message in mine:
        if message.startswith(skipped):
            return "skipped it: " + message.removeprefix(skipped)
    for message in mine:
        if message.startswith("could not be loaded"):
            return message.partition("; its node types are not available")[0]
        if message.startswith("declares no node types"):
            return message.partition("; put its NodeSpecs")[0]
    return None


def _entry_points() -> list[tuple[metadata.EntryPoint, str | None, str | None]]:
    """(entry point, distribution, version) of the group, each pointer once, built-in first."""
    found: dict[str, tuple[metadata.EntryPoint, str | None, str | None]] = {}
    try:
        # entry_points() reads only entry_points.txt (and the first copy of a package on
        # sys.path, as imports do); METADATA is parsed only for the plugins found.
        eps = list(metadata.entry_points(group=GROUP))
    except Exception as exc:  # a damaged dist-info must not stop the app
        report("(all plugins)", f"could not read the installed packages ({type(exc).__name__}: {exc})")
        eps = []
    for ep in eps:
        dist = getattr(ep, "dist", None)
        try:
            name, version = (dist.name, dist.version) if dist is not None else (None, None)
        except Exception:  # METADATA unreadable: the entry point still works, unnamed
            name = version = None
        found.setdefault(ep.value.replace(" ", ""), (ep, name, version))
    # built-in first, then by distribution and entry point name: where two plugins declare one
    # type id, the same one wins on every machine, whatever order sys.path lists them in
    return sorted(found.values(), key=lambda item: (item[0].value.replace(" ", "") != BUILTIN,
                                                    (item[1] or "").lower(), item[0].name))


def _specs_of(obj: Any) -> Any:
    """An entry point may name a list of specs, a module with ``SPECS``, or a function returning one."""
    if isinstance(obj, ModuleType):
        obj = getattr(obj, "SPECS", None)
        if obj is None:
            raise TypeError("the module has no SPECS list; set SPECS = [NodeSpec(...), ...]")
    if callable(obj) and not isinstance(obj, type):
        obj = obj()
    if isinstance(obj, (str, bytes)) or not isinstance(obj, Iterable):
        raise TypeError(f"expected a list of NodeSpec, got {type(obj).__name__}")
    return list(obj)


def load_provider(registry: Registry, provider: Provider, loader: Any) -> int:
    """Register the specs ``loader()`` returns; returns how many were taken."""
    from .spec import NodeSpec

    try:
        specs = _specs_of(loader())
    except BaseException as exc:  # noqa: BLE001 - a plugin's import may even call sys.exit
        if isinstance(exc, KeyboardInterrupt):
            raise
        report(provider.label, f"could not be loaded ({type(exc).__name__}: {exc}{raised_in(exc, provider)}); "
                               "its node types are not available: reinstall or update the plugin")
        return 0
    if not specs and not provider.builtin:  # SPECS = [] left over, or a function that found nothing
        report(provider.label, f"declares no node types ({provider.value} is an empty list); "
                               "put its NodeSpecs in that list, or remove the entry point")
        return 0
    taken = 0
    stale: list[str] = []
    for spec in specs:
        if not isinstance(spec, NodeSpec):
            if type(spec).__name__ == NodeSpec.__name__:  # a NodeSpec of revstudio.core.spec before a reload
                stale.append(str(getattr(spec, "type_id", "?")))
            else:  # (its repr may run to kilobytes: a spec-like object names all its fields)
                report(provider.label, f"{reprlib.repr(spec)} ({type(spec).__name__}) is not a NodeSpec; skipped")
            continue
        try:
            wrong = _malformed(spec) or _bad_default(spec)
        except Exception as exc:  # noqa: BLE001 - a plugin's own Param kind, say, that breaks on a look
            wrong = f"it cannot be checked ({type(exc).__name__}: {exc}); fix its declaration in the plugin"
        if wrong:
            report(provider.label, f"node type {spec.type_id!r} skipped: {wrong}")
            continue
        clash = _clash(registry, spec)
        if clash:
            owner = registry.provider(clash)
            report(provider.label, f"node type {spec.type_id!r} skipped: {clash!r} is already declared by "
                                   f"{owner.label if owner else 'another plugin'}; rename one of them")
            continue
        registry.register(spec, provider=provider)
        taken += 1
        odd = bad_examples(spec)
        if odd:  # only revstudio's catalog tests read them: the type still loads
            report(provider.label, f"node type {spec.type_id!r}: {odd}; revstudio's catalog tests leave its "
                                   "examples out until it is fixed")
    if stale:
        report(provider.label, f"{len(stale)} node types skipped ({reprlib.repr(stale)}): their NodeSpec class is "
                               "from before revstudio.core.spec was reloaded (importlib.reload, IPython's "
                               "%autoreload); restart the Python session (the notebook's kernel)")
    return taken


def raised_in(exc: BaseException, provider: Provider) -> str:
    """Where in the plugin's own package ``exc`` was raised (its innermost frame there), as
    ``", in pkg.module, line N"``: an author whose NodeSpec lacks a field, say, learns which
    line; empty when no frame is the plugin's (a missing dependency, a syntax error, which
    names its file itself)."""
    package = provider.module.split(".")[0]
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if module.split(".")[0] == package:
            where = f", in {module}, line {tb.tb_lineno}"
        tb = tb.tb_next
    return where


def _kind_default(name: str, param: Any) -> str:
    """Where a parameter's default is its kind's own (what ``Int(min=1)`` without ``default=`` has),
    where it came from and what to write: an author who gave none did not know of a 0."""
    from dataclasses import MISSING, fields

    own = next((f.default for f in fields(param) if f.name == "default"), MISSING)
    if own is MISSING or own != param.default or type(own) is not type(param.default):
        return ""
    kind = type(param).__name__
    first = getattr(param, "min", None)
    if first is None and getattr(param, "options", None):
        first = param.options[0]
    write = f": write {name!r}: {kind}(default={first!r}, ...)" if first is not None else ""
    article = "an" if kind[:1] in "AEIOU" else "a"
    return f" ({article} {kind} given no default has {own!r}{write})"


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and value == value.strip() and value != "" and value.isprintable()


def _malformed(spec: NodeSpec) -> str | None:
    """What in a plugin's declaration revstudio cannot use (it would fail later, far from its
    cause: in the palette, the inspector or a saved file), or None."""
    from .params import Param

    if not _is_name(spec.type_id):
        return "its type_id must be a non-empty name (text without control characters or outer spaces)"
    if not isinstance(spec.legacy_ids, (tuple, list)) or not all(_is_name(old) for old in spec.legacy_ids):
        return "legacy_ids must be a tuple of type ids"
    for name in ("category", "help", "title"):
        if not isinstance(getattr(spec, name), str):
            return f"its {name} must be text, not {type(getattr(spec, name)).__name__}"
    if not isinstance(spec.params, Mapping) or not all(
            isinstance(k, str) and isinstance(v, Param) for k, v in spec.params.items()):
        return ("params must map each parameter name to a kind from revstudio.core.params "
                f"(Int, Float, Choice, ...){_first_bad_param(spec.params)}")
    for name in ("inputs", "outputs"):
        rule = getattr(spec, name)
        if not callable(rule) and (isinstance(rule, (str, bytes)) or not isinstance(rule, Iterable)
                                   or not all(isinstance(port, str) for port in rule)):
            return f"{name} must be a tuple of port names or a function (params, groups) -> port names"
        wrong = None if callable(rule) else bad_port_names(name, list(rule))
        if wrong:
            return wrong
    if not callable(spec.infer):
        return "infer must be a function (ctx) -> {port: shape}"
    for name in ("count_params", "build"):
        if getattr(spec, name) is not None and not callable(getattr(spec, name)):
            return f"{name} must be a function (ctx) or None"
    return None


def _first_bad_param(params: Any) -> str:
    """Which entry of a plugin's ``params`` is wrong, and the kind it perhaps meant: the rule
    alone left the author to find ``{"k": 3}`` among a dozen parameters."""
    from .params import Param

    if not isinstance(params, Mapping):
        return f", not a {type(params).__name__}: write params={{'k': Int(default=3, ...)}}"
    for name, value in params.items():
        if not isinstance(name, str):
            return f"; the name {name!r} is not text"
        if not isinstance(value, Param):
            kind = {bool: "Bool", int: "Int", float: "Float", str: "Choice"}.get(type(value))
            meant = f": for a default of {value!r}, write {name!r}: {kind}(default={value!r}, ...)" if kind else ""
            return f"; {name!r} is {reprlib.repr(value)} ({type(value).__name__}), not a parameter kind{meant}"
    return ""


def bad_examples(spec: NodeSpec) -> str | None:
    """Why a type's ``examples`` are not ``(params, input shapes)`` pairs, or None. Giving one
    shape where a tuple of shapes (one per input port) is meant, ``({}, (3, 4, 4))``, stopped the
    catalog tests' collection with "'int' object is not iterable", and the type was not tested."""
    pair = "a (params, input shapes) pair, e.g. ({}, ((3, 4, 4),))"
    if not isinstance(spec.examples, (tuple, list)):
        return f"its examples must be a tuple of (params, input shapes) pairs, not a {type(spec.examples).__name__}"
    for i, example in enumerate(spec.examples, 1):
        if not (isinstance(example, (tuple, list)) and len(example) == 2 and isinstance(example[0], Mapping)):
            return f"its example {i}, {reprlib.repr(example)}, is not {pair}"
        shapes = example[1]
        if isinstance(shapes, (tuple, list)) and shapes and all(isinstance(d, int) for d in shapes):
            return (f"its example {i} gives one shape, {tuple(shapes)!r}, where a shape per input port is meant: "
                    f"write ({tuple(shapes)!r},)")
        if not isinstance(shapes, (tuple, list)) or not all(
                isinstance(shape, (tuple, list)) and shape and all(
                    isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape) for shape in shapes):
            return (f"its example {i}'s input shapes, {reprlib.repr(shapes)}, must be one shape per input "
                    "port, each a tuple of sizes above 0 without the batch axis")
    return None


def bad_port_names(side: str, ports: list[str]) -> str | None:
    """Why ``ports`` cannot be a node's ``side`` ("inputs", "outputs") port names, or None: a
    project file names a port as ``"node.port"``, so a port with a dot, an empty one or one with
    spaces cannot be wired or saved, and a repeated one cannot take an edge each."""
    for port in ports:
        if not isinstance(port, str) or not port.isidentifier():
            return (f"its {side} include {port!r}, which cannot be a port name: use letters, digits and "
                    "underscores (no dot: a project file writes a port as 'node.port'), e.g. 'in' or 'in0'")
    repeated = sorted({port for port in ports if ports.count(port) > 1})
    if repeated:
        return f"its {side} name {', '.join(map(repr, repeated))} twice; give each port its own name"
    return None


def _bad_default(spec: NodeSpec) -> str | None:
    """Why a parameter's own default is not allowed by its own kind (every new node would start
    invalid, with nothing in the file to say so), or None. A group reference starts empty on
    purpose: the user picks the group."""
    from .params import GroupRef, ParamError

    for name, param in spec.params.items():
        if isinstance(param, GroupRef):
            continue
        try:
            param.validate(param.default)
        except ParamError as exc:
            return (f"the default of its parameter {name!r}, {param.default!r}, is not allowed ({exc}); "
                    f"change the default or the limits in the plugin{_kind_default(name, param)}")
        except Exception as exc:  # a parameter kind of the plugin's own that cannot check its default
            return (f"its parameter {name!r} cannot check its default {param.default!r} "
                    f"({type(exc).__name__}: {exc}); fix the parameter in the plugin")
    return None


def _clash(registry: Registry, spec: NodeSpec) -> str | None:
    for name in (spec.type_id, *spec.legacy_ids):
        if registry.declares(name):
            return name
    return None


def load_into(registry: Registry) -> None:
    """Register every node type the installed plugins declare (the built-in catalog first)."""
    found = [(Provider(ep.name, ep.value.replace(" ", ""), dist, version), ep) for ep, dist, version in _entry_points()]
    if not any(provider.builtin for provider, _ep in found):
        # A source checkout run with PYTHONPATH and no (or stale) installed metadata has no
        # entry point for the built-in catalog; it is still the same module, loaded by name,
        # and first, so that a plugin can never take a built-in type id.
        load_provider(registry, BUILTIN_PROVIDER, lambda: _resolve(BUILTIN))
    for provider, ep in found:  # the built-in entry point sorts first
        registry.note_provider(provider)
        load_provider(registry, provider, ep.load)


def _resolve(value: str) -> Any:
    module, _, attr = value.partition(":")
    obj: Any = import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def spec_failed(registry: Registry, type_id: str, exc: BaseException, hook: str = "infer",
                doing: str = "infer shapes") -> str | None:
    """A plugin's ``infer`` (or another of its ``hook`` functions) raised something other than a
    ShapeError: report it once.

    Returns the text for the node's diagnostic (naming the plugin), or None for a
    built-in type (its own message says what went wrong).
    """
    provider = registry.provider(type_id)
    if provider is None or provider.builtin:
        return None
    where = raised_in(exc, provider)  # (the author's line, as a failed import or build names it)
    report(provider.label, f"node type {type_id!r}: {hook} raised {type(exc).__name__}: {exc}{where}")
    return (f"the plugin {provider.label} failed to {doing} ({type(exc).__name__}: {exc}{where}); "
            "update the plugin or tell its authors")


class PluginError(Exception):
    """A plugin's layer broke its contract while a model was built or run; the message names
    the plugin, the node type and the node, and says what to do."""


def blame_plugin(registry: Registry, exc: BaseException) -> str | None:
    """If ``exc`` was raised inside a plugin's own code (its innermost frame there), a message
    that names the plugin and where, instead of calling it a bug of revstudio; else None."""
    packages: dict[str, Provider] = {}
    for spec in registry:
        provider = registry.provider(spec.type_id)
        if provider is not None and not provider.builtin:
            packages.setdefault(provider.module.split(".")[0], provider)
    if not packages:
        return None
    found = None
    tb = exc.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        owner = packages.get(module.split(".")[0])
        if owner is not None:
            found = (owner, module, tb.tb_lineno)
        tb = tb.tb_next
    if found is None:
        return None
    owner, module, line = found
    return (f"the plugin {owner.label} failed in {module}, line {line} ({type(exc).__name__}: {exc}); "
            "update the plugin or tell its authors")


def spec_bug(registry: Registry, type_id: str, message: str) -> str:
    """A node type broke its own contract (``message`` says how): the diagnostic's text,
    naming the plugin when a plugin declares the type (reported once, too)."""
    provider = registry.provider(type_id)
    if provider is None or provider.builtin:
        return f"{message} (a bug in the node type {type_id!r})"
    report(provider.label, f"node type {type_id!r}: {message}")
    return f"{message}: a bug in the plugin {provider.label}; update the plugin or tell its authors"


__all__ = [
    "BUILTIN", "BUILTIN_PROVIDER", "GROUP", "bad_examples", "bad_port_names", "PluginError", "PluginProblem", "blame_plugin", "Provider", "load_into", "load_provider",
    "problems", "raised_in", "report", "spec_bug", "spec_failed",
]

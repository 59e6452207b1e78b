"""``revstudio ...``: the command line (DESIGN section 6).

``revstudio [FILE]`` opens the editor; the subcommands run headless. Each
subcommand lives in ``revstudio.clicmd.<name>`` and provides
``add_arguments(parser)`` and ``run(args) -> int``. Exit codes: 0 success,
1 the graph or check failed, 2 bad usage or an unreadable file. No traceback
reaches the user.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import importlib.util
import logging
import os
import re
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from revstudio import frozen

SUBCOMMANDS: dict[str, str] = {
    "check": "shapes, parameters, regions, diagnostics and a memory estimate",
    "gradcheck": "compare reversible and standard gradients on one batch",
    "memory": "measure peak memory of one training step per mode",
    "train": "train a project",
    "runs": "list training runs with their status and final metrics",
    "evaluate": "score a trained run on its validation split or test data",
    "sample": "draw samples from a trained flow: Gaussian noise run through its inverse",
    "export": "write standalone PyTorch code or an ONNX file",
    "merge": "merge two branches' versions of a project (git's merge driver for .revs files)",
    "examples": "list the example projects installed with revstudio",
    "plugins": "list node-type plugins, their types and their problems",
    "nodes": "the node reference: every node type, or one in full",
}


GUI_MODULE = "revstudio.qt.app"  # provides run_app(path | None) -> int

# Python 3.10 has no -P: the child drops sys.path[0] (the current folder) itself before it
# imports the module. Only the interpreter's own start-up modules are loaded before that.
_SAFE_PATH_BOOTSTRAP = (
    "import sys; del sys.path[0]; import runpy; "
    "sys.argv[0] = {module!r}; runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
)


def child_argv(module: str, *args: str) -> list[str]:
    """The argv of every child process revstudio starts: ``python -P -m MODULE ARGS``.

    ``-P`` keeps the current folder off ``sys.path`` (with ``-m`` Python would put it
    first, so a planted ``json.py`` would run). Never ``-I``: it also drops
    PYTHONPATH, which tests and packaged layouts rely on. Start the child in
    :func:`child_cwd` (or its run directory) as well. In the frozen app ``sys.executable`` is
    revstudio itself, which runs MODULE the same way (:mod:`revstudio.frozen`).
    """
    if frozen.is_frozen():
        return frozen.child_argv(module, args)
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", module, *args]
    return [sys.executable, "-c", _SAFE_PATH_BOOTSTRAP.format(module=module), *args]


def child_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: ``environ`` (default ``os.environ``) made safe.

    PYTHONSAFEPATH=1 carries ``-P`` on to the child's own children (DDP ranks), and
    empty or ``.`` entries of PYTHONPATH, which mean the current folder, are dropped.
    """
    env = dict(os.environ if environ is None else environ)
    env["PYTHONSAFEPATH"] = "1"
    if "PYTHONPATH" in env:
        kept = [p for p in env["PYTHONPATH"].split(os.pathsep) if p not in ("", ".")]
        env["PYTHONPATH"] = os.pathsep.join(kept)
        if not kept:
            del env["PYTHONPATH"]
    return env


_CHILD_CWD: list[str] = []


def child_cwd() -> str:
    """A fixed, private, empty working folder for children that have no run directory."""
    if not _CHILD_CWD:
        import atexit
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="revstudio-child-")  # mode 0700: nobody can plant files in it
        atexit.register(shutil.rmtree, folder, True)
        _CHILD_CWD.append(folder)
    return _CHILD_CWD[0]


def json_text(value: Any) -> str:
    """``value`` as the one JSON object ``--json`` prints, by every command and error alike. JSON has
    no NaN or Infinity, so a non-finite number is written as null, as in train's rows (docs/cli.md)."""
    from revstudio.training import runs  # (torch-free; looked up per call, so tests can watch it)

    return runs.json_text(value)


# What a terminal would act on rather than show: C0 and C1 controls (ESC, CSI) but tab and newline,
# DEL, and the bidirectional overrides that make text read in another order than it is; and lone
# surrogates (JSON's "\ud800"), which no output encoding can write at all.
_NOT_SHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                        "\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` fit for a terminal: the characters of :data:`_NOT_SHOWN` as escapes (``\\x1b``,
    ``\\u202e``), so a project's name or ids can never recolour, move or reorder what the
    report says. For human output only; ``--json`` is escaped by JSON itself."""
    return _NOT_SHOWN.sub(lambda m: ascii(m.group())[1:-1], text)


def message_line(message: str, rank: int | None = None) -> str:
    """One problem as every ``revstudio`` command prints it on stderr: ``revstudio: MESSAGE``, the
    program's name and never the command's (``revstudio train:`` was some of train's, ``revstudio:``
    the rest); a warning's message begins ``warning: ``, and a distributed run's worker other than
    rank 0 adds ``rank N: ``. Escaped for a terminal (:func:`printable`); docs/cli.md's rule."""
    return printable(f"revstudio: {f'rank {rank}: ' if rank else ''}{message}")


class CliError(Exception):
    """A user error: printed as one line, exit code 2 (usage/unreadable) unless given."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """argparse checks the required options before it looks at the unknown ones, so
        ``export FILE --run-dir x`` said "-o is required" and hid the option mistyped: an unknown
        option is named first (with what this command calls it), then what is missing."""
        args = list(sys.argv[1:] if args is None else args)
        required = [a for a in self._actions if a.required]
        for action in required:
            action.required = False
        try:
            _, extras = self.parse_known_args(list(args))
        finally:
            for action in required:
                action.required = True
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return super().parse_args(args, namespace)

    def error(self, message: str) -> NoReturn:  # argparse exits 2 too; keep its wording
        # (the message is printed after "revstudio: "; the prog named first doubled it)
        raise CliError(f"{message}{self._meant(message)} (see '{self.prog} --help')")

    def _meant(self, message: str) -> str:
        """`` (did you mean --batch?)`` for an unrecognized option: this command's spelling of it
        (--batch_size is --batch-size), its name for what other tools call it (:data:`SYNONYMS`:
        --run-dir is --out; train takes --batch-size where check, gradcheck and memory take
        --batch), or an option of this command's close to it."""
        if not message.startswith("unrecognized arguments:"):
            return ""
        options = [o for o in self._option_string_actions if o.startswith("--")]
        typed = [a.split("=")[0] for a in message.split(":", 1)[1].split() if a.startswith("--")]
        if any(a.metavar == "DIR" for a in self._positionals._group_actions):  # runs: the folder is its argument
            options.append(f"'{self.prog} DIR'")
        meant = [m for a in typed if (m := _option_meant(a, options))]
        return f" (did you mean {' / '.join(dict.fromkeys(meant))}?)" if meant else ""


# What other tools (PyTorch examples, Lightning, TensorBoard, HF scripts) call an option, and the
# names revstudio's commands give it, the first one a command has being meant (spelt with '-').
SYNONYMS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("--run-dir", "--rundir", "--output", "--output-dir", "--outdir", "--out-dir", "--logdir",
                     "--log-dir", "--save-dir", "--default-root-dir", "--dir", "--runs"),
                    ("--out", "--output", "'revstudio runs DIR'")),
    **dict.fromkeys(("--batch-size", "--batch", "--bs", "--per-device-train-batch-size"), ("--batch-size", "--batch")),
    **dict.fromkeys(("--learning-rate", "--learningrate"), ("--lr",)),
    **dict.fromkeys(("--epoch", "--num-epochs", "--n-epochs", "--max-epochs", "--num-train-epochs"), ("--epochs",)),
    **dict.fromkeys(("--max-steps", "--num-steps", "--iters", "--iterations"), ("--steps",)),
    **dict.fromkeys(("--gpu", "--accelerator"), ("--device",)),
    **dict.fromkeys(("--nproc-per-node", "--nprocs", "--gpus", "--world-size"), ("--nproc",)),
}


def _option_meant(typed: str, options: list[str]) -> str | None:
    """The option of ``options`` someone typing ``typed`` meant, or None."""
    spelt = typed.lower().replace("_", "-")
    if spelt in options:
        return spelt
    for name in SYNONYMS.get(spelt, ()):
        if name in options:
            return name
    close = difflib.get_close_matches(spelt, options, n=1, cutoff=0.6)
    return close[0] if close else None


def _command_meant(word: str) -> str:
    """`` (did you mean 'check'?)`` for a word close to a subcommand's name, else ''."""
    meant = difflib.get_close_matches(word, list(SUBCOMMANDS), n=1, cutoff=0.6)
    return f" (did you mean {meant[0]!r}?)" if meant else ""


def _available(name: str) -> bool:
    """Whether this build ships ``revstudio.clicmd.<name>`` (a part may not be built yet)."""
    return importlib.util.find_spec(f"revstudio.clicmd.{name}") is not None


def _build_parser(name: str) -> tuple[argparse.ArgumentParser, object]:
    if not _available(name):
        raise CliError(f"'revstudio {name}' is not available in this build of revstudio "
                       f"(the module revstudio.clicmd.{name} is missing); see 'revstudio --help'")
    module = importlib.import_module(f"revstudio.clicmd.{name}")
    parser = _Parser(prog=f"revstudio {name}", description=SUBCOMMANDS[name])
    module.add_arguments(parser)  # type: ignore[attr-defined]
    return parser, module


def _usage() -> str:
    lines = ["usage: revstudio [FILE]            open the editor", "       revstudio COMMAND ...",
             "       revstudio --version [--json]", ""]
    lines += [f"  {name:<10} {text}{'' if _available(name) else ' (not in this build)'}"
              for name, text in SUBCOMMANDS.items()]
    lines += ["", "Run 'revstudio COMMAND --help' for a command's options."]
    return "\n".join(lines)


class _PluginWarnings(logging.Handler):
    """Plugin problems reach the terminal once each, as 'revstudio: warning: ...' on stderr
    (while `revstudio plugins` runs, not the skipped plugins it lists itself: once is enough)."""

    listing = False

    def emit(self, record: logging.LogRecord) -> None:
        from revstudio.core.plugins import PluginProblem

        if self.listing and any(isinstance(a, PluginProblem) for a in record.args or ()):
            return
        try:
            print(message_line(f"warning: {record.getMessage()}"), file=sys.stderr)
        except (OSError, ValueError):  # stderr gone: the command itself must still finish
            pass


def _report_plugin_problems(command: str) -> None:
    logger = logging.getLogger("revstudio.plugins")
    handler = next((h for h in logger.handlers if isinstance(h, _PluginWarnings)), None)
    if handler is None:
        handler = _PluginWarnings(logging.WARNING)
        logger.addHandler(handler)
        logger.propagate = False
    handler.listing = command == "plugins"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``revstudio`` command line; returns its exit code. With ``argv`` None this is the
    program itself (the ``revstudio`` command, ``python -m revstudio``): a ``train`` run then
    takes SIGINT/SIGTERM while it loads, and ends without the interpreter's teardown."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None and args[:1] == [frozen.RUN_MODULE]:  # a child of the frozen app (child_argv)
        return frozen.run_module(args[1:])
    training = argv is None and args[:1] == ["train"]
    if training:
        from revstudio.early_stop import install_for

        install_for(args)
    if argv is None:
        code = _main(args)
    else:  # called in a session (a notebook, a script): it keeps its own random numbers and stdout
        with _rng_kept(), _stdout_kept():
            code = _main(args, in_session=True)
    if training:
        _exit_now(code)
    return code


@contextlib.contextmanager
def _rng_kept() -> Iterator[None]:
    """torch's CPU (and initialised CUDA) random state as it was before, however the command ends:
    ``train`` and ``memory`` seed torch for their own reproducible runs, which in a caller's
    session would make every later ``torch.randn`` repeat the same numbers after each call."""
    torch = sys.modules.get("torch")  # (not imported yet: the caller has drawn nothing to keep)
    if torch is None:
        yield
        return
    cpu = torch.random.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        torch.random.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


@contextlib.contextmanager
def _stdout_kept() -> Iterator[None]:
    """``sys.stdout`` with the error handler it had: a command escapes what the output cannot show
    (:func:`_escape_what_cannot_be_shown`), which in a caller's session would stay changed after it."""
    stream = sys.stdout
    errors = getattr(stream, "errors", None)
    try:
        yield
    finally:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and errors is not None and getattr(stream, "errors", None) != errors:
            try:
                reconfigure(errors=errors)
            except (OSError, ValueError):  # (a stream that cannot change now stays as it is)
                pass


class Interrupted(KeyboardInterrupt):
    """A command stopped at once by a signal after it said so itself (``train``'s second Ctrl+C,
    its run recorded as stopped): the program exits 130 with nothing more to print; in a session
    (``main(argv)``) the KeyboardInterrupt reaches the caller, as a Ctrl+C in a notebook should."""


def _exit_now(code: int) -> NoReturn:
    """End a training process now. It has closed and fsynced everything it wrote; the
    interpreter's teardown of torch's native libraries takes seconds on a loaded machine, and a
    stopped run must exit within 2 s of SIGTERM (the app, ``timeout`` and ``docker stop`` wait)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # (a reader that went away: nothing more to say to it)
        pass
    os._exit(code)


def _main(args: list[str], in_session: bool = False) -> int:
    wants_json = any(_is_json_flag(a) for a in args)
    if args and args[0] in SUBCOMMANDS:  # the editor reports them in its Log tab instead
        _report_plugin_problems(args[0])
    _escape_what_cannot_be_shown()
    try:
        code = _dispatch(args)
        # Short output sits in the buffer until exit; flush here so that a
        # reader that went away is noticed below, not at interpreter shutdown.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return reader_gone()
    except CliError as exc:
        return _report(str(exc), exc.code, wants_json)
    except SystemExit as exc:  # --help from argparse
        return int(exc.code or 0) if isinstance(exc.code, int) else 0
    except Interrupted:
        if in_session:
            raise
        return INTERRUPTED
    except KeyboardInterrupt:  # not 1, which says the graph failed: what a shell reports for Ctrl+C
        return _report("interrupted", INTERRUPTED, wants_json)
    except MemoryError as exc:  # its message is usually empty: say what happened
        detail = f" ({exc})" if str(exc) else ""
        return _report(f"out of memory{detail}: the graph or file is too large for this machine; "
                       "try a smaller batch or a smaller graph", 1, wants_json)
    except Exception as exc:  # last line of defence: a bug, but still no traceback
        from revstudio.clicmd._runargs import compile_error

        known = compile_error(exc)  # a plugin's failure is the plugin's, not ours to be told of
        if known is not None:
            return _report(str(known), known.code, wants_json)
        return _report(f"internal error: {type(exc).__name__}: {exc} (please report this)", 1, wants_json)


def _escape_what_cannot_be_shown() -> None:
    """A character the output's encoding lacks (an ASCII or latin-1 terminal, PYTHONIOENCODING)
    is written as an escape (``\\xe9``), as stderr already does, instead of failing the command:
    a project's name or node ids may be in any script. (``--json`` is ASCII anyway.)"""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors="backslashreplace")
        except (OSError, ValueError):  # a stream that cannot change now: leave it as it is
            pass


def _is_json_flag(arg: str) -> bool:
    """``--json``, or a prefix argparse takes for it (``--js``): errors then come as JSON too."""
    return len(arg) >= 3 and "--json".startswith(arg)


def _dispatch(args: list[str]) -> int:
    if args and args[0] in SUBCOMMANDS:
        name = args.pop(0)
        parser, module = _build_parser(name)
        ns = parser.parse_args(args)
        return int(module.run(ns))  # type: ignore[attr-defined]
    if args and args[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if args and args[0] == "--version":
        from revstudio import __version__

        print(json_text({"version": __version__}) if any(_is_json_flag(a) for a in args[1:]) else __version__)
        return 0
    if len(args) > 1 and not args[0].startswith("-") and os.path.exists(args[0]):
        raise CliError(f"'revstudio FILE' opens the editor and takes nothing more (got {' '.join(args[1:])!r}); "
                       f"for a report without the editor use e.g. 'revstudio check {args[0]} --json'")
    if len(args) > 1 or (args and args[0].startswith("-")):
        raise CliError(f"unknown command {args[0]!r}{_command_meant(args[0])}\n{_usage()}")
    if args and _command_meant(args[0]) and not os.path.exists(args[0]) and not os.path.splitext(args[0])[1] \
            and os.sep not in args[0]:
        # a typo of a command, not a project to open (that would say "needs a display" or "does not exist")
        raise CliError(f"unknown command {args[0]!r}{_command_meant(args[0])}\n{_usage()}")
    _need_display()
    # The editor is loaded by name, like the subcommands: headless commands never
    # import Qt, and the layering contract (pyproject.toml) holds for cli.py too.
    run_app = importlib.import_module(GUI_MODULE).run_app
    return int(run_app(args[0] if args else None))


def _need_display() -> None:
    """On Linux without a display (a server, an ssh session) Qt would abort with its plugin
    messages and a core dump: say what is missing instead, and that the subcommands run there."""
    if not sys.platform.startswith("linux"):
        return
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform not in ("", "xcb") or (os.environ.get("WAYLAND_DISPLAY") and not platform):
        return  # (offscreen, wayland, ...: Qt's own)
    display = os.environ.get("DISPLAY", "")
    if display:
        if _x_server_gone(display):  # (a DISPLAY left behind by an ended session: Qt aborts, exit 134)
            raise CliError(f"the editor needs a display, and DISPLAY={display} names no running X server (nothing "
                           "listens at its socket: the session that set it has ended?); set DISPLAY to a running "
                           "one, or use the headless commands: 'revstudio --help' lists them")
        return
    raise CliError("the editor needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set; run it in a "
                   "desktop session (or ssh -X), or use the headless commands: 'revstudio --help' lists them")


def _x_server_gone(display: str) -> bool:
    """Whether a local X display (``:N``, ``unix:N``) has no server listening, on its abstract or its file
    socket. A remote one (``host:N``, as ssh -X sets) is left to Qt."""
    import re
    import socket

    match = re.fullmatch(r"(?:unix)?:(\d+)(?:\.\d+)?", display)
    if match is None:
        return False
    for address in (f"\0/tmp/.X11-unix/X{match.group(1)}", f"/tmp/.X11-unix/X{match.group(1)}"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(2)
            try:
                probe.connect(address)
                return False
            except OSError:
                continue
    return True


# What a shell reports for a program stopped by SIGPIPE (``cat big | head``).
PIPE_CLOSED = 128 + int(getattr(signal, "SIGPIPE", 13))
# ... and by SIGINT (Ctrl+C): a check cut short is neither a pass (0) nor a failed graph (1).
INTERRUPTED = 128 + int(signal.SIGINT)


def reader_gone() -> int:
    """The reader of stdout closed the pipe (``revstudio check --json x | head``).

    Stop quietly, as cat and grep do: no message (nobody is reading) and the
    conventional exit status. Stdout now points at the null device so the
    interpreter's last flush cannot raise the error again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (tests, embedding): nothing to redirect
        pass
    return PIPE_CLOSED


def _report(message: str, code: int, wants_json: bool) -> int:
    """Print a user-facing error (JSON on stdout with ``--json``) and return ``code``."""
    try:
        if wants_json:
            print(json_text({"error": message, "exit_code": code}))
            sys.stdout.flush()
        else:
            print(message_line(message), file=sys.stderr)
    except BrokenPipeError:
        return reader_gone()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The exit-code contract every ``rmkit`` command keeps, and the guards that keep it.

Why: a CI system reads exit 1 as "the implementation or the log is wrong". A tool failure (a bug of
the kit, a missing dependency, an output that cannot be written, an option that makes no sense)
must therefore never end with exit 1, and never with a traceback a user has to decode: it ends
with exit 2 and one line saying what went wrong. ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import errno
import io
import math
import os
import sys
import traceback
from pathlib import Path

from rmkit.errors import RmkitError, UsageError
from rmkit.verdict import FAIL, NON_STRICT

EXIT_PASS, EXIT_VIOLATIONS, EXIT_TOOL = 0, 1, 2

CONTRACT = """exit codes (the same for every rmkit command):
  0  pass
  1  violations found (or a failing scenario); the report names each one
  2  the tool could not do its job: usage error, unreadable input, missing dependency,
     an implementation that cannot be started, an output that cannot be written,
     or an internal error (one line; --debug before the command shows the traceback)"""

# optional dependencies -> the extra of the rmkit package that installs them
OPTIONAL_EXTRAS = {"pyspark": "spark", "py4j": "spark", "matplotlib": "spark", "hypothesis": "conform"}


class OutputError(RmkitError):
    """An output the command was asked to write cannot be written."""


class MissingDependency(RmkitError):
    """An optional dependency of one command is not installed."""


def missing_dependency(exc: ModuleNotFoundError) -> MissingDependency | None:
    """The error to show for an import that failed, when the module is one of the optional
    dependencies (None otherwise: a module of the kit itself missing is a broken install)."""
    root = (exc.name or "").split(".")[0]
    extra = OPTIONAL_EXTRAS.get(root)
    if extra is None:
        return None
    return MissingDependency(f"this command needs the Python package {root!r}, which is not installed: "
                             f"pip install 'rmkit[{extra}]'")


# the exit code a command has decided before writing its report (see decided)
def check_exit_code(report, strict: bool) -> int:
    """The exit code of a checked log (``rmkit check`` and ``rmkit audit``): 2 when a line could
    not be read or nothing was read, 1 for violations (non-strict ones only with --strict)."""
    if report.unreadable or report.records == 0:
        return EXIT_TOOL
    if report.verdict == FAIL or (strict and report.verdict == NON_STRICT):
        return EXIT_VIOLATIONS
    return EXIT_PASS


_decided: list[int] = []


def decided(code: int) -> int:
    """Record (and return) the exit code a command has decided before it writes its report, so
    that a reader of stdout who stops early (``| head``) cannot change it."""
    _decided.append(code)
    return code


def run_command_line(parser: argparse.ArgumentParser, argv: list[str] | None = None, shown_as: tuple = ()) -> int:
    """Parse ``argv`` (default: this process's) and run the chosen command (``func`` in the
    parser's defaults) under the contract; ``--debug`` anywhere on the line, or RMKIT_DEBUG=1,
    shows an internal error's traceback. ``shown_as``: the words before ``argv`` when the line is
    quoted in an internal error (a protocol's own command name for ``python -m ...cli serve ...``). No command
    chosen: the help, exit 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args([a for a in argv if a != "--debug"])
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_TOOL
    debug = "--debug" in argv or os.environ.get("RMKIT_DEBUG") == "1"
    return run_guarded(args.func, args, debug=debug, argv=[*shown_as, *argv])


class _ClosedStream(io.TextIOBase):
    """Stands for a standard stream the process was started without (``>&-``, ``<&-``), where
    Python has None: ``print`` would silently drop a report (and a verdict would pass with its
    report lost), ``.write`` and ``.read`` would be an AttributeError. Using it is the error that
    says which stream is closed; a command that never touches it runs as usual."""

    def __init__(self, name: str, error: type[RmkitError]):
        super().__init__()
        self._name, self._error = name, error

    def _closed(self, *_args, **_kwargs):
        raise self._error(f"standard {self._name} is closed (the command was started without it)")

    write = writelines = read = readline = readlines = fileno = _closed

    @property
    def buffer(self):
        self._closed()

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        pass


def _stand_in_for_closed_streams() -> list[str]:
    """Put a :class:`_ClosedStream` where stdin or stdout is None (a sink where stderr is); the
    names of those replaced."""
    from rmkit.errors import InputError

    replaced = []
    if sys.stdin is None:
        sys.stdin, replaced = _ClosedStream("input", InputError), replaced + ["stdin"]
    if sys.stdout is None:
        sys.stdout, replaced = _ClosedStream("output", OutputError), replaced + ["stdout"]
    if sys.stderr is None:  # messages have nowhere to go: dropped, so that print() does not turn to stdout
        sys.stderr, replaced = io.StringIO(), replaced + ["stderr"]
    return replaced


def run_guarded(func, args, debug: bool = False, argv: list[str] | None = None) -> int:
    """``func(args)`` under the contract: the kit's own errors exit with their code and message,
    anything unexpected with exit 2 and one line. A command that gives a verdict (``verdict`` set
    in its parser defaults) and whose output is cut off by the reader before it decided its exit
    code has no verdict: exit 2, never the pass a broken pipe would otherwise look like. A
    standard stream the process was started without is an input or output error (exit 2) when
    the command uses it."""
    replaced = _stand_in_for_closed_streams()
    try:
        return _run_guarded(func, args, debug, argv)
    finally:
        for name in replaced:
            setattr(sys, name, None)


def _run_guarded(func, args, debug: bool, argv: list[str] | None) -> int:
    _decided.clear()
    try:
        code = func(args)
        sys.stdout.flush()  # a reader gone is found here, not in the interpreter's last flush
    except RmkitError as exc:
        print(f"rmkit: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # the reader of stdout went away (e.g. `| head`)
        _quiet_stdout()
        if _decided:
            return _decided[-1]
        if getattr(args, "verdict", False):
            print("rmkit: error: the output was cut off (broken pipe) before the run was complete: no verdict",
                  file=sys.stderr)
            return EXIT_TOOL
        return EXIT_PASS
    except KeyboardInterrupt:
        print("rmkit: interrupted; no verdict", file=sys.stderr)
        return EXIT_TOOL
    except (ModuleNotFoundError, OSError) as exc:
        # not the kit's fault: an optional dependency missing, a full disk, a file that cannot be opened
        problem = missing_dependency(exc) if isinstance(exc, ModuleNotFoundError) else environment_problem(exc)
        if problem is None:
            return _internal(exc, debug, argv)
        if debug:
            traceback.print_exc()
        print(f"rmkit: error: {problem}", file=sys.stderr)
        return EXIT_TOOL
    except Exception as exc:  # noqa: BLE001 -- the one place where anything unexpected is caught
        return _internal(exc, debug, argv)
    if code not in (EXIT_PASS, EXIT_VIOLATIONS, EXIT_TOOL):
        return _internal(RuntimeError(f"the command returned exit code {code!r}"), debug, argv)
    return code


_FULL = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
         errno.EFBIG: "file too large", errno.EROFS: "read-only file system", errno.EIO: "input/output error"}


def environment_problem(exc: OSError) -> str | None:
    """An operating-system failure that is the machine's, not the kit's (a full disk, a file
    that cannot be opened), as the line to show; None for anything else."""
    if exc.errno in _FULL:
        where = f" ({exc.filename})" if exc.filename else " (an output: stdout or a report file)"
        return f"cannot write{where}: {_FULL[exc.errno]}"
    if exc.errno == errno.EBADF and not exc.filename:
        return "a standard stream (stdin or stdout) is closed or opened the wrong way (bad file descriptor)"
    if exc.filename and exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTDIR):
        return f"{exc.filename}: {exc.strerror}"
    return None


def _internal(exc: BaseException, debug: bool, argv) -> int:
    if debug:
        traceback.print_exception(exc)
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    cmd = " ".join(argv) if argv else " ".join(sys.argv[1:])
    print(f"rmkit: internal error ({type(exc).__name__}{': ' + text if text else ''}); please report it with the "
          f"command line (rmkit {cmd[:500]})" + ("" if debug else "; --debug shows the traceback"), file=sys.stderr)
    return EXIT_TOOL


def _quiet_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so that the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


# -- outputs ----------------------------------------------------------------------------------
def check_writable_file(path: str | None, flag: str) -> None:
    """Fail before any long work when ``path`` (a file to write) cannot be written: its folder is
    missing or not writable, or the path is a folder. ``-`` and None (stdout) always can."""
    if not path or path == "-":
        return
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{flag} {path}: expected a file to write, found a folder")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        missing = next((a for a in (parent, *parent.parents) if a.exists()), None)
        found = f"{str(missing)!r} is a file, not a folder" if missing is not None and not missing.is_dir() else \
            f"the folder {str(parent)!r} does not exist"
        raise OutputError(f"{flag} {path}: cannot write: {found}")
    if (p.exists() and not os.access(p, os.W_OK)) or not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path}: cannot write: permission denied")


def check_writable_dir(path: str | None, flag: str) -> None:
    """Fail before any long work when ``path`` (a folder the command creates or fills) cannot be:
    it is a file, or its nearest existing ancestor is not a writable folder."""
    if not path:
        return
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise OutputError(f"{flag} {path}: expected a folder, found a file")
        if not os.access(p, os.W_OK | os.X_OK):
            raise OutputError(f"{flag} {path}: cannot write into the folder: permission denied")
        return
    anc = p.absolute().parent
    while not anc.exists():
        anc = anc.parent
    if not anc.is_dir() or not os.access(anc, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path}: cannot create the folder: {str(anc)!r} is not a writable folder")


def write_output(path: str, text: str, flag: str) -> None:
    """Write a report; a failure (disk full, the folder removed meanwhile) is an :class:`OutputError`."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"{flag} {path}: cannot write ({exc.strerror or exc})") from None


def emit_report(text: str, verdict: str, out: str | None) -> None:
    """A command's report: on stdout, or written to ``--out`` with its verdict and where it went
    said on stderr (a failed write is an :class:`OutputError`, exit 2, never a traceback)."""
    if out:
        write_output(out, text, "--out")
        print(f"{verdict}: report written to {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)


# -- numbers in options -----------------------------------------------------------------------
def finite_float(text: str) -> float:
    """argparse type: a finite number (``nan`` and ``inf`` are usage errors, not watchdogs turned off)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, found {text!r}")
    return value


# beyond any lifetime, horizon or time limit a run can mean (about 31 years), and far below the
# size at which milliseconds overflow a float's integer range
MAX_SECONDS = 1e9


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0 (and at most MAX_SECONDS)."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, found {text!r}")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_SECONDS:.0e} seconds (about 31 years), found {text!r}")
    return value


def require_finite(flag: str, value) -> None:
    """For values that do not come through argparse (the API, the pytest plugin)."""
    if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
        raise UsageError(f"{flag}: expected a finite number, found {value!r}")

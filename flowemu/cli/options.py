"""What every ``flowemu`` command shares: the parser, its once-only options,
the output formats, the network options, and the one-line error reports.

* :class:`Parser` refuses an option given twice (:class:`Once`,
  :class:`OnceTrue`) and turns argparse's errors into a
  :class:`~flowemu.core.errors.ConfigError`; :func:`given` tells an option the
  user typed from its default.
* :func:`add_output_options`, :func:`chosen_format` and :func:`write_output`:
  ``--format``/``--out`` and the table, CSV, JSON or parquet output of a
  result table (the files themselves: :mod:`flowemu.core.outputs`).
* :func:`add_network_options` and :func:`network`: ``--network``,
  ``--bandwidth``, the latencies, α, γ, δ and incast, each value read with its
  unit under the option's name.
* :func:`as_options` rewrites a message about an argument (``ranks: ...``,
  ``placement 'x': ...``) into one about the option the user typed
  (``--ranks: ...``, ``--placement 'x': ...``); :data:`API_OPTIONS` maps the
  Python API's arguments to the options giving them, and
  :func:`naming_options` applies it to a command's errors, with
  :func:`cli_spelling` for their advice (``--fail-policy reroute``, not
  ``fail_policy='reroute'``).
* :func:`ecmp_help`: ``--ecmp``'s help, listing the modes the check allows.
* :func:`exit_status` reports a failure in one line: ``flowemu: error: ...``
  and exit 2 for a user mistake (ConfigError), exit 1 for other flowemu
  failures and for the system's refusals, no traceback;
  :func:`run_interruptible` makes Ctrl-C act at once (exit 130).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager

from ..core.budget import Limit, limit
from ..core.errors import ConfigError, FlowEmuError
from ..core.network import Network, si_values
from ..core.outputs import frame_text, output_format, write_frame, write_text
from ..core.presets import preset_network
from ..core.progress import snapshot as progress_snapshot
from ..core.units import parse_rate, parse_time

#: formats of a result table (run, compare, plan)
FORMATS = ("table", "csv", "json", "parquet")


# ------------------------------------------------------------------ the parser

def option_name(action) -> str:
    """The long spelling of an option (``--sizes`` for ``-s``), or the positional's name."""
    return max(action.option_strings, key=len) if action.option_strings else action.dest


def _record(action, namespace, shown: str) -> None:
    """Remember that the user gave this option; refuse it the second time."""
    given = namespace.__dict__.setdefault("_given", {})
    if action.dest in given:
        first = given[action.dest]
        both = f" ({first} and {shown})" if shown else ""
        raise ConfigError(f"{option_name(action)}: given twice{both}; give it once")
    given[action.dest] = shown


class Once(argparse._StoreAction):
    """``store`` that refuses a repeated option (argparse keeps the last silently)."""

    def __call__(self, parser, namespace, values, option_string=None):
        _record(self, namespace, repr(values) if isinstance(values, str) else str(values))
        setattr(namespace, self.dest, values)


class OnceTrue(argparse._StoreTrueAction):
    """``store_true`` that refuses a repeated flag."""

    def __call__(self, parser, namespace, values, option_string=None):
        _record(self, namespace, "")
        setattr(namespace, self.dest, True)


class Parser(argparse.ArgumentParser):
    """The parser of ``flowemu`` and of each command."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        # "-5Gb/s" is a (bad) value, not an option: argparse takes only plain negative
        # numbers for values, and "expected one argument" would not say what is wrong
        self._negative_number_matcher = re.compile(r"^-\.?\d")
        # every parser and subparser: store / store_true refuse repeats and record what
        # was given, so a default can be shown in --help yet told apart from an explicit value
        self.register("action", None, Once)
        self.register("action", "store", Once)
        self.register("action", "store_true", OnceTrue)

    def error(self, message):  # one line, exit 2, like a ConfigError
        raise ConfigError(message)


def refuse_empty(args) -> None:
    """Refuse an empty value of a what-if option (``--fail ''``, an unset
    shell variable): given, it names something; ``run`` and ``jobs`` alike."""
    for dest, option in (("fail", "--fail"), ("degrade", "--degrade"), ("slow", "--slow")):
        for value in getattr(args, dest, None) or ():
            if not value.replace(";", "").strip():
                raise ConfigError(f"{option}: {value!r} is empty; give a selector (see flowemu "
                                  "list, what-ifs) or drop the option")
    for dest, option, what in (("background", "--background", ("a background (perm:0.5, "
                                "alltoall:0.3, hotspot:0.5 or a traffic file)")),
                               ("congestion", "--congestion", "a FILE (.csv, .parquet) or -")):
        value = getattr(args, dest, None)
        if value is not None and not value.strip():
            raise ConfigError(f"{option}: {value!r} is empty; give {what} or drop the option")


def whole_number(text: str) -> int:
    """argparse ``type`` of an integer option: ``'1e1'`` or ``'1.5'`` is
    refused saying what the option takes (argparse's own said only
    "invalid int value"); its range is the command's to check."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; expected a whole number "
                                         "written with digits, e.g. 8") from None


def given(args, dest: str) -> bool:
    """Whether the user gave the option (not just its default)."""
    return dest in getattr(args, "_given", {})


def refuse(option: str, why: str) -> None:
    """Refuse an option given that this command would ignore."""
    raise ConfigError(f"{option}: {why}; drop it")


#: the argument names a message starts with: before ": " or a quoted value
_LEADING_NAMES = re.compile(r"(\w+(?:, \w+)*)(?=: | ['\"])")


def as_options(message: str, options: Mapping[str, str]) -> str:
    """``message`` with its leading argument names written as the options the
    user typed: ``ranks: ...`` → ``--ranks: ...``, ``bandwidth, ranks: ...``
    → ``--bandwidth, --ranks: ...``, ``placement 'x': ...`` → ``--placement
    'x': ...`` (``options`` maps argument → option); unchanged unless every
    name is one of ``options``."""
    head = _LEADING_NAMES.match(message)
    names = head[1].split(", ") if head else []
    if names and all(name in options for name in names):
        return ", ".join(options[name] for name in names) + message[head.end():]
    return message


#: a keyword argument a message advises in Python: ``name='value'`` (the
#: option may follow in parentheses: ``(--name value)``), ``name=8`` or a bare
#: ``name=``; not inside a word, a spec (``dragonfly:a=4``) or a quoted value, nor
#: an algorithm's option (``option collective='bcast' is not allowed``: not --collective)
_PYTHON_KEYWORD = re.compile(r"(?<![\w'\"=:,.-])(?<!option )(\w+)=('[^'\s]*'|\d+)?(?=[\s,;:)]|$)"
                             r"(?P<cli> \(--[\w-]+(?: [^()]*)?\))?")
#: a quoted value in a message (an apostrophe within a word is none)
_QUOTED = re.compile(r"(?<!\w)'[^']*'(?!\w)")


def cli_spelling(message: str, options: Mapping[str, str]) -> str:
    """``message`` with the Python spellings of its advice written as the
    command line takes them: ``pass fail_policy='reroute' (--fail-policy
    reroute)`` → ``pass --fail-policy reroute``, ``e.g. ranks=8`` → ``e.g.
    --ranks 8``, ``use --max-memory (max_memory=, ...)`` → ``use --max-memory
    (...)`` (``options`` maps argument → option; other names, and text in
    quotes such as a job's ``'ranks=512'``, stay)."""
    quoted = [m.span() for m in _QUOTED.finditer(message)]

    def rewrite(match: re.Match) -> str:
        name, value = match[1], match[2]
        if name not in options or any(a < match.start() < b for a, b in quoted):
            return match[0]
        return options[name] + (f" {value.strip(chr(39))}" if value else "")

    text = _PYTHON_KEYWORD.sub(rewrite, message)
    text = re.sub(r"(--[\w-]+) \(\1\)", r"\1", text)      # --max-memory (--max-memory)
    return re.sub(r"(--[\w-]+) \(\1, ", r"\1 (", text)   # --max-memory (--max-memory, ENV)


@contextmanager
def naming_options(args, own=None):
    """Within it, a ConfigError about an argument of the Python API that one
    of this command's options gives (:data:`API_OPTIONS`, and ``own``: a
    command's map of the arguments of the function it calls, e.g. plot's
    ``topologies`` -> ``--topology``) names the option instead: ``ecmp:
    ...`` becomes ``--ecmp: ...``, and its advice is spelt as the command
    line takes it (:func:`cli_spelling`: ``--fail-policy reroute``, not
    ``fail_policy='reroute'``). The API's own messages stay as they are for
    Python callers."""
    try:
        yield
    except ConfigError as exc:
        options = {name: option for name, option in API_OPTIONS.items() if hasattr(args, name)}
        options.update(own or {})
        message = cli_spelling(as_options(str(exc), options), options)
        if message == str(exc):
            raise
        raise ConfigError(message) from None


# ------------------------------------------------------------------ errors

def note(message: str) -> None:
    """Say something the output does not show (a fallback, an ignored cost) on stderr."""
    print(f"flowemu: note: {message}", file=sys.stderr)


def exit_status(command: Callable[[], int]) -> int:
    """Run a command; its failure is one line on stderr and an exit status:
    2 for a user mistake, 1 for other flowemu failures and system refusals,
    130 for an interrupt."""
    try:
        return command()
    except ConfigError as exc:
        print(f"flowemu: error: {exc}", file=sys.stderr)
        return 2
    except FlowEmuError as exc:
        print(f"flowemu: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `flowemu compare ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:   # the system refused (disk full mid-sweep, ...): one line, what
        # was written before stays (every output is written whole or not at all)
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"flowemu: error: cannot complete:{where} {exc.strerror or exc}", file=sys.stderr)
        return 1


#: seconds a command runs before its progress line appears (on a terminal)
PROGRESS_AFTER = 3.0


def run_interruptible(work: Callable[[], int], stream=None,
                      progress_after: float = PROGRESS_AFTER) -> int:
    """Run a command's work in a worker thread and wait for it here, in the
    main thread, so that Ctrl-C acts at once.

    Python runs its signal handler only between bytecodes of the main thread:
    while that thread is inside a numba kernel, or joining the threads that
    solve distinct steps, an interrupt waits until they return (seconds to
    minutes on a large network). Waiting on the worker instead keeps the main
    thread where a signal is seen. On Ctrl-C the process leaves at once with
    exit status 130, without waiting for the kernel: a command writes its
    outputs whole or not at all (:mod:`flowemu.core.outputs`), so nothing
    half-written is left (a temporary file being renamed at that very moment
    may stay, named ``.tmp-*``). The work's result or exception is the
    caller's, as if it had run here. Not for ``sweep``, which installs its
    own handlers and saves what its workers finished before it stops.

    While it waits, once the work has run ``progress_after`` seconds, it
    shows on ``stream`` (default stderr), if that is a terminal, one line
    redrawn in place: the time so far and what the engine reports doing
    (:mod:`flowemu.core.progress`: e.g. ``torus:64x64 swing: distinct steps
    3/12``, and while a step's flows finish one by one, ``flows finished
    5,120/16,384``); the line is erased when the work ends. Not on a file or pipe,
    where the output stays what it was."""
    box: dict = {}

    def target():
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            box["error"] = exc

    stream = sys.stderr if stream is None else stream
    shown = _ProgressLine(stream) if _is_terminal(stream) else None
    start = time.monotonic()
    saved = sys.stdout, sys.stderr
    if shown is not None:
        # the command's first output erases the line and ends it (a table
        # must not start after it, on the same line); a note on stderr only
        # erases it, and it is drawn again below the note
        sys.stdout, sys.stderr = (_Erasing(sys.stdout, shown),
                                  _Erasing(sys.stderr, shown, ends=stream is not sys.stderr))
    worker = threading.Thread(target=target, name="flowemu-command", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.25)
            if shown is not None and time.monotonic() - start >= progress_after:
                shown.draw(time.monotonic() - start, progress_snapshot())
    except KeyboardInterrupt:
        if shown is not None:
            shown.erase()
        for stream in (*saved, sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(130)
    finally:
        if shown is not None:
            sys.stdout, sys.stderr = saved
            shown.erase()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


class _ProgressLine:
    """One status line on a terminal, redrawn in place until :meth:`end`."""

    def __init__(self, stream):
        self.stream = stream
        self.drawn = ""
        self.ended = False
        self.held = False
        self.lock = threading.Lock()

    def end(self) -> None:
        """Erase the line and draw it no more (the command's output begins)."""
        with self.lock:
            self._erase()
            self.ended = True

    def draw(self, elapsed: float, state) -> None:
        with self.lock:
            if not (self.ended or self.held):
                self._draw(elapsed, state)

    def hold(self, held: bool) -> None:
        """Erase the line for another's text on the stream; ``held``: that
        text goes on (no line end yet), draw nothing until it ends."""
        with self.lock:
            self._erase()
            self.held = held

    def _draw(self, elapsed: float, state) -> None:
        text = f"flowemu: {elapsed:.0f}s"
        if state.label:
            text += f", {state.label} {state.done}/{state.total}"
        if state.flows_total:   # inside a step: one event-driven solve can take minutes
            text += f", flows finished {state.flows_done:,}/{state.flows_total:,}"
        if text != self.drawn:
            self._write(f"\r{text}\x1b[K")
            self.drawn = text

    def erase(self) -> None:
        with self.lock:
            self._erase()

    def _erase(self) -> None:
        if self.drawn:
            self._write("\r\x1b[K")
            self.drawn = ""

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass


class _Erasing:
    """A text stream that ends the progress line before its first write
    (stdout: the command's result begins), or (``ends`` False: stderr, a
    note such as the one on compiling kernels) erases it there and lets it
    be drawn again below once a line of it is complete."""

    def __init__(self, stream, line: _ProgressLine, ends: bool = True):
        self._stream, self._line, self._ends = stream, line, ends

    def write(self, text):
        if text and not self._line.ended:
            if self._ends:
                self._line.end()
            else:
                self._line.hold(not text.endswith("\n"))
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


# ------------------------------------------------------------------ output

FORMAT_HELP = "table | csv | json | parquet (default: from --out's extension, else table)"
OUT_HELP = "write here instead of stdout: .csv, .json, .parquet, .txt (table)"
#: --where of compare and plot: the sweep file's filter language over the rows
WHERE_HELP = ("only rows matching this expression, written as in a sweep file's where: "
              "\"bandwidth == rate('100Gb/s') and family == 'torus'\" (sweep names and "
              "rate(), time(), size() read the columns: bandwidth is bandwidth_Bps); column "
              "names work too: \"bandwidth_Bps == 1.25e10 and size_bytes >= size('1MiB')\"")


def add_output_options(parser, out_help: str = OUT_HELP) -> None:
    """``--format`` and ``--out`` of a command writing a result table."""
    parser.add_argument("--format", "-f", default="table", help=FORMAT_HELP)
    parser.add_argument("--out", "-o", help=out_help)


def chosen_format(args, allowed=FORMATS) -> str:
    """The format to write: ``--out``'s extension, else ``--format`` as given,
    else table (:func:`flowemu.core.outputs.output_format`)."""
    return output_format(args.out, args.format if given(args, "format") else None, allowed)


def write_output(df, fmt: str, out: str | None, table: Callable[..., str]) -> None:
    """Write a result table as ``fmt`` to ``out`` (checked before) or stdout;
    ``table(df)`` is its text for the ``table`` format."""
    if fmt == "parquet":
        write_frame(out, "--out", df, fmt)
        return
    text = table(df) if fmt == "table" else frame_text(df, fmt)
    if out:
        write_text(out, "--out", text)
    else:
        print(text.rstrip("\n"))


# ------------------------------------------------------------------ units, network

#: the network options: argument of Network → option (messages name the option)
NETWORK_OPTIONS = {"bandwidth": "--bandwidth", "link_latency": "--link-latency",
                   "hop_latency": "--hop-latency", "alpha": "--alpha", "gamma": "--gamma",
                   "delta": "--delta", "incast_threshold": "--incast-threshold",
                   "incast_slope": "--incast-slope"}


#: the Python API's arguments (simulate, simulate_jobs, ...) → the option of the
#: same meaning on the command line, for :func:`naming_options`; a command
#: uses the entries whose argument is one of its own (``args.<name>``)
API_OPTIONS = {
    **NETWORK_OPTIONS, "network": "--network", "topology": "--topology",
    "algorithm": "--algorithm", "traffic": "--traffic", "collective": "--collective",
    "sizes": "--sizes", "ranks": "--ranks", "placement": "--placement", "ecmp": "--ecmp",
    "seed": "--seed", "model": "--model", "sync": "--sync", "fail": "--fail",
    "degrade": "--degrade", "fail_policy": "--fail-policy", "slow": "--slow",
    "background": "--background", "max_memory": "--max-memory", "size": "--size",
    "injection": "--injection", "nic": "--nic", "where": "--where", "out": "--out",
}


def ecmp_help(modes: Iterable[str], family_modes: Mapping[str, tuple[str, ...]]) -> str:
    """``--ecmp``'s help: every mode of ``modes`` (the tuple the check allows,
    :data:`flowemu.topology.base.ECMP_MODES`, so the two cannot differ), each
    with the families implementing it when not all do (``family_modes``:
    :func:`flowemu.topology.topology_modes`; adaptive goes with split, as
    ``flowemu list`` shows)."""
    implemented = {family: (*own, "adaptive") if "split" in own else own
                   for family, own in family_modes.items()}
    shown = []
    for mode in modes:
        families = [family for family, own in implemented.items() if mode in own]
        where = f" ({', '.join(families)})" if 0 < len(families) < len(implemented) else ""
        shown.append(mode + where)
    return " | ".join(shown) + "; default split"


def add_network_options(parser) -> None:
    """``--network`` (a preset) and the values beside it that override it."""
    parser.add_argument("--network", help="network preset: a built-in name (flowemu list) or a "
                                          ".toml file (flowemu fit --save); the network options "
                                          "given beside it override its values")
    parser.add_argument("--bandwidth", default="400Gb/s",
                        help="link bandwidth with its unit: 400Gb/s (bits), 50GB/s (bytes) "
                             "(default %(default)s)")
    parser.add_argument("--link-latency", default="100ns",
                        help="per link, with its unit: 100ns, 1us (default %(default)s)")
    parser.add_argument("--hop-latency", default="300ns", help="per hop (default %(default)s)")
    parser.add_argument("--alpha", default="0",
                        help="per-message overhead α, e.g. 1us (default 0)")
    parser.add_argument("--gamma", default="0",
                        help="GenModel reduce cost γ per byte, e.g. 1ps (default 0)")
    parser.add_argument("--delta", default="0",
                        help="GenModel memory cost δ per byte, e.g. 1ps (default 0)")
    parser.add_argument("--incast-threshold", default="inf",
                        help="GenModel w_t, a flow count; needs --incast-slope (default inf: off)")
    parser.add_argument("--incast-slope", default="0",
                        help="GenModel ε per byte, e.g. 1ps; needs --incast-threshold "
                             "(default 0: off)")


def network(args) -> Network:
    """The run's Network; every value parsed under its CLI option's name."""
    times = {name: parse_time(getattr(args, name), NETWORK_OPTIONS[name])
             for name in ("link_latency", "hop_latency", "alpha", "gamma", "delta",
                          "incast_slope")}
    values = si_values({"bandwidth": parse_rate(args.bandwidth, "--bandwidth"),
                        "incast_threshold": args.incast_threshold, **times})
    try:
        if args.network is not None:   # the preset, with the options given overriding it
            # (its checks are the API's: an incast field beside the preset that
            # turns incast on needs the other, in the preset or beside it)
            overrides = {k: v for k, v in values.items() if given(args, k)}
            return preset_network(args.network, overrides, "--network",
                                  spelt={k: "--" + k.replace("_", "-") for k in overrides})
        return Network(**values)
    except ConfigError as exc:   # only incast_threshold is left unchecked here
        raise ConfigError(as_options(str(exc), {"incast_threshold": "--incast-threshold"})) \
            from None


def network_keywords(args) -> dict:
    """The run's network (:func:`network`) as the API's keyword arguments,
    every field given: the API then reads both incast options as given, so
    ``--incast-threshold 3 --incast-slope 0`` is incast off, as the same
    keywords are in Python (a ``Network`` object with one of them alone is
    refused there as a forgotten partner)."""
    return si_values(network(args).as_dict())


def check_incast_pair(args) -> None:
    """One of --incast-threshold/--incast-slope without the other (and no
    preset that may hold it) is refused."""
    slope, threshold = given(args, "incast_slope"), given(args, "incast_threshold")
    if slope != threshold and args.network is None:   # a preset may hold the other one
        given_one, missing = (("--incast-slope", "--incast-threshold") if slope
                              else ("--incast-threshold", "--incast-slope"))
        raise ConfigError(f"{given_one}: incast needs both --incast-threshold and "
                          f"--incast-slope; give {missing} too, or drop {given_one}")


def max_memory(args) -> Limit | None:
    """``--max-memory`` checked as the option it is (None when not given)."""
    if args.max_memory is None:
        return None
    try:
        return Limit(limit(args.max_memory).bytes, "--max-memory")
    except ConfigError as exc:
        raise ConfigError(as_options(str(exc), {"max_memory": "--max-memory"})) from None

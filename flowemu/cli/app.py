"""``flowemu run | list | sweep | compare | plot | plan | fit | verify | global`` — the command line.

User mistakes print one line ``flowemu: error: ...`` and exit with code 2;
other flowemu failures exit with 1; no tracebacks for either.

The command line never guesses: an option given twice, an option that the
chosen path would ignore, a value without its unit, an output file whose
extension contradicts ``--format`` — each is an error naming the option.
Output paths are checked before any simulation starts
(:mod:`flowemu.core.outputs`).

Each command is a module of this package (:data:`COMMANDS`) with its options
(``add_arguments(parser)``) and its work (``cmd_<command>(args)``); what they
share is in :mod:`flowemu.cli.options`. The dispatcher imports only the
command that is run: ``flowemu list`` does not load the engine's what-ifs,
the sweeps or matplotlib.

``--plugin FILE_OR_MODULE`` (repeatable, before or after the command) names
a module or a ``.py`` file of plug-in algorithms: it is added to
``FLOWEMU_PLUGINS`` before the command runs, so a sweep's worker processes
import it too (:func:`flowemu.core.plugins.add_plugins`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..core.errors import ConfigError
from ..core.plugins import PLUGINS_VARIABLE, add_plugins
from ..core.version import __version__
from .options import Parser, exit_status, run_interruptible

#: command -> (its module in flowemu.cli, its line in ``flowemu --help``), in that order
COMMANDS = {
    "run": ("run", "time one algorithm (or a traffic file) on one topology"),
    "list": ("listing", "list algorithms and topologies with their parameters"),
    "jobs": ("jobs", ("time several jobs' allreduces sharing one network: each job's time, "
                      "its time alone and the slowdown")),
    "sweep": ("sweep", ("run a sweep file (TOML grid) into a parquet dataset; re-running "
                        "resumes; exit 1 if configurations failed")),
    "compare": ("compare", "best algorithm and goodput gains per topology and size"),
    "plot": ("plot", "goodput, time, gain or slowdown figures of a dataset (PNG)"),
    "plan": ("plan", ("GenTree's plan per switch and size with the GenModel cost of every "
                      "candidate (the paper's Table 6)")),
    "verify": ("verify", ("prove an algorithm's schedule computes its collective (an "
                          "allreduce unless --collective names another), block by block; "
                          "exit 1 at the first step that breaks it")),
    "fit": ("fit", ("fit GenModel (α, β+γ/2, δ, ε, w_t) to measured allreduce times; print "
                    "it, save a network preset, plot it")),
    "global": ("globalbw", ("global (all-to-all) bandwidth of a topology, or a table file's "
                            "rows beside a paper's (the HammingMesh paper's Table II)")),
}


#: commands that handle signals themselves (a signal handler is set in the main
#: thread): they run there, not under :func:`~flowemu.cli.options.run_interruptible`
SIGNAL_COMMANDS = {"sweep"}


def command_module(command: str):
    """The module of a command, imported on first use.

    A deliberate lazy load, not a dodged import cycle: importing every command
    would load matplotlib, the sweeps and the models for each ``flowemu list``
    or one-line refusal (measured: several times the start-up of ``run``).
    """
    return importlib.import_module(f"{__package__}.{COMMANDS[command][0]}")


#: ``--plugin``'s help, on ``flowemu`` and on every command
PLUGIN_HELP = ("import this module (mypkg.algs) or .py file (./myalgs.py) of plug-in "
               "algorithms, which registers them with flowemu.register_algorithm; "
               f"repeatable; added to {PLUGINS_VARIABLE}, so sweep workers import it too")


def add_plugin_option(parser, dest: str) -> None:
    """``--plugin``; ``flowemu``'s and the command's go to distinct ``dest``s
    (argparse copies a command's namespace over ``flowemu``'s, defaults
    included, which would drop the ones given before the command)."""
    parser.add_argument("--plugin", action="append", dest=dest, default=[],
                        metavar="FILE_OR_MODULE", help=PLUGIN_HELP)


class CommandParser(Parser):
    """The parser of one command: its options are added from the command's
    module when it parses (argparse runs only the chosen command's parser)."""

    def __init__(self, *a, command: str | None = None, **kw):
        super().__init__(*a, **kw)
        self.command = command
        add_plugin_option(self, "command_plugins")

    def parse_known_args(self, args=None, namespace=None):
        if self.command is not None:
            command_module(self.command).add_arguments(self)
            self.command = None   # added once
        return super().parse_known_args(args, namespace)


def build_parser() -> argparse.ArgumentParser:
    """``flowemu``'s parser: ``--version`` and one subparser per command."""
    p = Parser(prog="flowemu", description="Flow-level emulator for collective communication.")
    p.add_argument("--version", action="version", version=f"flowemu {__version__}")
    add_plugin_option(p, "plugins")
    sub = p.add_subparsers(dest="command", parser_class=CommandParser)
    sub.required = True
    for command, (_, help_line) in COMMANDS.items():
        sub.add_parser(command, help=help_line, command=command)
    return p


def _unrecognized(message: str, argv) -> str:
    """argparse's ``unrecognized arguments: --slow 3=0.5`` with the commands
    that take such an option (``jobs`` takes no ``--slow``; ``run`` does),
    which argparse does not say; other messages unchanged."""
    if not message.startswith("unrecognized arguments: "):
        return message
    words = [str(a) for a in argv]
    command = next((w for w in words if w in COMMANDS), None)
    options = [w.partition("=")[0] for w in message.split(": ", 1)[1].split()
               if w.startswith("--")]
    if command is None or not options:
        return message
    takers = []
    for other in COMMANDS:
        if other == command:
            continue
        parser = CommandParser(prog=f"flowemu {other}", command=None)
        command_module(other).add_arguments(parser)
        if options[0] in parser._option_string_actions:
            takers.append(other)
    where = f"; {', '.join(takers)} {'takes' if len(takers) == 1 else 'take'} it" \
        if takers else ""
    return (f"{message} ({command} has no {options[0]} option{where}; flowemu {command} "
            "--help lists its options)")


def main(argv=None) -> int:
    """Run ``flowemu`` with ``argv`` (default: the process's); the exit status."""
    return exit_status(lambda: _dispatch(argv))


def _dispatch(argv) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:   # --help, --version: printed, done
        return exc.code if isinstance(exc.code, int) else 0
    except ConfigError as exc:
        raise ConfigError(_unrecognized(str(exc), sys.argv[1:] if argv is None else argv)) \
            from None
    add_plugins([*args.plugins, *args.command_plugins])   # before anything looks a name up
    command = getattr(command_module(args.command), f"cmd_{args.command}")
    if args.command in SIGNAL_COMMANDS:
        return command(args)
    return run_interruptible(lambda: command(args))

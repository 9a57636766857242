"""Every command's errors name the option the user typed (``--algorithm:``,
not ``algorithm:``) and advise the command line's spelling (``--fail-policy
reroute``, not ``fail_policy='reroute'``), through one map of the Python API's
arguments to options (``API_OPTIONS``); the Python API keeps its own words."""

from __future__ import annotations

import pytest

import flowemu
from flowemu.cli.options import API_OPTIONS, cli_spelling
from flowemu.core.errors import ConfigError
from tests.helpers.cli import one_error_line, run

CSV = "algorithm,ranks,size,time\nring,8,1000,1e-5\nring,8,100000,1e-4\nring,8,10000000,1e-3\n"


def test_verify_names_the_algorithm_option(capsys):
    code, out, err = run(capsys, ["verify", "-a", "nope", "--ranks", "8"])
    assert code == 2 and out == ""
    assert one_error_line(err).startswith("flowemu: error: --algorithm: unknown name 'nope'; "
                                          "known: ")


@pytest.mark.parametrize("extra, line", [
    (["--ranks", "0"], "flowemu: error: --ranks: 0 is not allowed; expected an integer >= 1"),
    (["--bandwidth", "12"], "flowemu: error: --bandwidth: '12' has no unit; expected "),
    (["--compare", "-t", "nope:4"], "flowemu: error: --topology 'nope:4': unknown family "),
])
def test_fit_names_its_options(capsys, tmp_path, extra, line):
    data = tmp_path / "m.csv"
    data.write_text(CSV)
    code, out, err = run(capsys, ["fit", str(data), *extra])
    assert code == 2 and out == ""
    assert one_error_line(err).startswith(line)


@pytest.mark.parametrize("argv, line", [
    (["plan", "-t", "tree:8", "--ranks", "0"],
     "flowemu: error: --ranks: 0 is not allowed; expected an integer >= 2"),
    (["global", "-t", "torus:4x4", "--ecmp", "nope"], "flowemu: error: --ecmp: 'nope' is not "),
    (["global", "-t", "torus:4x4", "--nic", "12"], "flowemu: error: --nic: '12' has no unit"),
    # (a global bandwidth is a rate: these were accepted and changed nothing)
    (["global", "-t", "torus:4x4", "--alpha", "1us"],
     "flowemu: error: --alpha: does not change a global bandwidth"),
    (["global", "-t", "torus:4x4", "--hop-latency", "1us"],
     "flowemu: error: --hop-latency: does not change a global bandwidth"),
])
def test_plan_and_global_name_their_options(capsys, argv, line):
    code, out, err = run(capsys, argv)
    assert code == 2 and out == ""
    assert one_error_line(err).startswith(line)


def test_reroute_advice_is_the_option_on_the_command_line(capsys):
    code, out, err = run(capsys, ["run", "-t", "torus:8", "-a", "ring", "--fail", "3-4"])
    assert code == 2 and out == ""
    assert one_error_line(err).startswith("flowemu: error: --fail: algorithm ring relies on "
                                          "link 3-4 ")
    assert one_error_line(err).endswith("; pass --fail-policy reroute to route around it")


def test_python_api_keeps_its_spelling():
    with pytest.raises(ConfigError) as info:
        flowemu.simulate("torus:8", "ring:ports=1", "1MiB", fail="3-4")
    assert str(info.value).startswith("fail: algorithm ring relies on link 3-4 ")
    assert str(info.value).endswith("pass fail_policy='reroute' (--fail-policy reroute) to "
                                    "route around it")
    with pytest.raises(ConfigError) as info:
        flowemu.verify("nope", 8)
    assert str(info.value).startswith("algorithm: unknown name 'nope'; known: ")
    with pytest.raises(ConfigError) as info:
        flowemu.verify("ring")
    assert str(info.value).endswith("(the number of ranks to verify on), e.g. ranks=8")


@pytest.mark.parametrize("message, cli", [
    ("x; pass fail_policy='reroute' (--fail-policy reroute) to route around it",
     "x; pass --fail-policy reroute to route around it"),
    ("x; give one with topology= (--topology)", "x; give one with --topology"),
    ("x; use --max-memory (max_memory=, FLOWEMU_MAX_MEMORY) to override",
     "x; use --max-memory (FLOWEMU_MAX_MEMORY) to override"),
    # (a limit from FLOWEMU_MAX_MEMORY: the option once, not '--max-memory (--max-memory)')
    ("x; give a larger FLOWEMU_MAX_MEMORY, or --max-memory (max_memory=)",
     "x; give a larger FLOWEMU_MAX_MEMORY, or --max-memory"),
    (("seed: 3 applies only to ecmp='hash' (it picks each flow's path there); with "
     "ecmp='split' leave seed at 0"),
     ("seed: 3 applies only to --ecmp hash (it picks each flow's path there); with "
     "--ecmp split leave seed at 0")),
    # a job's keys in quotes, a spec's options and an unknown keyword stay as they are
    ("jobs[0]: e.g. 'algorithm=ring size=64MiB ranks=512 start=10us'",
     "jobs[0]: e.g. 'algorithm=ring size=64MiB ranks=512 start=10us'"),
    ("x: dragonfly:a=4,p=2 needs blocks=True", "x: dragonfly:a=4,p=2 needs blocks=True"),
])
def test_cli_spelling(message, cli):
    assert cli_spelling(message, API_OPTIONS) == cli

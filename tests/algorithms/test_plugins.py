"""Algorithms from outside the package: ``flowemu.register_algorithm``, the
``flowemu.algorithms`` entry-point group and the modules or files named in
``FLOWEMU_PLUGINS`` (``flowemu --plugin``). The plug-in below lives in this
test file, not in flowemu; it runs through simulate, ``flowemu run``, a sweep
and ``flowemu verify``, and broken variants of it are caught by the verifier."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import inspect
import multiprocessing
import os
import sys

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import COPY, REDUCE, Param, Reduction, Schedule, Step, Traffic, registry
from flowemu.algorithms.registry import get_algorithm
from flowemu.core.errors import ConfigError, ScheduleError
from flowemu.study.sweep import load_sweep
from tests.helpers.cli import one_error_line, run

# ------------------------------------------------------------------ the plug-in


def naive_build(p, topology=None, blocks=False, root=0, skip=-1, twice=False):
    """Naive allreduce: every rank reduces its vector into the root, the root copies it back."""
    others = np.array([r for r in range(p) if r != root and r != skip], np.int32)
    up_src = others if not twice else np.concatenate([others, others[:1]])
    down_dst = np.array([r for r in range(p) if r != root], np.int32)

    def traffic(src, dst, op):
        f = len(src)
        extra = {} if not blocks else {
            "block_ptr": np.arange(f + 1), "block_idx": np.zeros(f, np.int32),
            "op": np.full(f, op, np.int8)}
        return Traffic(src, dst, np.ones(f), **extra)

    up = traffic(up_src, np.full(len(up_src), root, np.int32), REDUCE)
    # the root combines its own vector with every one it received: fan-in 1 + k
    red = Reduction(np.array([root]), np.array([1.0]), np.array([1 + len(up_src)]))
    down = traffic(np.full(len(down_dst), root, np.int32), down_dst, COPY)
    steps = (Step(up, red, "to-root"), Step(down, Reduction.none(), "bcast"))
    return Schedule("naive", f"root={root}", p, steps, 1 if blocks else None,
                    np.ones(1) if blocks else None)


def twice_build(p, topology=None, blocks=False):
    """Broken: rank 1's vector reaches the root twice in step 0."""
    return naive_build(p, topology, blocks, twice=True)


def missing_build(p, topology=None, blocks=False):
    """Broken: the last rank never sends its vector to the root."""
    return naive_build(p, topology, blocks, skip=p - 1)


@pytest.fixture
def naive():
    spec = flowemu.register_algorithm("naive", naive_build,
                                      params=(Param("root", int, 0, doc="the root rank"),))
    yield spec
    flowemu.unregister_algorithm("naive")


@pytest.fixture
def fresh_plugins(monkeypatch, tmp_path):
    """Plug-in state as in a new process, restored afterwards (the plug-in
    modules written in ``tmp_path`` are forgotten too)."""
    monkeypatch.setattr(registry, "_scanned", False)
    monkeypatch.setattr(sys, "path", list(sys.path))   # (a plug-in file's folder joins it)
    monkeypatch.setattr(registry, "_PENDING", {})
    monkeypatch.setattr(registry, "_ERRORS", {})
    monkeypatch.setattr(registry, "_IMPORTED", set())
    monkeypatch.setattr(registry, "_MODULE_ERRORS", {})
    # (restored afterwards even where ``flowemu --plugin`` has added to it:
    # setenv records the variable as it was, set or not, delenv alone does not)
    monkeypatch.setenv(registry.PLUGINS_VARIABLE, "")
    monkeypatch.delenv(registry.PLUGINS_VARIABLE)
    before = set(registry._PLUGINS)
    yield monkeypatch
    for name in set(registry._PLUGINS) - before:
        flowemu.unregister_algorithm(name)
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def entry_points(monkeypatch, *eps):
    """importlib.metadata.entry_points answering with these (name, value)
    pairs in the flowemu.algorithms group (nothing installed)."""
    found = importlib.metadata.EntryPoints(
        importlib.metadata.EntryPoint(name, value, registry.ENTRY_POINT_GROUP)
        for name, value in eps)

    def fake(**params):
        assert params == {"group": registry.ENTRY_POINT_GROUP}
        return found
    monkeypatch.setattr(importlib.metadata, "entry_points", fake)


# ------------------------------------------------------------------ running it

def expected_naive_time(p: int, n: float, bandwidth: float) -> float:
    """tree:P (one switch, every link at the bandwidth), no latencies: p − 1
    flows of n share the root's down-link, then the root's up-link."""
    return 2 * (p - 1) * n / bandwidth


def test_simulate_times_the_plugin(naive):
    n = np.array([2.0**10, 2.0**20])
    df = flowemu.simulate("tree:8", "naive", n, bandwidth="8GB/s", link_latency="0s",
                          hop_latency="0s")
    assert list(df["algorithm"]) == ["naive", "naive"] and list(df["steps"]) == [2, 2]
    assert list(df["variant"]) == ["root=0", "root=0"]
    np.testing.assert_allclose(df["time_s"], expected_naive_time(8, n, 8e9), rtol=1e-9)
    df = flowemu.simulate("tree:8", "naive:root=3", "1KiB")
    assert df["variant"].iloc[0] == "root=3" and df["options"].iloc[0] == "root=3"


def test_cli_run_list_and_bad_option(naive, capsys):
    code, out, err = run(capsys, ["run", "-t", "tree:8", "-a", "naive:root=2", "-s", "1KiB",
                                  "-f", "csv", "--link-latency", "0s", "--hop-latency", "0s",
                                  "--bandwidth", "8GB/s"])
    assert code == 0, err
    row = out.strip().splitlines()[1].split(",")
    assert "naive" in row and "root=2" in row
    assert float(row[8]) == pytest.approx(expected_naive_time(8, 1024, 8e9), rel=1e-9)
    code, out, _ = run(capsys, ["list"])
    assert code == 0 and "naive" in out and "root=0" in out and "the root rank" in out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ") and ln.split()}
    assert "(plug-in) " in lines["naive"] and "(plug-in)" not in lines["ring"]
    code, _, err = run(capsys, ["run", "-t", "tree:8", "-a", "naive:depth=2", "-s", "1KiB"])
    assert code == 2 and "unknown option(s) depth" in one_error_line(err)


def test_sweep_runs_the_plugin(naive, tmp_path):
    cfg = tmp_path / "plug.toml"
    cfg.write_text('sizes = "1KiB,1MiB"\n[groups.g]\ntopology = "tree:8"\n'
                   'algorithm = ["naive", "naive:root=5", "ring"]\n'
                   'link_latency = "0s"\nhop_latency = "0s"\nbandwidth = "8GB/s"\n')
    summary = flowemu.sweep(cfg, tmp_path / "out", jobs=1, progress=False)
    assert not summary.errors
    df = flowemu.load(tmp_path / "out")
    mine = df[df["algorithm"] == "naive"].sort_values(["variant", "size_bytes"])
    assert list(mine["variant"]) == ["root=0", "root=0", "root=5", "root=5"]
    np.testing.assert_allclose(mine["time_s"],
                               expected_naive_time(8, mine["size_bytes"].to_numpy(), 8e9),
                               rtol=1e-9)


PLUGIN_MODULE = """
import numpy as np
import flowemu
from flowemu.algorithms import Reduction, Schedule, Step, Traffic

SHARE = 1.0   # each flow's bytes, a fraction of the vector


def build(p, topology=None, blocks=False):
    \"\"\"Every rank sends SHARE of its vector to the next one.\"\"\"
    src = np.arange(p, dtype=np.int32)
    step = Step(Traffic(src, (src + 1) % p, np.full(p, SHARE)), Reduction.none(), "shift")
    return Schedule("edited", "", p, (step,))


flowemu.register_algorithm("edited", build, replace=True)
"""


def test_editing_a_plugin_computes_its_configurations_again(tmp_path, monkeypatch):
    """A plug-in's configurations are identified by its code too (the
    source file of its builder): after an edit the sweep computes them
    again instead of reusing the old rows; a built-in's are reused."""
    import importlib
    module = tmp_path / "edited_plugin_alg.py"
    module.write_text(PLUGIN_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = importlib.import_module("edited_plugin_alg")
    try:
        assert registry.plugin_sources("edited") == (str(module),)
        assert registry.plugin_sources("ring") == ()
        cfg = tmp_path / "plug.toml"
        cfg.write_text('sizes = "1KiB,1MiB"\ntopology = "torus:8"\n'
                       'algorithm = ["edited", "ring"]\n')
        out = tmp_path / "res-plug"
        first = flowemu.sweep(cfg, out, jobs=1, progress=False)
        again = flowemu.sweep(cfg, out, jobs=1, progress=False)
        assert (first.computed, again.computed, again.reused) == (2, 0, 2)
        before = flowemu.load(out).set_index(["algorithm", "size_bytes"])["time_s"]
        jobs = tmp_path / "jobs.toml"   # a job set running the plug-in: identified so too
        jobs.write_text('topology = "torus:8"\njobs = [["algorithm=edited size=1KiB ranks=4", '
                        '"algorithm=ring size=1KiB ranks=4"]]\n')
        job_set = load_sweep(jobs).configs[0]
        assert "algorithm" in job_set.canonical()["files"]

        module.write_text(PLUGIN_MODULE.replace("SHARE = 1.0", "SHARE = 2.50"))
        importlib.reload(plugin)
        assert load_sweep(jobs).configs[0].hash != job_set.hash
        edited = flowemu.sweep(cfg, out, jobs=1, progress=False)
        assert (edited.computed, edited.reused) == (1, 1)
        after = flowemu.load(out).set_index(["algorithm", "size_bytes"])["time_s"]
        assert after["ring"].equals(before["ring"])
        assert (after["edited"] > before["edited"]).all()
        direct = flowemu.simulate("torus:8", "edited", "1KiB,1MiB")["time_s"].to_numpy()
        np.testing.assert_array_equal(after["edited"].sort_index().to_numpy(), direct)
    finally:
        flowemu.unregister_algorithm("edited")


def test_verify_proves_the_plugin(naive, capsys):
    ver = flowemu.verify("naive:root=2", 6)
    (v,) = ver.variants
    assert v.variant == "root=2" and v.report.num_steps == 2 and v.report.num_blocks == 1
    # closed forms: the root receives p − 1 vectors and sends p − 1; others send/receive 1
    np.testing.assert_array_equal(v.report.sent, [1, 1, 5, 1, 1, 1])
    np.testing.assert_array_equal(v.report.received, [1, 1, 5, 1, 1, 1])
    np.testing.assert_array_equal(v.report.reduced, [0, 0, 1, 0, 0, 0])
    code, out, err = run(capsys, ["verify", "-a", "naive", "--ranks", "4"])
    assert code == 0 and err == "" and out.startswith("verified naive on 4 ranks")
    assert "proved: 2 steps, 1 block;" in out


@pytest.mark.parametrize("build, needle", [
    (twice_build, ("step 0 'to-root': REDUCE into rank 0 block 0 counts origin 1's "
                  "contribution 2 times")),
    (missing_build, ("after the last step 1 'bcast' (end of schedule): rank 0 block 0 lacks "
                    "the contribution of origin(s) [4]")),
])
def test_verify_catches_a_broken_plugin(build, needle, capsys):
    flowemu.register_algorithm("broken", build)
    try:
        with pytest.raises(ScheduleError, match="step"):
            flowemu.verify("broken", 5)
        code, out, err = run(capsys, ["verify", "-a", "broken", "--ranks", "5"])
    finally:
        flowemu.unregister_algorithm("broken")
    lines = err.strip().splitlines()
    assert code == 1 and out == "" and len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("flowemu: verify: FAILED: naive/root=0 p=5: ")
    assert needle in lines[0]


def test_verify_needs_block_content(capsys):
    flowemu.register_algorithm("noblocks", lambda p, topology, blocks: naive_build(p))
    try:
        code, _, err = run(capsys, ["verify", "-a", "noblocks", "--ranks", "3"])
    finally:
        flowemu.unregister_algorithm("noblocks")
    assert code == 1 and "build the schedule with blocks=True" in err


def test_builder_bugs_are_one_line(capsys):
    def raises(p, topology, blocks):
        return {}["missing"]
    flowemu.register_algorithm("raises", raises, doc="raises KeyError")
    flowemu.register_algorithm("notsched", lambda p, topology, blocks: 42)
    flowemu.register_algorithm("wrongp", lambda p, topology, blocks: naive_build(p + 1))
    try:
        with pytest.raises(ScheduleError, match="its builder raised KeyError") as exc:
            flowemu.simulate("tree:4", "raises", "1KiB")
        assert isinstance(exc.value.__cause__, KeyError)   # the Python user sees the cause
        for name, needle in (("raises", "its builder raised KeyError: 'missing'"),
                             ("notsched", "returned 42, not a flowemu.algorithms.Schedule"),
                             ("wrongp", "asked for 4 ranks but returned a schedule of p=5")):
            code, _, err = run(capsys, ["run", "-t", "tree:4", "-a", name, "-s", "1KiB"])
            assert code == 1 and len(err.strip().splitlines()) == 1 and needle in err, err
            code, _, err = run(capsys, ["verify", "-a", name, "--ranks", "4"])
            assert code == 1 and len(err.strip().splitlines()) == 1 and needle in err, err
    finally:
        for name in ("raises", "notsched", "wrongp"):
            flowemu.unregister_algorithm(name)


def test_a_flowemu_error_in_a_builder_names_the_plugin(capsys):
    """A builder that makes a Traffic of p senders and p - 1 receivers runs
    into flowemu's Traffic check: the same ConfigError, naming the plug-in
    (it named only the Traffic), with the original as its cause; a message
    that names the algorithm already is left as it is."""
    def bad_traffic(p, topology, blocks):
        Traffic(np.arange(p), np.arange(p - 1), np.ones(p - 1))

    def own_check(p, topology, blocks):
        raise ConfigError("algorithm owncheck: p must be even")
    flowemu.register_algorithm("badroot", bad_traffic)
    flowemu.register_algorithm("owncheck", own_check)
    try:
        with pytest.raises(ConfigError) as exc:
            flowemu.simulate("tree:16", "badroot", "1KiB")
        assert str(exc.value).startswith("algorithm badroot (plug-in): Traffic: src, dst and "
                                          "share must have equal lengths")
        assert isinstance(exc.value.__cause__, ConfigError)
        code, _, err = run(capsys, ["verify", "-a", "badroot", "--ranks", "16"])
        assert code == 2 and one_error_line(err).startswith(
            "flowemu: error: algorithm badroot (plug-in): Traffic:")
        with pytest.raises(ConfigError, match=r"^algorithm owncheck: p must be even$"):
            flowemu.simulate("tree:4", "owncheck", "1KiB")
    finally:
        for name in ("badroot", "owncheck"):
            flowemu.unregister_algorithm(name)


# ------------------------------------------------------------------ registration errors

@pytest.mark.parametrize("args, kwargs, needle", [
    (("ring", naive_build), {}, "'ring' is a built-in algorithm"),
    (("naive", naive_build), {}, "'naive' is already registered; pass replace=True"),
    (("x", "not a function"), {}, "build 'not a function' of 'x' is not callable"),
    (("a:b", naive_build), {}, "name 'a:b' is not allowed"),
    (("", naive_build), {}, "name '' is not allowed"),
    ((3, naive_build), {}, "name 3 is not allowed"),
    (("x", naive_build), {"params": ("root",)}, "'root' is not a flowemu.algorithms.Param"),
    (("x", naive_build), {"params": "root"}, "must be Param objects or a mapping"),
    (("x", naive_build), {"params": {"root": [0]}}, "option root has default [0]"),
    (("x", naive_build), {"params": {"1x": 0}}, "option name '1x' is not an identifier"),
    (("x", naive_build), {"params": (Param("a", int, 0), Param("a", int, 1))},
     "option a is given twice"),
    (("x", naive_build), {"doc": 3}, "doc of 'x' must be a string"),
    (("x", naive_build), {"families": "tree"}, "families of 'x' must be a sequence"),
    # a misspelled family registered an algorithm that then ran on no topology
    (("x", naive_build), {"families": ["tree", "fatree"]},
     ("families of 'x': unknown topology family 'fatree' (did you mean 'fattree'?); known: "
     "dragonfly, fattree, graph, hammingmesh, hx2mesh, hx4mesh, hyperx, leafspine, mesh, "
     "torus, tree")),
])
def test_register_errors(naive, args, kwargs, needle):
    with pytest.raises(ConfigError) as exc:
        flowemu.register_algorithm(*args, **kwargs)
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    assert get_algorithm("ring").name == "ring" and "x" not in flowemu.algorithms.algorithm_names()


def test_replace_mapping_params_families_and_unregister(naive):
    spec = flowemu.register_algorithm("naive", naive_build, params={"root": 1}, replace=True,
                                      families=["tree"])
    assert get_algorithm("naive") is spec and spec.params[0].type is int
    assert spec.doc.startswith("Naive allreduce")   # the builder's docstring
    df = flowemu.simulate("tree:4", "naive", "1KiB")
    assert df["variant"].iloc[0] == "root=1"
    with pytest.raises(ConfigError, match="runs on tree"):
        flowemu.verify("naive", topology="torus:4")
    with pytest.raises(ConfigError, match="'ring' is not a registered plug-in"):
        flowemu.unregister_algorithm("ring")


# ------------------------------------------------------------------ entry points

def test_entry_points_load_lazily_and_broken_ones_are_one_line(fresh_plugins, capsys):
    entry_points(fresh_plugins,
                 ("epnaive", f"{__name__}:naive_build"),
                 ("epbroken", "flowemu_no_such_plugin_module:build"),
                 ("epbug", f"{__name__}:BUGGY"),
                 ("ring", f"{__name__}:naive_build"))
    assert not registry._scanned
    assert get_algorithm("recdoub").name == "recdoub"   # a built-in: no metadata read
    assert not registry._scanned
    spec = get_algorithm("epnaive")   # an unknown name: scan, import only its entry point
    assert spec.doc.startswith("Naive allreduce")
    assert set(registry._PENDING) == {"epbroken", "epbug"}
    df = flowemu.simulate("tree:4", "epnaive", "1KiB", bandwidth="8GB/s", link_latency="0s",
                          hop_latency="0s")
    assert df["time_s"].iloc[0] == pytest.approx(expected_naive_time(4, 1024, 8e9))
    assert flowemu.verify("epnaive", 4).variants[0].report.num_blocks == 1

    with pytest.raises(ConfigError) as exc:
        get_algorithm("epbroken")
    msg = str(exc.value)
    assert msg.startswith("plug-in entry point epbroken = flowemu_no_such_plugin_module:build "
                          "(group flowemu.algorithms) failed to load: ModuleNotFoundError")
    code, _, err = run(capsys, ["run", "-t", "tree:4", "-a", "epbroken", "-s", "1KiB"])
    assert code == 2 and "entry point epbroken = flowemu_no_such_plugin_module:build" \
        in one_error_line(err)
    code, _, err = run(capsys, ["verify", "-a", "epbroken", "--ranks", "4"])
    assert code == 2 and "failed to load" in one_error_line(err)
    code, _, err = run(capsys, ["run", "-t", "tree:4", "-a", "epbug", "-s", "1KiB"])
    assert code == 2 and "epbug" in one_error_line(err) and "AttributeError" in err

    # the others keep working; the built-in keeps its name; list says what failed
    assert get_algorithm("ring").build.__module__ == "flowemu.algorithms.ring"
    code, out, err = run(capsys, ["list"])
    assert code == 0 and "epnaive" in out and "epbroken" not in out
    notes = err.strip().splitlines()
    assert len(notes) == 3 and all(n.startswith("flowemu: note: plug-in entry point ")
                                   for n in notes)
    assert any("ring = " in n and "built-in algorithm; the built-in is kept" in n
               for n in notes)
    assert set(registry.plugin_errors()) == {"epbroken", "epbug", "ring"}


def test_entry_point_objects(fresh_plugins):
    from flowemu.algorithms.base import AlgorithmSpec
    global EP_SPEC, EP_OTHER
    EP_SPEC = AlgorithmSpec("epspec", naive_build, (Param("root", int, 0),), "a spec")
    EP_OTHER = AlgorithmSpec("elsewhere", naive_build)
    entry_points(fresh_plugins, ("epspec", f"{__name__}:EP_SPEC"),
                 ("epnamed", f"{__name__}:EP_OTHER"), ("epnumber", f"{__name__}:EP_NUMBER"),
                 ("epmodule", __name__))
    assert get_algorithm("epspec").doc == "a spec"
    for name, needle in (("epnamed", "its AlgorithmSpec is named 'elsewhere', not 'epnamed'"),
                         ("epnumber", "it is 7; expected a builder"),
                         ("epmodule", f"importing module {__name__} registered no algorithm")):
        with pytest.raises(ConfigError, match="failed to load") as exc:
            get_algorithm(name)
        assert needle in str(exc.value)


def plugin_module(fresh_plugins, tmp_path, name: str, body: str) -> None:
    """A module ``name`` on the path that imports flowemu and this file's
    ``naive_build``, then runs ``body`` (its registrations)."""
    (tmp_path / f"{name}.py").write_text(
        "import flowemu\nfrom tests.algorithms.test_plugins import naive_build\n" + body)
    fresh_plugins.syspath_prepend(str(tmp_path))


def test_an_entry_point_whose_module_registers_it_loads_once(fresh_plugins, tmp_path,
                                                            capsys):
    """docs/plugins.md's module registers ``naive`` when imported, and its
    entry point names the builder (``myalgs:naive``): loading it imports the
    module, which registers the name, and that registration stands (it was
    reported as failing to load: "already registered")."""
    plugin_module(fresh_plugins, tmp_path, "selfreg_alg",
                  "def selfreg(p, topology=None, blocks=False):\n"
                  "    return naive_build(p, topology, blocks)\n"
                  "flowemu.register_algorithm('selfreg', selfreg)\n")
    entry_points(fresh_plugins, ("selfreg", "selfreg_alg:selfreg"))
    assert get_algorithm("selfreg").name == "selfreg"
    assert registry._ERRORS == {}
    code, _, err = run(capsys, ["list"])
    assert code == 0 and "failed to load" not in err


def test_one_module_giving_two_entry_points_lists_both(fresh_plugins, tmp_path, capsys):
    """docs/plugins.md's module registering two algorithms when imported, each
    an entry point naming its builder: importing the first registers both,
    and every entry point is loaded once (the second was looked up after the
    first had taken it: KeyError)."""
    plugin_module(fresh_plugins, tmp_path, "twoplug_algs",
                  "def one(p, topology=None, blocks=False):\n"
                  "    return naive_build(p, topology, blocks)\n"
                  "def two(p, topology=None, blocks=False):\n"
                  "    return naive_build(p, topology, blocks, root=1)\n"
                  "flowemu.register_algorithm('twoone', one)\n"
                  "flowemu.register_algorithm('twotwo', two)\n")
    entry_points(fresh_plugins, ("twoone", "twoplug_algs:one"), ("twotwo", "twoplug_algs:two"))
    code, out, err = run(capsys, ["list"])
    assert code == 0 and err == "", err
    names = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert "twoone" in names and "twotwo" in names
    assert registry._PENDING == {} and registry._ERRORS == {}
    assert get_algorithm("twotwo").build.__wrapped__.__module__ == "twoplug_algs"


def test_a_name_registered_beside_an_entry_point_is_found(fresh_plugins, tmp_path):
    """A module that registers two names, only one of them an entry point:
    looking up the other imports the installed plug-ins, and finds it."""
    plugin_module(fresh_plugins, tmp_path, "besideplug_algs",
                  "flowemu.register_algorithm('besideone', naive_build)\n"
                  "flowemu.register_algorithm('besidetwo', naive_build)\n")
    entry_points(fresh_plugins, ("besideone", "besideplug_algs"))
    assert get_algorithm("besidetwo").name == "besidetwo"
    assert registry._PENDING == {} and registry._ERRORS == {}


def test_an_unknown_name_lists_the_installed_plugins(fresh_plugins, capsys):
    """The names an unknown one is checked against include the plug-ins of
    installed packages not imported yet, and the message says where
    plug-ins come from."""
    entry_points(fresh_plugins, ("epnaive", f"{__name__}:naive_build"))
    with pytest.raises(ConfigError) as exc:
        get_algorithm("epnaiv")
    msg = str(exc.value)
    assert msg.startswith("algorithm: unknown name 'epnaiv' (did you mean 'epnaive'?); known: ")
    assert "epnaive" in msg.split("; known: ")[1].split(";")[0].split(", ")
    assert msg.endswith("; plug-ins come from the 'flowemu.algorithms' entry-point group of "
                        "installed packages, from the modules and .py files named in "
                        "FLOWEMU_PLUGINS (flowemu --plugin FILE_OR_MODULE) or from "
                        "flowemu.register_algorithm (docs/plugins.md)")
    code, _, err = run(capsys, ["run", "-t", "tree:4", "-a", "direct", "-s", "1KiB"])
    line = one_error_line(err)
    assert code == 2 and "unknown name 'direct'" in line and "epnaive" in line
    assert line.endswith(f"; {registry.PLUGIN_HINT}")


def test_unreadable_metadata_does_not_break_lookups(fresh_plugins, capsys):
    def boom(**params):
        raise OSError("bad METADATA")
    fresh_plugins.setattr(importlib.metadata, "entry_points", boom)
    assert get_algorithm("ring").name == "ring"
    code, _, err = run(capsys, ["list"])
    assert code == 0 and "cannot read the 'flowemu.algorithms' entry points: OSError" in err


EP_NUMBER = 7


def test_sized_plugin_without_blocks_keyword_is_refused(fresh_plugins, capsys):
    from flowemu.algorithms.base import AlgorithmSpec

    def sized(p, topology, network, sizes, options):
        return [(naive_build(p), np.arange(len(sizes)))]
    registry._install(AlgorithmSpec("sizedplug", naive_build, sized=sized), False)
    code, _, err = run(capsys, ["verify", "-a", "sizedplug", "--ranks", "4"])
    assert code == 2 and "its sized hook takes no blocks= keyword" in one_error_line(err)


def auto_build(p, topology=None, blocks=False, variant="good"):
    """Two variants; "bad" reduces rank 1's vector into the root twice."""
    sched = naive_build(p, topology, blocks, twice=variant == "bad")
    return dataclasses.replace(sched, variant=variant)


def test_auto_plugin_every_choice_then_the_failure(fresh_plugins, capsys):
    from flowemu.algorithms.base import AlgorithmSpec
    global EP_AUTO
    EP_AUTO = AlgorithmSpec("epauto", auto_build,
                            (Param("variant", str, "auto", ("auto", "good", "bad")),),
                            "good or bad", auto_param="variant")
    entry_points(fresh_plugins, ("epauto", f"{__name__}:EP_AUTO"))
    code, out, err = run(capsys, ["verify", "-a", "epauto", "--ranks", "4"])
    # the good variant is proved and printed, then the bad one fails: exit 1
    assert code == 1 and out.startswith("verified epauto on 4 ranks (rank ids, no topology): "
                                        "variant good (variant=good) [variant=auto: every "
                                        "choice is verified]")
    assert "variant bad" not in out
    assert one_line_failure(err).startswith("flowemu: verify: FAILED: naive/bad p=4: step 0 ")
    code, out, err = run(capsys, ["verify", "-a", "epauto:variant=good", "--ranks", "4"])
    assert code == 0 and "[variant=auto" not in out
    # the entry point's AlgorithmSpec is guarded like register_algorithm's builders
    with pytest.raises(ScheduleError, match="epauto .plug-in.: its builder raised TypeError"):
        get_algorithm("epauto").build(4, None, False, variant="good", depth=1)


def one_line_failure(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------ FLOWEMU_PLUGINS, --plugin

#: a plug-in file that needs nothing but flowemu (a spawned worker process
#: imports it too); NAME_HERE is its algorithm's name; with PLUGIN_PIDS set,
#: its builder notes the process that built a schedule in that file
STANDALONE_PLUGIN = """
import os

import numpy as np

import flowemu
from flowemu.algorithms import Reduction, Schedule, Step, Traffic


def build(p, topology=None, blocks=False):
    \"\"\"Every rank sends its vector to the next one.\"\"\"
    if os.environ.get("PLUGIN_PIDS"):
        with open(os.environ["PLUGIN_PIDS"], "a") as pids:
            pids.write(f"{os.getpid()}\\n")
    src = np.arange(p, dtype=np.int32)
    step = Step(Traffic(src, (src + 1) % p, np.ones(p)), Reduction.none(), "shift")
    return Schedule("NAME_HERE", "", p, (step,))


flowemu.register_algorithm("NAME_HERE", build)
"""


def plugin_file(path, name: str):
    """Write the standalone plug-in registering ``name`` at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(STANDALONE_PLUGIN.replace("NAME_HERE", name))
    return path


def test_the_plugins_variable_imports_a_module_and_a_file_once(fresh_plugins, tmp_path):
    """FLOWEMU_PLUGINS names a module (on sys.path) and a .py file (relative
    to the current directory, not on sys.path): both are imported at the
    first lookup that needs the plug-ins, not before, and only once; the
    file is a module of its own, whose source a sweep's hash reads."""
    plugin_module(fresh_plugins, tmp_path, "envmod_algs",
                  "flowemu.register_algorithm('envmod', naive_build)\n")
    path = plugin_file(tmp_path / "files" / "envfile_algs.py", "envfile")
    fresh_plugins.chdir(tmp_path)
    fresh_plugins.setenv("FLOWEMU_PLUGINS", " envmod_algs, files/envfile_algs.py,, ")
    assert get_algorithm("ring").name == "ring"   # a built-in: nothing imported
    assert "envmod_algs" not in sys.modules and "envfile_algs" not in sys.modules
    assert get_algorithm("envmod").doc.startswith("Naive allreduce")
    spec = get_algorithm("envfile")
    module = sys.modules["envfile_algs"]
    builder = spec.build.__wrapped__
    assert module.__file__ == str(path) and inspect.getmodule(builder) is module
    assert inspect.getsourcefile(builder) == str(path)
    assert registry.plugin_sources("envfile") == (str(path),)
    df = flowemu.simulate("torus:4x4", "envfile", "1KiB")
    assert df["algorithm"].iloc[0] == "envfile" and df["time_s"].iloc[0] > 0
    # the same file by its absolute path, listed again: not imported a second time
    # (which would register its name again: "already registered")
    fresh_plugins.setenv("FLOWEMU_PLUGINS", f"envmod_algs,files/envfile_algs.py,{path}")
    assert {"envmod", "envfile"} <= set(flowemu.algorithms.algorithm_names())
    assert registry._MODULE_ERRORS == {} and sys.modules["envfile_algs"] is module


def test_a_plugin_file_imports_a_module_beside_it(fresh_plugins, tmp_path):
    """As a script does: the folder of a FLOWEMU_PLUGINS file is on the
    path while it (and later its builder) imports, after the installed
    modules."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "sibling_helpers.py").write_text(
        "from tests.algorithms.test_plugins import naive_build\n"
        "def build(p, topology=None, blocks=False):\n"
        "    return naive_build(p, topology, blocks)\n")
    (files / "sibling_algs.py").write_text(
        "import flowemu\nfrom sibling_helpers import build\n"
        "flowemu.register_algorithm('sibling', build)\n")
    fresh_plugins.chdir(tmp_path)
    fresh_plugins.setenv("FLOWEMU_PLUGINS", "files/sibling_algs.py")
    assert get_algorithm("sibling").name == "sibling" and registry._MODULE_ERRORS == {}
    assert sys.path[-1] == str(files)


def test_the_plugin_option_before_or_after_the_command(fresh_plugins, tmp_path, capsys):
    """``flowemu --plugin FILE run ...`` and ``flowemu run --plugin FILE ...``
    run a plug-in file's algorithm; the file goes into FLOWEMU_PLUGINS by its
    absolute path (for worker processes in other directories), once."""
    first = plugin_file(tmp_path / "cliplug_algs.py", "cliplug")
    second = plugin_file(tmp_path / "sub" / "cliplug_two.py", "cliplug2")
    fresh_plugins.chdir(tmp_path)
    code, out, err = run(capsys, ["--plugin", "cliplug_algs.py", "run", "-a", "cliplug",
                                  "-t", "torus:4x4", "-s", "1KiB", "-f", "csv"])
    assert (code, err) == (0, ""), err
    header, row = out.strip().splitlines()
    assert dict(zip(header.split(","), row.split(",")))["algorithm"] == "cliplug"
    assert os.environ["FLOWEMU_PLUGINS"] == str(first)
    code, out, err = run(capsys, ["--plugin", "./cliplug_algs.py", "run", "--plugin",
                                  "sub/cliplug_two.py", "-a", "cliplug2", "-t", "torus:4x4",
                                  "-s", "1KiB"])
    assert (code, err) == (0, ""), err
    assert "cliplug2" in out
    assert registry.plugin_items() == [str(first), str(second)]
    code, _, err = run(capsys, ["--plugin", "nothere.py", "run", "-a", "ring", "-t",
                                "torus:4x4", "-s", "1KiB"])
    assert code == 2 and one_error_line(err).startswith(
        "flowemu: error: --plugin: no file 'nothere.py'")


@pytest.mark.parametrize("item, body, needle", [
    ("brokensyntax_algs.py", "x = (\n", "SyntaxError: '(' was never closed"),
    ("brokenraise_algs.py", "raise RuntimeError('no GPU here')\n", "RuntimeError: no GPU here"),
    ("brokenring_algs.py", "import flowemu\nflowemu.register_algorithm('ring', print)\n",
     "register_algorithm: 'ring' is a built-in algorithm; choose another name"),
    ("missing_algs.py", None, "no file "),
    ("flowemu_no_such_plugin_mod", None,
     "ModuleNotFoundError: No module named 'flowemu_no_such_plugin_mod'"),
])
def test_a_broken_plugin_module_is_one_line(fresh_plugins, tmp_path, capsys, item, body,
                                            needle):
    """A FLOWEMU_PLUGINS item that fails to import breaks nothing else: one
    line, a note in ``flowemu list`` and the end of an unknown name's error
    (exit 2, no traceback); the built-ins keep working."""
    if body is not None:
        (tmp_path / item).write_text(body)
    fresh_plugins.chdir(tmp_path)
    fresh_plugins.setenv("FLOWEMU_PLUGINS", item)
    message = f"FLOWEMU_PLUGINS: {item} failed to import: "
    code, out, err = run(capsys, ["list"])
    assert code == 0 and "ring" in out
    (note,) = [line for line in err.splitlines() if "FLOWEMU_PLUGINS" in line]
    assert note.startswith(f"flowemu: note: {message}") and needle in note
    assert "Traceback" not in err
    code, out, err = run(capsys, ["run", "-a", "direct", "-t", "torus:4x4", "-s", "1KiB"])
    line = one_error_line(err)
    assert code == 2 and out == "" and "unknown name 'direct'" in line
    tail = line.split(f"; {registry.PLUGIN_HINT}; ")[1]
    assert tail.startswith(message) and needle in tail
    code, _, err = run(capsys, ["run", "-a", "ring", "-t", "torus:4x4", "-s", "1KiB"])
    assert (code, err) == (0, "")
    assert registry._MODULE_ERRORS.keys() == {item}   # tried once
    assert "ring" in registry._REGISTRY and "ring" not in registry._PLUGINS


def test_the_plugin_option_with_a_broken_file_says_why_a_name_is_unknown(fresh_plugins,
                                                                          tmp_path, capsys):
    path = tmp_path / "badplug_algs.py"
    path.write_text("import flowemu\n1 / 0\n")
    code, _, err = run(capsys, ["--plugin", str(path), "run", "-a", "direct", "-t",
                                "torus:4x4", "-s", "1KiB"])
    assert code == 2 and one_error_line(err).endswith(
        f"; FLOWEMU_PLUGINS: {path} failed to import: ZeroDivisionError: division by zero")


def test_editing_a_plugin_file_changes_its_configurations_hash(fresh_plugins, tmp_path):
    path = plugin_file(tmp_path / "hashplug_algs.py", "hashplug")
    fresh_plugins.setenv("FLOWEMU_PLUGINS", str(path))
    cfg = tmp_path / "plug.toml"
    cfg.write_text('sizes = "1KiB"\ntopology = "torus:8"\nalgorithm = ["hashplug", "ring"]\n')
    before = {c.algorithm_names()[0]: c.hash for c in load_sweep(cfg).configs}
    path.write_text(path.read_text().replace("np.ones(p)", "np.full(p, 2.0)"))
    after = {c.algorithm_names()[0]: c.hash for c in load_sweep(cfg).configs}
    assert after["hashplug"] != before["hashplug"] and after["ring"] == before["ring"]


def test_a_sweep_of_a_plugin_file_runs_in_worker_processes(fresh_plugins, tmp_path):
    """Worker processes started afresh (spawn, as on macOS and Windows; on
    Linux the pool forks, and a fork inherits the parent's registry) know the
    plug-in through FLOWEMU_PLUGINS alone: its schedules are built there (and
    in the sweep's own process, whose up-front check builds each once)."""
    path = plugin_file(tmp_path / "plugin dir" / "sweepplug_algs.py", "sweepplug")
    pids = tmp_path / "pids.txt"
    fresh_plugins.setenv("FLOWEMU_PLUGINS", str(path))
    fresh_plugins.setenv("PLUGIN_PIDS", str(pids))
    real_context = multiprocessing.get_context
    fresh_plugins.setattr(multiprocessing, "get_context",
                          lambda method=None: real_context("spawn"))
    cfg = tmp_path / "plug.toml"
    cfg.write_text('sizes = "1KiB,1MiB"\ntopology = ["torus:4x4", "torus:8"]\n'
                   'algorithm = ["sweepplug", "ring"]\n')
    summary = flowemu.study.sweep.sweep(cfg, tmp_path / "out", jobs=2, progress=False,
                                        chunk_size=1)
    assert not summary.errors and summary.computed == 4
    df = flowemu.load(tmp_path / "out")
    mine = df[df["algorithm"] == "sweepplug"]
    assert len(mine) == 4 and (mine["time_s"] > 0).all()
    built_in = {int(pid) for pid in pids.read_text().split()}
    assert built_in - {os.getpid()}


# ------------------------------------------------------------------ auto and sized plug-ins

def two_way_build(p, topology=None, blocks=False, way="naive"):
    """naive (to the root and back) or flowemu's ring, by option."""
    if way == "ring":
        return dataclasses.replace(get_algorithm("ring").build(p, topology, blocks),
                                   algorithm="two-way", variant="ring")
    return dataclasses.replace(naive_build(p, topology, blocks), algorithm="two-way",
                               variant="naive")


def by_size(p, topology, network, sizes, options, blocks=False):
    """naive below 64 KiB, ring from there."""
    sizes = np.asarray(sizes)
    small = np.flatnonzero(sizes < 65536)
    large = np.flatnonzero(sizes >= 65536)
    out = []
    if len(small):
        out.append((two_way_build(p, topology, blocks, "naive"), small))
    if len(large):
        out.append((two_way_build(p, topology, blocks, "ring"), large))
    return out


@pytest.fixture
def two_way():
    yield
    for name in ("two-way", "two-way-sized", "bad-sized"):
        if name in registry._PLUGINS:
            flowemu.unregister_algorithm(name)


def test_plugin_auto_param_takes_the_faster_per_size(two_way):
    flowemu.register_algorithm("two-way", two_way_build,
                               params=(Param("way", str, "naive", ("naive", "ring", "auto")),),
                               auto_param="way")
    sizes = "1KiB,16MiB"
    auto = flowemu.simulate("torus:8", "two-way:way=auto", sizes)
    each = {w: flowemu.simulate("torus:8", f"two-way:way={w}", sizes).time_s.to_numpy()
            for w in ("naive", "ring")}
    best = np.minimum(each["naive"], each["ring"])
    assert np.array_equal(auto.time_s.to_numpy(), best)
    assert auto.variant.tolist() == ["naive" if each["naive"][i] <= each["ring"][i] else "ring"
                                     for i in range(2)]
    assert auto.variant.tolist() == ["naive", "ring"]   # latency vs bandwidth at the two ends


def test_plugin_sized_hook_times_each_size_with_its_schedule(two_way, capsys):
    flowemu.register_algorithm("two-way-sized", two_way_build,
                               params=(Param("way", str, "naive", ("naive", "ring")),),
                               sized=by_size)
    sizes = "1KiB,4KiB,1MiB,16MiB"
    got = flowemu.simulate("torus:8", "two-way-sized", sizes)
    naive = flowemu.simulate("torus:8", "two-way-sized:way=naive", "1KiB,4KiB")
    assert got.variant.tolist() == ["naive", "naive", "ring", "ring"]
    assert np.array_equal(got.time_s.to_numpy()[:2], naive.time_s.to_numpy())
    ring = flowemu.simulate("torus:8", "ring", "1MiB,16MiB")
    assert np.array_equal(got.time_s.to_numpy()[2:], ring.time_s.to_numpy())
    code, out, _ = run(capsys, ["verify", "-a", "two-way-sized", "--ranks", "6", "--size",
                                "1MiB"])
    assert code == 0 and "variant ring" in out


def test_plugin_sized_hook_that_serves_a_size_twice_is_named(two_way):
    def twice(p, topology, network, sizes, options, blocks=False):
        return by_size(p, topology, network, sizes, options, blocks) \
            + [(two_way_build(p, topology, blocks), np.arange(len(sizes)))]
    flowemu.register_algorithm("bad-sized", two_way_build, sized=twice)
    with pytest.raises(ScheduleError, match=r"algorithm bad-sized \(plug-in\): its sized hook "
                                            "serves size index 0 \\(1024 bytes\\) 2 times"):
        flowemu.simulate("torus:8", "bad-sized", "1KiB,1MiB")


def test_plugin_auto_param_and_sized_checked(two_way):
    with pytest.raises(ConfigError, match="auto_param 'way' of 'two-way' must name an option "
                                          "whose choices include 'auto'"):
        flowemu.register_algorithm("two-way", two_way_build, params={"way": "naive"},
                                   auto_param="way")
    with pytest.raises(ConfigError, match="sized 3 of 'two-way' is not callable"):
        flowemu.register_algorithm("two-way", two_way_build, sized=3)


def test_plugin_sized_hook_wrong_return_and_both_hooks_named(two_way):
    def number(p, topology, network, sizes, options, blocks=False):
        return 42
    flowemu.register_algorithm("bad-sized", two_way_build, sized=number)
    with pytest.raises(ScheduleError, match=r"its sized hook returned 42; expected a list of "
                                            r"\(Schedule, size indices\) pairs"):
        flowemu.simulate("torus:8", "bad-sized", "1KiB")
    with pytest.raises(ConfigError, match="takes auto_param= or sized=, not both"):
        flowemu.register_algorithm("two-way", two_way_build,
                                   params=(Param("way", str, "naive", ("naive", "ring", "auto")),),
                                   auto_param="way", sized=by_size)


def _one_step(share, shift=1, steps=True):
    def build(p, topology=None, blocks=False):
        src = np.arange(p, dtype=np.int32)
        step = Step(Traffic(src, (src + shift) % p, np.full(p, share)), Reduction.none(), "s0")
        return Schedule("x", "", p, (step,) if steps else ())
    return build


@pytest.mark.parametrize("build, needle", [
    (_one_step(np.nan), "a flow whose share is nan (step 's0', flow 0); expected a finite"),
    (_one_step(-1.0), "a flow whose share is -1.0"),
    (_one_step(1.0, shift=0), "a flow from rank 0 to itself (step 's0', flow 0)"),
    (_one_step(1.0, steps=False), "a schedule with no steps"),
])
def test_a_plugins_flows_are_checked_as_a_users_traffic_is(build, needle):
    """A NaN share reached the solver ('flow_bytes[0] = nan is not finite'), a
    flow to itself was timed, a schedule of no steps gave a goodput of inf."""
    flowemu.register_algorithm("odd", build)
    try:
        with pytest.raises(ScheduleError, match=r"algorithm odd \(plug-in\): its builder "
                                                r"returned " + needle.replace("(", r"\(")
                                                .replace(")", r"\)")):
            flowemu.simulate("torus:4x4", "odd", "1KiB")
    finally:
        flowemu.unregister_algorithm("odd")
    with pytest.raises(ConfigError, match="replace 'yes' of 'odd' is not allowed"):
        flowemu.register_algorithm("odd", build, replace="yes")

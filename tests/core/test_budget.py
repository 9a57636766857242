"""Memory is estimated before it is allocated: limits, refusals, and
estimates checked against the measured peak memory of real runs."""

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu import ConfigError
from flowemu.cli.app import main
from flowemu.core import budget
from flowemu.kernels.maxmin import SCREEN_ENTRIES
from flowemu.topology import checks as topology_checks

ROOT = Path(__file__).resolve().parents[2]


def _refusal(call) -> str:
    with pytest.raises(ConfigError) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(("max_memory: ", "FLOWEMU_MAX_MEMORY: ")) and "(estimate)" in msg \
        and "limit" in msg
    assert "--max-memory" in msg
    return msg


# ------------------------------------------------------------------- limit

def test_limit_from_argument_env_and_default(monkeypatch):
    monkeypatch.delenv(budget.ENV_VAR, raising=False)
    assert budget.limit("8GiB") == budget.Limit(8 * 2**30, "max_memory")
    assert budget.limit(np.int64(1000)).bytes == 1000
    assert budget.limit(2**70).bytes == 2**70
    monkeypatch.setattr(budget, "available_memory", lambda: 1000)
    assert budget.limit(None) == budget.Limit(800, "80 % of available memory")
    monkeypatch.setenv(budget.ENV_VAR, "2MiB")
    assert budget.limit(None) == budget.Limit(2 * 2**20, budget.ENV_VAR)
    assert budget.limit("1KiB").bytes == 1024          # the argument wins over the env
    monkeypatch.setenv(budget.ENV_VAR, "lots")
    with pytest.raises(ConfigError, match=budget.ENV_VAR):
        budget.limit(None)


@pytest.mark.parametrize("bad", ["lots", "80%", -1, 0, 1.5, True, [1], None.__class__])
def test_bad_limits(bad):
    with pytest.raises(ConfigError, match="max_memory"):
        budget.limit(bad)


def test_available_memory_is_at_most_memavailable():
    text = Path("/proc/meminfo").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("MemAvailable:"))
    mem_available = int(line.split()[1]) * 1024
    # the two reads are moments apart: allow a little drift
    assert 0 < budget.available_memory() <= mem_available * 1.05


def test_cgroup_room(tmp_path):
    limit_file, usage_file = tmp_path / "max", tmp_path / "current"
    files = ((str(limit_file), str(usage_file)),)
    assert budget._cgroup_room(files) is None              # no cgroup files
    limit_file.write_text("max\n")
    assert budget._cgroup_room(files) is None              # v2: unlimited
    limit_file.write_text("9223372036854771712\n")
    assert budget._cgroup_room(files) is None              # v1: unlimited
    limit_file.write_text("1000\n")
    usage_file.write_text("400\n")
    assert budget._cgroup_room(files) == 600


# --------------------------------------------------------------- refusals

def test_topology_estimate_closed_form_and_stage_order():
    # torus:8x8: 64 nodes x 4 links x 32 B + 64 nodes x 2 dims x 8 B = 9216 B
    assert budget.topology_bytes((8, 8)) == 64 * 4 * 32 + 64 * 2 * 8 == 9216
    msg = _refusal(lambda: flowemu.simulate("torus:8x8", "ring", "1MiB", max_memory=9215))
    assert "topology torus:8x8 needs ~9.0 KiB" in msg and "9.0 KiB limit (9,215 bytes, max_memory)" in msg
    # the topology fits; the run (schedule and solve) does not
    msg = _refusal(lambda: flowemu.simulate("torus:8x8", "ring", "1MiB", max_memory=9216))
    assert "torus:8x8 ring needs" in msg


@pytest.mark.parametrize("call", [
    lambda: flowemu.simulate("torus:8x8", "swing", "1MiB", max_memory="64KiB"),
    lambda: flowemu.congestion("torus:8x8", "swing", max_memory="64KiB"),
    lambda: flowemu.flows("torus:8x8", "swing", max_memory="64KiB"),
    lambda: flowemu.time_traffic("torus:8x8", pd.DataFrame(
        {"step": 0, "src": np.arange(64), "dst": (np.arange(64) + 9) % 64, "bytes": 1e6}),
        max_memory="16KiB"),
])
def test_tiny_limit_refuses(call):
    _refusal(call)


def test_tiny_limit_from_env(monkeypatch):
    monkeypatch.setenv(budget.ENV_VAR, "64KiB")
    said = _refusal(lambda: flowemu.simulate("torus:8x8", "swing", "1MiB"))
    # the refusal starts with what set the limit (it read max_memory:, which the
    # command line turned into --max-memory, an option never given)
    assert said.startswith("FLOWEMU_MAX_MEMORY: ") and "(FLOWEMU_MAX_MEMORY)" in said
    monkeypatch.setenv(budget.ENV_VAR, "1GiB")
    assert len(flowemu.simulate("torus:8x8", "swing", "1MiB")) == 1


@pytest.mark.parametrize("spec", ["torus:8x8", "torus:7x4", "mesh:5x3", "torus:2x2x3", "torus:9"])
@pytest.mark.parametrize("ecmp", ["split", "dor"])
def test_max_route_entries_bounds_every_flow(spec, ecmp):
    topo = flowemu.topology.parse_topology(spec)
    nodes = np.arange(topo.num_nodes)
    src, dst = np.repeat(nodes, topo.num_nodes), np.tile(nodes, topo.num_nodes)
    counts = np.diff(topo.route(src, dst, ecmp=ecmp).flow_ptr)
    assert counts.max() == topo.max_route_entries(ecmp)   # the bound is reached


def test_route_entries_are_counted_exactly_before_routing():
    # split routing of 0 -> (2, 2) on torus:8x8 uses every link of the 3x3
    # grid of minimal paths: 2 dims x 2 steps x 3 = 12 links; dor uses 4
    topo = flowemu.topology.parse_topology("torus:8x8")
    src, dst = np.array([0]), np.array([18])
    assert topo.route_entries(src, dst, "split") == 12 == topo.route(src, dst).num_entries
    assert topo.route_entries(src, dst, "dor") == 4
    # the split run's estimate grows with its entries: a limit between the
    # dor and split estimates refuses only split
    from flowemu.algorithms import get_algorithm
    from flowemu.core.network import Network
    from flowemu.engine.profiles import check_memory, make_context
    # (ranks placed at random: the steps have no translation symmetry, so
    # every flow is routed and solved)
    sched = get_algorithm("recdoub").build(64, topo, False, variant="latency")
    mapping = np.random.default_rng(7).permutation(64).astype(np.int32)
    need = {e: check_memory(make_context(topo, Network(), e, 0, mapping, 64), sched, 1,
                            budget.Limit(2**62, "test"), exact=True) for e in ("dor", "split")}
    assert need["split"] > need["dor"]
    lim = (need["split"] + need["dor"]) // 2
    flowemu.simulate(topo, "recdoub:variant=latency", "1MiB", ecmp="dor", max_memory=lim,
                     threads=1, placement="random:7")
    _refusal(lambda: flowemu.simulate(topo, "recdoub:variant=latency", "1MiB", ecmp="split",
                                      max_memory=lim, threads=1, placement="random:7"))
    # placed in order, its steps are solved on one flow per orbit of their
    # translations: when the worst case does not fit, the estimate counts
    # those routes, and the run fits
    linear = check_memory(make_context(topo, Network(), "split", 0, None, 64), sched, 1,
                          budget.Limit(lim, "test"), reduced=True)
    assert linear < lim
    flowemu.simulate(topo, "recdoub:variant=latency", "1MiB", ecmp="split", max_memory=lim,
                     threads=1)


HUGE = [("torus:4096x4096", "swing"), ("torus:4096x4096", "ring"),
        ("torus:100000x100000", "ring"), ("torus:" + "x".join(["2"] * 24), "recdoub")]


@pytest.mark.parametrize("spec,alg", HUGE, ids=[s[:20] for s, _ in HUGE])
def test_huge_runs_are_refused_fast_with_the_default_limit(spec, alg, monkeypatch):
    monkeypatch.delenv(budget.ENV_VAR, raising=False)
    monkeypatch.setattr(budget, "available_memory", lambda: 16 * 2**30)
    start = time.monotonic()
    msg = _refusal(lambda: flowemu.simulate(spec, alg, "1MiB"))
    assert time.monotonic() - start < 2.0   # nothing was allocated
    assert "80 % of available memory" in msg and "13 GiB limit" in msg


def test_a_torus_with_sub_blocks_is_checked_before_it_is_built(monkeypatch):
    """``groups=`` changes neither the shape nor the routes: the schedule's
    memory is refused before the torus is built, as without it."""
    assert budget.spec_dims("torus:16x8,groups=4x4") == (16, 8)
    assert budget.spec_dims("mesh:6x6, groups=3x3") == (6, 6)

    def built(spec):
        raise AssertionError(f"{spec} was built before the memory check")

    monkeypatch.setattr(topology_checks, "topology", built)
    msgs = [_refusal(lambda spec=spec: flowemu.simulate(spec, "linear", "1MiB",
                                                        collective="alltoall",
                                                        max_memory="8GiB"))
            for spec in ("torus:2048x2048", "torus:2048x2048,groups=2x2")]
    assert msgs[1] == msgs[0].replace("torus:2048x2048", "torus:2048x2048,groups=2x2")


def test_huge_run_through_the_cli_in_a_subprocess():
    # the peak is VmHWM, this process image's own: ru_maxrss would carry over
    # the RSS of the (forked) test process at exec
    code = textwrap.dedent("""
        from flowemu.cli.app import main
        rc = main(["run", "-t", "torus:4096x4096", "-a", "swing", "-s", "1MiB"])
        with open("/proc/self/status") as fh:
            peak = next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("VmHWM:"))
        print(rc, peak)
    """)
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "FLOWEMU_MAX_MEMORY": "16GiB"},
                         timeout=120)
    rc, peak = out.stdout.split()
    assert rc == "2"
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert lines[0].startswith("flowemu: error: FLOWEMU_MAX_MEMORY: torus:4096x4096 swing needs ~")
    assert "16 GiB limit (FLOWEMU_MAX_MEMORY)" in lines[0]
    assert int(peak) < 1 << 30   # the interpreter and libraries, no topology or schedule


def test_cli_max_memory_option(capsys):
    rc = main(["run", "-t", "torus:8x8", "-a", "swing", "-s", "1MiB", "--max-memory", "64KiB"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "64 KiB limit (--max-memory)" in err
    rc = main(["run", "-t", "torus:8x8", "-a", "swing", "-s", "1MiB", "--max-memory", "lots"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("flowemu: error: --max-memory: cannot read 'lots'")


def test_traffic_file_estimated_from_its_size(tmp_path):
    # 1000 rows of 13 bytes ("0,100,200,10\n") after a 19-byte header
    path = tmp_path / "t.csv"
    path.write_text("step,src,dst,bytes\n" + "0,100,200,10\n" * 1000)
    rows_est = budget.traffic_file_bytes(path, False) - path.stat().st_size
    assert rows_est == pytest.approx(1000 * budget.TRAFFIC_ROW_BYTES, rel=0.02)
    _refusal(lambda: flowemu.read_traffic(path, max_memory="100KiB"))


def test_billion_row_traffic_file_is_refused_before_reading(tmp_path):
    # a sparse 20 GB file: a few real lines, then a hole (no disk used)
    path = tmp_path / "huge.csv"
    with open(path, "wb") as fh:
        fh.write(b"step,src,dst,bytes\n" + b"0,1,2,10\n" * 1000)
        fh.truncate(20 * 10**9)
    start = time.monotonic()
    msg = _refusal(lambda: flowemu.time_traffic("torus:8x8", path, max_memory="16GiB"))
    assert "reading traffic file huge.csv" in msg
    assert time.monotonic() - start < 2.0


def test_flow_dump_refused_through_the_cli(tmp_path, capsys):
    out = tmp_path / "f.csv"
    rc = main(["run", "-t", "torus:8x8", "-a", "swing", "-s", "1MiB", "--flows-out", str(out),
               "--max-memory", "600KiB"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "the flow dump of torus:8x8 swing" in err and "route entries" in err
    assert not out.exists()


# ------------------------------------------- estimates against measured peaks

MEASURE = textwrap.dedent("""
    import json, sys
    import flowemu
    from flowemu.core import budget
    from flowemu.algorithms import get_algorithm
    from flowemu.api.run import expand_algorithm
    from flowemu.engine.profiles import check_memory, make_context, profile
    from flowemu.core.network import Network
    from flowemu.topology import parse_topology

    spec, alg, ecmp, what = sys.argv[1:5]
    name, cands = expand_algorithm(alg)
    # load the kernels and warm the allocator on a tiny instance first
    tiny = parse_topology("torus:4x4")
    profile(name.build(16, tiny, False, **cands[0]), tiny, ecmp=ecmp, threads=1)
    flowemu.flows(tiny, alg, ecmp=ecmp, progress=False)
    def status(key):
        with open("/proc/self/status") as fh:
            line = next(ln for ln in fh if ln.startswith(key + ":"))
        return int(line.split()[1]) * 1024

    def reset_peak():
        # "5" resets the peak RSS (VmHWM), so compiling or warming up above
        # does not hide the run's own peak
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return status("VmRSS")

    rss = lambda: status("VmHWM")
    if what == "run":
        base = reset_peak()
        topo = parse_topology(spec)
        sched = name.build(topo.num_endpoints, topo, False, **cands[0])
        ctx = make_context(topo, Network(), ecmp, 0, None, sched.p)
        # as profile() estimates it (steps with a symmetry solved on one flow
        # per orbit), the other steps' entries counted exactly
        est = check_memory(ctx, sched, 1, budget.Limit(2**62, "test"), exact=True, reduced=True)
        profile(sched, topo, ecmp=ecmp, threads=1)
    elif what == "simulate":
        # every candidate of an `auto` option, one after the other: the
        # largest estimate of them against the whole call's peak
        import flowemu.engine.profiles as engine_profiles
        seen = []
        real = engine_profiles.check_memory
        def spy(*args, **kwargs):
            seen.append(real(*args, **kwargs))
            return seen[-1]
        engine_profiles.check_memory = spy
        base = reset_peak()
        flowemu.simulate(spec, alg, "1MiB", ecmp=ecmp, threads=1)
        est = max(seen)
    else:
        seen = {}
        real = budget.flow_dump_bytes
        def spy(*args):
            seen["est"] = real(*args)
            return seen["est"]
        budget.flow_dump_bytes = spy
        base = reset_peak()
        flowemu.flows(spec, alg, ecmp=ecmp, progress=False, threads=1)
        est = seen["est"]
    print(json.dumps({"est": est, "peak": rss() - base}))
""")


@pytest.mark.parametrize("spec,alg,ecmp,what", [
    ("torus:128x128", "swing", "split", "run"),
    ("torus:256x256", "ring", "dor", "run"),
    ("torus:64x64", "recdoub:variant=latency", "split", "dump"),
    # a HyperX's links grow with the square of its nodes: building it is most
    # of the run (charged as a torus of its shape before, a thousandth of it)
    ("hyperx:120x120", "ring", "split", "run"),
    # variant=auto builds two schedules: each freed before the next is built
    ("torus:512x512", "swing", "split", "simulate"),
])
def test_estimate_within_2x_of_measured_peak(spec, alg, ecmp, what):
    out = subprocess.run([sys.executable, "-c", MEASURE, spec, alg, ecmp, what], check=False,
                         capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={"PYTHONPATH": str(ROOT), "FLOWEMU_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    ratio = got["est"] / got["peak"]
    # never below what was really used (a little noise allowed), never 2x above
    assert 0.9 <= ratio <= 2.0, got


def test_incremental_entry_cost_follows_the_solvers_choice():
    """The budget's bound for the incremental solver's per-entry cost is the
    solver's own (a copy: core may not import the kernels)."""
    assert budget.INCREMENTAL_ENTRIES == SCREEN_ENTRIES
    n = budget.INCREMENTAL_ENTRIES
    assert budget.solve_bytes(10, 10 * n) == 10 * budget.SOLVE_FLOW_BYTES \
        + 10 * n * budget.SOLVE_ENTRY_BYTES_INCREMENTAL
    assert budget.solve_bytes(10, 10 * n + 1) == 10 * budget.SOLVE_FLOW_BYTES \
        + (10 * n + 1) * budget.SOLVE_ENTRY_BYTES
    # a step without events (flows of one size, no background): no incremental state
    assert budget.solve_bytes(10, 10 * n, events=False) == 10 * budget.SOLVE_FLOW_BYTES_STATIC \
        + 10 * n * budget.SOLVE_ENTRY_BYTES


def test_steps_of_one_size_are_charged_without_event_state():
    """A step whose flows all carry the same bytes ends at its t = 0 solve
    (flowemu.kernels.completion.finish_in_rate_order) unless a background
    joins it; check_memory charges it so."""
    from flowemu.algorithms.base import Traffic
    from flowemu.engine.memory import one_size
    src = np.arange(8)
    assert one_size(Traffic(src, (src + 1) % 8, np.full(8, 0.25)))
    assert not one_size(Traffic(src, (src + 1) % 8, np.linspace(0.1, 0.8, 8)))


BUILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from flowemu.core import budget
    from flowemu.topology import parse_topology

    def status(key):
        with open("/proc/self/status") as fh:
            line = next(ln for ln in fh if ln.startswith(key + ":"))
        return int(line.split()[1]) * 1024

    spec, tiny = sys.argv[1:3]
    parse_topology(tiny)                      # the family's kernels, compiled or loaded
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")                         # reset the peak (VmHWM)
    base = status("VmRSS")
    topo = parse_topology(spec)
    held = sum(v.nbytes for v in vars(topo).values() if isinstance(v, np.ndarray))
    print(json.dumps({"peak": status("VmHWM") - base, "held": held,
                      "reserve": budget.topology_build_bytes(topo),
                      "held_estimate": budget.built_topology_bytes(topo)}))
""")


@pytest.mark.parametrize("spec,tiny", [
    ("torus:512x512", "torus:4x4"), ("fattree:k=96", "fattree:k=4"),
    ("leafspine:2048x256x32", "leafspine:4x4x2"), ("tree:2048x256", "tree:4x4"),
    ("hyperx:100x100", "hyperx:4x4"), ("hyperx:20x20x20", "hyperx:4x4x4"),
    ("hammingmesh:4x4,128x128", "hammingmesh:2x2,2x2"),
    ("dragonfly:a=24,p=12,h=12", "dragonfly:a=2,p=2,h=1"),
])
def test_each_family_builds_within_what_it_reserves(spec, tiny):
    """Every family's constructor reserves (before it allocates) at least the
    peak its building reaches, and the run's estimate charges at least the
    arrays it then holds: ~1M links each (issue 26: a HyperX was charged as a
    torus, a tree and a HammingMesh at a third of their peak)."""
    out = subprocess.run([sys.executable, "-c", BUILD, spec, tiny], check=False,
                         capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={"PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["peak"] <= got["reserve"] <= 2.5 * got["peak"], got
    assert got["held"] <= got["held_estimate"], got


def _graph_file(path: Path, hosts: int) -> Path:
    """Hosts on switches of 16, the switches in a ring (4 parallel links
    each way): a graph file of ~1.25 links a host."""
    switches = hosts // 16
    nodes = [{"id": f"h{i}", "endpoint": True} for i in range(hosts)]
    nodes += [{"id": f"s{i}"} for i in range(switches)]
    links = [{"src": f"h{i}", "dst": f"s{i // 16}"} for i in range(hosts)]
    links += [{"src": f"s{i}", "dst": f"s{(i + 1) % switches}", "bandwidth": "400Gb/s"}
              for i in range(switches)] * 4
    path.write_text(json.dumps({"nodes": nodes, "links": links}))
    return path


def test_a_graph_file_is_read_within_what_is_reserved_for_it(tmp_path):
    """Parsed, a graph file takes ~13x its size (JSON; ~16x TOML): that is
    reserved from its size before it is read (it was not: 217 MiB of peak
    for 18 MiB reserved on a 17 MiB file)."""
    path = _graph_file(tmp_path / "g.json", 50_000)
    out = subprocess.run([sys.executable, "-c", BUILD, f"graph:{path}",
                          "graph:configs/graphs/two-sites.toml"], check=False,
                         capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={"PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    reserved = path.stat().st_size * budget.GRAPH_FILE_FACTOR
    assert got["peak"] <= reserved <= 3 * got["peak"], (got, reserved)
    assert got["held"] <= got["held_estimate"], got


def test_a_graph_file_too_big_to_parse_is_refused_before_reading(tmp_path):
    path = _graph_file(tmp_path / "g.json", 20_000)
    with pytest.raises(ConfigError) as info:
        flowemu.simulate(f"graph:{path}", "ring", "1MiB", max_memory="4MiB")
    msg = str(info.value)
    assert f"max_memory: reading graph file {str(path)!r} needs" in msg
    assert "(estimate), more than the 4.0 MiB limit" in msg and "--max-memory" in msg


def test_a_refusal_says_how_to_raise_the_limit_it_came_from(monkeypatch):
    """The hint names the option or variable the limit came from (a run
    given --max-memory was told to 'use --max-memory' again); a sweep
    worker's share: tests/study/test_sweep_misfits.py."""
    def said(lim):
        with pytest.raises(ConfigError) as got:
            budget.check(2 * lim.bytes, lim, "x")
        return str(got.value).split("; ", 1)[1]

    assert said(budget.Limit(10, "--max-memory")) == "give a larger --max-memory"
    assert said(budget.limit(10)) == "give a larger max_memory= (--max-memory)"
    monkeypatch.setenv(budget.ENV_VAR, "1KiB")
    assert said(budget.limit()) == ("give a larger FLOWEMU_MAX_MEMORY, or --max-memory "
                                    "(max_memory=)")
    monkeypatch.delenv(budget.ENV_VAR)
    assert said(budget.limit()) == ("use --max-memory (max_memory=, FLOWEMU_MAX_MEMORY) to "
                                    "override")


def test_a_need_and_a_limit_that_print_alike_are_told_apart_by_their_bytes():
    """'needs ~2.0 GiB (estimate), more than the 2.0 GiB limit' read as no
    excess; both figures then carry their bytes."""
    with pytest.raises(ConfigError) as got:
        budget.check(2**31 + 5000, budget.Limit(2**31, "--max-memory"), "x")
    assert ("needs ~2.0 GiB (2,147,488,648 bytes) (estimate), more than the 2.0 GiB limit "
            "(2,147,483,648 bytes, --max-memory)") in str(got.value)
    with pytest.raises(ConfigError) as got:
        budget.check(2**32, budget.Limit(2**31, "--max-memory"), "x")
    assert "bytes" not in str(got.value)

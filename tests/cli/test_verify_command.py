"""``flowemu verify`` and ``flowemu.verify``: what the block-level verifier
proved for the built-in algorithms (checked against closed forms), every
choice of an ``auto`` option, gentree's plan for a size, and bad arguments as
one line with exit 2. Broken (plug-in) schedules and exit 1: algorithms/test_plugins.py."""

from __future__ import annotations

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.core.network import Network
from flowemu.topology import parse_topology
from tests.helpers.cli import one_error_line, run


def proofs(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("verified ")]


@pytest.mark.parametrize("p", range(2, 10))
def test_ring_every_p_closed_forms(p, capsys):
    ver = flowemu.verify("ring:ports=1", p)
    (v,) = ver.variants
    rep = v.report
    # ring (ports=1): p blocks, p − 1 reduce-scatter and p − 1 allgather steps;
    # every rank sends and receives 2(p − 1)/p of n and reduces (p − 1)/p
    assert (rep.num_blocks, rep.num_steps) == (p, 2 * (p - 1))
    np.testing.assert_allclose(rep.sent, 2 * (p - 1) / p, rtol=1e-12)
    np.testing.assert_allclose(rep.received, 2 * (p - 1) / p, rtol=1e-12)
    np.testing.assert_allclose(rep.reduced, (p - 1) / p, rtol=1e-12)
    code, out, err = run(capsys, ["verify", "-a", "ring:ports=1", "--ranks", str(p)])
    assert code == 0 and err == ""
    assert out.rstrip("\n") == ver.text()
    assert proofs(out) == [(f"verified ring:ports=1 on {p} ranks (rank ids, no topology): "
                           "variant ports=1")]   # (options as the variant says them: once)
    assert f"proved: {2 * (p - 1)} steps, {p} blocks" in out


def test_auto_verifies_every_choice(capsys):
    code, out, err = run(capsys, ["verify", "-a", "recdoub", "--ranks", "8"])
    assert code == 0 and err == ""
    heads = proofs(out)
    assert len(heads) == 2 and all("[variant=auto: every choice is verified]" in h
                                   for h in heads)
    assert [h.split("variant ")[1].split(" ")[0] for h in heads] == ["latency", "bandwidth"]
    ver = flowemu.verify("recdoub:variant=auto", 8)
    lat, bw = (v.report for v in ver.variants)
    # latency: log2 p steps of the whole vector; bandwidth: halving then doubling,
    # 2(p − 1)/p of n on the critical path
    assert (lat.num_steps, lat.sent_path) == (3, 3.0)
    assert bw.num_steps == 6 and bw.sent_path == pytest.approx(2 * 7 / 8, rel=1e-12)
    assert "critical path (Σ over steps of the busiest rank): sent 1.75·n" in out


@pytest.mark.parametrize("algorithm, topology", [
    ("swing", "torus:4x4"), ("bucket", "torus:4x4"), ("ring", "mesh:3x3"),
    ("cps", "tree:6"), ("hcps", "tree:6"), ("acps", "tree:6"),
    ("reduce-broadcast", "tree:6"), ("recdoub", "leafspine:4x2x2"),
])
def test_every_builtin_on_a_topology(algorithm, topology, capsys):
    nodes = parse_topology(topology).num_endpoints
    code, out, err = run(capsys, ["verify", "-a", algorithm, "-t", topology])
    assert code == 0 and err == "", err
    heads = proofs(out)
    spec = get_algorithm(algorithm)
    assert len(heads) == max(1, len(spec.auto_choices()))
    assert all(h.startswith(f"verified {algorithm} on {nodes} ranks on {topology}")
               for h in heads)
    for v in flowemu.verify(algorithm, topology=topology).variants:
        # an allreduce moves at least (p − 1)/p of n into and out of every rank
        assert v.report.sent.min() >= (nodes - 1) / nodes - 1e-12
        assert v.report.received.min() >= (nodes - 1) / nodes - 1e-12


def test_gentree_verifies_the_plan_for_the_size(capsys):
    p, topo = 24, parse_topology("tree:SS24")
    sized = get_algorithm("gentree").sized
    opts = get_algorithm("gentree").parse_options({})
    for size, argv in ((256 * 2**20, []), (1024, ["--size", "1KiB"])):
        (sched, _), = sized(p, topo, Network(), np.array([float(size)]), opts, blocks=True)
        code, out, err = run(capsys, ["verify", "-a", "gentree", "-t", "tree:SS24", *argv])
        assert code == 0 and err == ""
        assert proofs(out) == [(f"verified gentree on {p} ranks on tree:SS24: variant "
                               f"{sched.variant} (at=auto,flat=auto,rearrange=auto)")]
        assert f"vector size n = {size} bytes" in out


def test_one_step_over_the_cut_is_shown_not_hidden(capsys):
    """dualroot with 8 blocks on 100 ranks has 41 steps, one over the 40 a
    table shows: the line that would hide it is as long as the step, so all
    41 are listed."""
    code, out, _ = run(capsys, ["verify", "-a", "dualroot:blocks=8", "--ranks", "100"])
    table = [line for line in out.splitlines() if line[:7].strip().isdigit()]
    assert code == 0 and len(table) == 41 and "not shown" not in out


def test_size_reports_bytes_and_long_schedules_are_cut(capsys):
    code, out, _ = run(capsys, ["verify", "-a", "ring:ports=1", "--ranks", "30",
                                "--size", "1MiB"])
    assert code == 0 and "vector size n = 1048576 bytes" in out
    # sent per rank: 2·29/30 of n, in bytes too
    assert f"    sent      {2 * 29 / 30:.4g} / " in out and f"({2 * 29 / 30 * 2**20:.4g} / " in out
    table = [line for line in out.splitlines() if line[:7].strip().isdigit()]
    assert len(table) == 40 and "… (18 steps not shown; --all-steps lists them)" in out
    code, out, _ = run(capsys, ["verify", "-a", "ring:ports=1", "--ranks", "30",
                                "--all-steps"])
    table = [line for line in out.splitlines() if line[:7].strip().isdigit()]
    assert [int(line.split()[0]) for line in table] == list(range(58)) and "…" not in out


@pytest.mark.parametrize("argv, needle", [
    (["-a", "ring"], ("--ranks: needed without a topology (the number of ranks to verify on), "
                      "e.g. --ranks 8")),
    (["-a", "ring", "--ranks", "1"], "--ranks: 1 is not allowed; expected an integer >= 2"),
    (["-a", "ring", "--ranks", "x"], "--ranks: 'x' is not allowed; expected a whole number"),
    (["-a", "ring", "--ranks", "2", "--ranks", "3"], "--ranks: given twice"),
    (["-a", "nope", "--ranks", "4"], "error: --algorithm: unknown name 'nope'"),
    (["-a", "ring:hops=2", "--ranks", "4"], "unknown option(s) hops"),
    (["-a", "ring", "--ranks", "4", "--size", "12 parsecs"], "--size"),
    (["-a", "ring", "--ranks", "4", "--size", "1KiB,2KiB"], ("--size: '1KiB,2KiB' gives 2 "
                                                            "sizes; verify takes one")),
    (["-a", "gentree", "--ranks", "4"], ("algorithm gentree: its schedule depends on the "
                                        "topology (it runs on tree, leafspine, fattree "
                                        "topologies); give one with --topology")),
    (["-a", "gentree", "-t", "torus:4x4"], "not on topology torus:4x4"),
    (["-a", "ring", "-t", "torus:4x4", "--ranks", "17"], "error: --ranks: 17 ranks do not fit"),
    (["-a", "ring", "-t", "torus:1x4"], "error: --topology 'torus:1x4'"),
    (["-a", "ring", "--ranks", "4", "--max-memory", "lots"], "--max-memory"),
    (["--ranks", "4"], "required: --algorithm"),
    # the state is p·blocks·p int16 counts: ring has p blocks, 2·100³ bytes > 1 MiB
    (["-a", "ring", "--ranks", "100", "--max-memory", "1MiB"],
     ("verifying ring on 100 ranks (a state of p·blocks·p = 100·100·100 counts at least) "
     "needs ~1.9 MiB (estimate), more than the 1.0 MiB limit (--max-memory); give a larger "
     "--max-memory")),
    # one block, but 599 block entries a step gathering 600 counts each: after the build
    (["-a", "reduce-broadcast", "--ranks", "600", "--max-memory", "2MiB"],
     "(a state of p·blocks·p = 600·1·600 counts and 599 block entries in a step)"),
])
def test_bad_arguments_one_line_exit_2(argv, needle, capsys):
    code, out, err = run(capsys, ["verify", *argv])
    assert code == 2 and out == ""
    assert needle in one_error_line(err)


def test_api_arguments():
    ver = flowemu.verify("cps", topology="tree:5")
    assert (ver.p, ver.topology, ver.size, ver.auto) == (5, "tree:5", None, None)
    with pytest.raises(flowemu.ConfigError, match="network: algorithm ring does not plan"):
        flowemu.verify("ring", 4, network=Network())
    with pytest.raises(flowemu.ConfigError, match="max_memory"):
        flowemu.verify("ring", 100, max_memory="1MiB")


def test_every_schedule_is_refused_before_any_is_built(capsys, monkeypatch):
    """recdoub:variant=auto on 4096 ranks: the latency variant (1 block) would
    fit, the bandwidth one (4096 blocks) not; nothing is built or printed."""
    import dataclasses

    from flowemu.algorithms import registry
    built = []
    spec = get_algorithm("recdoub")

    def recording(*args, **kwargs):
        built.append(kwargs)
        return spec.build(*args, **kwargs)
    monkeypatch.setitem(registry._REGISTRY, "recdoub", dataclasses.replace(spec, build=recording))
    code, out, err = run(capsys, ["verify", "-a", "recdoub", "--ranks", "4096",
                                  "--max-memory", "8GiB"])
    assert code == 2 and out == "" and built == []
    assert run(capsys, ["verify", "-a", "recdoub", "--ranks", "8"])[0] == 0
    assert [k["variant"] for k in built] == ["latency", "bandwidth"]   # the recorder works
    code, out, err = run(capsys, ["verify", "-a", "recdoub", "--ranks", "4096",
                                  "--max-memory", "8GiB"])
    assert "verifying recdoub on 4096 ranks (a state of p·blocks·p = 4096·4096·4096 counts " \
           "at least) needs ~128 GiB" in one_error_line(err)


@pytest.mark.parametrize("algorithm", ["ring", "bucket", "cps", "acps", "hcps", "recdoub",
                                       "swing", "reduce-broadcast"])
def test_block_lower_bounds_hold(algorithm):
    """The pre-build estimate never exceeds the blocks the builder makes (it
    would refuse a run that fits)."""
    from flowemu.api.verification import min_blocks
    spec = get_algorithm(algorithm)
    choices = [{spec.auto_param: c} for c in spec.auto_choices()] if spec.auto_param else [{}]
    for topo in (None, parse_topology("torus:4x6"), parse_topology("mesh:3x3")):
        for p in range(2, 25 if topo is None else topo.num_endpoints + 1):
            for choice in choices:
                opts = spec.parse_options(choice)
                sched = spec.build(p, topo, True, **opts)
                assert sched.num_blocks >= min_blocks(algorithm, opts, p), (p, opts)


def test_gentree_plans_for_the_network_preset(capsys):
    from flowemu.core.presets import preset_network
    topo, net = parse_topology("tree:SS24"), preset_network("genmodel-table5", {})
    spec = get_algorithm("gentree")
    (sched, _), = spec.sized(24, topo, net, np.array([40e6]), spec.parse_options({}),
                             blocks=True)
    code, out, err = run(capsys, ["verify", "-a", "gentree", "-t", "tree:SS24", "--size",
                                  "40MB", "--network", "genmodel-table5"])
    assert code == 0 and err == "" and f"variant {sched.variant} (" in proofs(out)[0]
    code, out, _ = run(capsys, ["verify", "-a", "gentree", "-t", "tree:SS24", "--size",
                                "40MB"])
    assert code == 0 and f"variant {sched.variant} (" not in proofs(out)[0]   # plan differs
    for argv, needle in ((["-a", "ring", "--ranks", "4", "--network", "genmodel-table5"],
                          "--network: algorithm ring does not plan for a network"),
                         (["-a", "gentree", "-t", "tree:SS24", "--network", "nowhere"],
                          "--network: 'nowhere' is neither a built-in preset")):
        code, out, err = run(capsys, ["verify", *argv])
        assert code == 2 and out == "" and needle in one_error_line(err)


@pytest.mark.parametrize("algorithm, options", [
    ("binomial", {"segments": 3}), ("dbtree", {"segments": 4}), ("dualroot", {"blocks": 5})])
def test_block_lower_bounds_of_pipelined_algorithms(algorithm, options):
    from flowemu.api.verification import min_blocks
    spec = get_algorithm(algorithm)
    opts = spec.parse_options(options)
    for p in range(2, 20):
        sched = spec.build(p, None, True, **opts)
        assert sched.num_blocks >= min_blocks(algorithm, opts, p) > 1, (p, opts)


def test_butterfly_two_buffer_form_verified(capsys):
    """p = 100, r = 2: q* and q′ of one part kept at once (two buffers)."""
    code, out, err = run(capsys, ["verify", "-a", "butterfly:r=2", "--ranks", "100"])
    assert code == 0 and err == ""
    assert "proved: 12 steps, 100 blocks (2 buffers each)" in out


def test_a_plan_made_per_size_says_so(capsys):
    """butterfly's r=auto picks r per size, and verify proves the plan for
    --size only: the report said "variant bandwidth (at=auto,r=auto)" as if
    every r were proved. A fixed variant option's auto says every choice."""
    code, out, _ = run(capsys, ["verify", "-a", "butterfly", "--ranks", "12"])
    assert code == 0
    assert ("  vector size n = 268435456 bytes: the plan made for this size (an algorithm "
            "that plans per size; another size's plan may differ)") in out.splitlines()
    code, out, _ = run(capsys, ["verify", "-a", "recdoub", "--ranks", "8", "--size", "1MiB"])
    assert code == 0 and "  vector size n = 1048576 bytes" in out.splitlines()
    assert "[variant=auto: every choice is verified]" in out and "plans per size" not in out

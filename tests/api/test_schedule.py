"""flowemu.schedule: the Schedule of a named algorithm, the one simulate times."""

import numpy as np
import pytest

import flowemu
from flowemu.core.errors import ConfigError

SIZES = [1024, 2**20, 64 * 2**20]


@pytest.mark.parametrize("algorithm, options", [
    ("ring", {}), ("swing:variant=bandwidth", {}), ("ring", {"ports": 2}),
    ("recdoub", {"variant": "latency"}),
])
def test_profile_of_schedule_gives_simulate_times(algorithm, options):
    sched = flowemu.schedule(algorithm, "torus:4x4", **options)
    times = flowemu.profile(sched, "torus:4x4").times(SIZES)
    spec = algorithm + "".join(f"{':' if ':' not in algorithm else ','}{k}={v}"
                               for k, v in options.items())
    expected = flowemu.simulate("torus:4x4", spec, SIZES)["time_s"].to_numpy()
    np.testing.assert_allclose(times, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("collective, algorithm, n_over_b", [
    # one switch of 8 hosts, bandwidth only: closed forms
    ("allgather", "ring:ports=1", 7 / 8),        # (p-1)/p n/B
    ("reduce-scatter", "ring:ports=1", 7 / 8),
    ("broadcast", "binomial", 3.0),               # log2(p) rounds of n
    ("alltoall", "pairwise", 7 / 8),              # p-1 rounds of n/p
])
def test_schedule_of_another_collective(collective, algorithm, n_over_b):
    """``collective=`` gives that collective's schedule (there was no way to
    get one: the error even hinted at a ``collective=`` it did not take);
    profiled, it gives the collective's closed-form time."""
    net = {"bandwidth": "8Gb/s", "link_latency": "0s", "hop_latency": "0s"}
    sched = flowemu.schedule(algorithm, "tree:8", collective=collective)
    assert sched.collective == collective.replace("-", "_")
    n = 8e6
    time = flowemu.profile(sched, "tree:8", **net).times([n])[0]
    assert time == pytest.approx(n_over_b * n / 1e9, rel=1e-12)


def test_schedule_collective_refusals():
    with pytest.raises(ConfigError, match="collective: 'gossip' is not one of"):
        flowemu.schedule("ring", "tree:8", collective="gossip")
    with pytest.raises(ConfigError, match="'bruck' is not an algorithm of allreduce"):
        flowemu.schedule("bruck", "tree:8")


def test_ranks_and_refusals():
    assert flowemu.schedule("ring", "torus:4x4", ranks=8).p == 8
    with pytest.raises(ConfigError, match="variant=auto picks a variant per size"):
        flowemu.schedule("recdoub:variant=auto", "torus:4x4")
    with pytest.raises(ConfigError, match="given in 'ring:ports=2' and as keywords"):
        flowemu.schedule("ring:ports=2", "torus:4x4", ports=1)
    with pytest.raises(ConfigError, match="nope"):
        flowemu.schedule("nope", "torus:4x4")
    assert "schedule" in flowemu.__all__


def test_profile_takes_network_fields_as_simulate_does():
    """``profile(..., bandwidth="200Gb/s")`` is ``profile(..., Network(...))``;
    an unknown keyword or a bare number is a ConfigError naming it."""
    sched = flowemu.schedule("ring", "torus:4x4")
    by_field = flowemu.profile(sched, "torus:4x4", bandwidth="200Gb/s", link_latency="1us")
    by_object = flowemu.profile(sched, "torus:4x4",
                                flowemu.Network(bandwidth="200Gb/s", link_latency="1us"))
    sizes = [1024, 2**20]
    np.testing.assert_array_equal(by_field.times(sizes), by_object.times(sizes))
    with pytest.raises(flowemu.ConfigError, match=r"profile: unknown keyword.*bandwith.*allowed"):
        flowemu.profile(sched, "torus:4x4", bandwith="200Gb/s")
    with pytest.raises(flowemu.ConfigError, match=r"bandwidth=400: a bare number has no unit"):
        flowemu.profile(sched, "torus:4x4", bandwidth=400)


def test_a_schedule_is_profiled_on_the_topology_it_was_built_for():
    """A ring built for torus:4x4 is a neighbour ring there; on torus:8x8
    its 16 ranks would sit on the first 16 nodes, no longer neighbours, and
    a typo in one spec would go unseen: refused, unless a mapping places
    the ranks on purpose."""
    sched = flowemu.schedule("ring", "torus:4x4")
    assert sched.info["built_for"] == "torus:4x4"
    same = flowemu.simulate("torus:4x4", "ring", "1MiB").time_s.iloc[0]
    assert flowemu.profile(sched, "torus:4x4").times("1MiB")[0] == pytest.approx(same, rel=1e-12)
    with pytest.raises(ConfigError, match=r"^schedule: built for torus:4x4, profiled on "
                                          r"torus:8x8; build it on the topology it runs on"):
        flowemu.profile(sched, "torus:8x8")
    placed = flowemu.profile(sched, "torus:8x8", mapping=np.arange(16) * 4)
    assert placed.times("1MiB")[0] > same

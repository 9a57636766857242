"""One unit rule for the Python API, the command line and TOML: a rate or a
time carries its unit (a string or a flowemu.units helper); a bare number is
refused naming the parameter, except 0 for a time."""

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu import ConfigError, Network
from flowemu.algorithms import get_algorithm
from flowemu.api.units import GBps, Gbps, Quantity, ms, ns, ps, us
from flowemu.cli.app import main

TOPO = "torus:8"   # a ring: ring's closed form holds


def ring_time(n: float, p: int, bandwidth: float, per_hop: float) -> float:
    """Ring on a ring (two ports, the default): 2(p-1) steps, each one hop
    and n/(2p) bytes on each link direction."""
    return 2 * (p - 1) * (per_hop + n / (2 * p) / bandwidth)


@pytest.mark.parametrize("field,value", [
    ("bandwidth", 400), ("bandwidth", 5e10), ("bandwidth", np.float64(5e10)),
    ("link_latency", 100), ("link_latency", 1e-7), ("hop_latency", np.int64(300)),
    ("alpha", 1e-6), ("gamma", 1e-12), ("delta", 2e-12), ("incast_slope", 1e-12),
])
def test_simulate_refuses_a_bare_number(field, value):
    with pytest.raises(ConfigError) as e:
        flowemu.simulate(TOPO, "ring", "1MiB", **{field: value})
    msg = str(e.value)
    shown = f"{float(value):g}" if isinstance(value, float | np.floating) else str(int(value))
    assert msg.startswith(f"{field}={shown}: a bare number has no unit; ")
    assert "flowemu.units." in msg and "write " in msg


def test_the_message_shows_the_forms():
    with pytest.raises(ConfigError) as e:
        flowemu.simulate(TOPO, "ring", "1MiB", bandwidth=400)
    assert str(e.value).startswith('bandwidth=400: a bare number has no unit; write '
                                   '"400Gb/s" (bits per second) or "400GB/s" (bytes per '
                                   'second), or flowemu.units.Gbps(400)')
    with pytest.raises(ConfigError) as e:
        flowemu.simulate(TOPO, "ring", "1MiB", link_latency=100)
    assert '"100ns", "100us"' in str(e.value) and 'as seconds, 100 is "100s"' in str(e.value)


@pytest.mark.parametrize("field, value, says", [
    # numbers this far from the units' range are SI: their reading comes first, and the
    # forms to write are that reading's (not "1e-07ns", "5e+10Gb/s")
    ("link_latency", 1e-7, ('link_latency=1e-07: a bare number has no unit; as seconds, 1e-07 '
     'is "100ns": write "100ns" or flowemu.units.ns(100) (a time needs its unit')),
    ("gamma", 2e-11, 'as seconds, 2e-11 is "20ps": write "20ps" or flowemu.units.ps(20)'),
    ("alpha", 1.5e-6, 'as seconds, 1.5e-06 is "1.5us": write "1.5us" or flowemu.units.us(1.5)'),
    ("bandwidth", 5e10, ('bandwidth=5e+10: a bare number has no unit; as bytes per second, '
     '5e+10 is "400Gb/s" (as bits per second "50Gb/s"): write the one meant with its unit, '
     'e.g. "400Gb/s" or flowemu.units.Gbps(400)')),
    ("bandwidth", 2e6, ('as bytes per second, 2e+06 is "16Mb/s" (as bits per second "2Mb/s")'
     ': write the one meant with its unit, e.g. "16Mb/s" or flowemu.units.Mbps(16)')),
])
def test_a_bare_si_number_is_read_as_si_first(field, value, says):
    with pytest.raises(ConfigError) as e:
        flowemu.simulate(TOPO, "ring", "1MiB", **{field: value})
    assert says in str(e.value)
    # (what it says to write is what the SI number is)
    helper = says.rpartition("flowemu.units.")[2].partition(" ")[0]
    name, arg = helper.rstrip(")").split("(")
    assert getattr(flowemu.units, name)(float(arg)).value == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("field", ["link_latency", "hop_latency", "alpha", "gamma", "delta",
                                   "incast_slope"])
def test_a_time_may_be_a_bare_zero(field):
    assert getattr(Network(**{field: 0}), field) == 0.0
    assert getattr(Network(**{field: np.float64(0.0)}), field) == 0.0


def test_bandwidth_zero_is_refused():
    # no unit would make 0 a rate: the message says that, not "write 0Gb/s"
    with pytest.raises(ConfigError, match=r"^bandwidth=0: a rate must be positive, with its unit"):
        Network(bandwidth=0)
    with pytest.raises(ConfigError, match=r"^bandwidth: rate '0Gb/s' must be positive"):
        Network(bandwidth="0Gb/s")


def test_every_entry_point_refuses_a_bare_number():
    """Each public function that takes a rate or time goes through one check."""
    sched = get_algorithm("ring").build(8, None, False)
    calls = {
        "Network": lambda: Network(bandwidth=400),
        "simulate": lambda: flowemu.simulate(TOPO, "ring", "1MiB", bandwidth=400),
        "simulate genmodel": lambda: flowemu.simulate("fattree:4", "ring", "1MiB",
                                                      model="genmodel", alpha=1e-6),
        "congestion": lambda: flowemu.congestion(TOPO, "ring", link_latency=100),
        "flows": lambda: flowemu.flows(TOPO, "ring", bandwidth=400),
        "profile": lambda: flowemu.profile(sched, TOPO, Network(hop_latency=300)),
        "plan": lambda: flowemu.plan("tree:4x4", "40MB", alpha=0.001),
        "verify": lambda: flowemu.verify("ring", 8, network=Network(bandwidth=400)),
        "fit": lambda: flowemu.fit(pd.DataFrame({"algorithm": ["ring"] * 3,
                                                 "ranks": [4] * 3,
                                                 "size": [1024, 2048, 4096],
                                                 "time": [1e-3, 2e-3, 4e-3]}),
                                   bandwidth=400),
    }
    for name, call in calls.items():
        with pytest.raises(ConfigError, match=r"^\w+=[0-9.e+-]+: a bare number has no "
                                              r"unit") as e:
            call()
        assert str(e.value).split("=")[0] in ("bandwidth", "link_latency", "hop_latency",
                                              "alpha"), name


def test_strings_and_helpers_give_the_closed_form():
    n, p = 2.0**20, 8
    expected = ring_time(n, p, 400e9 / 8, 100e-9 + 300e-9)
    for kw in ({"bandwidth": "400Gb/s", "link_latency": "100ns", "hop_latency": "300ns"},
               {"bandwidth": Gbps(400), "link_latency": ns(100), "hop_latency": us(0.3)},
               {"bandwidth": GBps(50), "link_latency": ps(100_000), "hop_latency": "0.3us"},
               {}):   # the defaults are 400 Gb/s, 100 ns, 300 ns
        t = flowemu.simulate(TOPO, "ring", [n], **kw).time_s.iloc[0]
        assert t == pytest.approx(expected, rel=1e-12), kw
    # another bandwidth and latency: the closed form moves with them
    t = flowemu.simulate(TOPO, "ring", [n], bandwidth=Gbps(100), link_latency=us(1),
                         hop_latency=0).time_s.iloc[0]
    assert t == pytest.approx(ring_time(n, p, 100e9 / 8, 1e-6), rel=1e-12)


def test_python_and_cli_give_the_same_times(capsys, tmp_path):
    out = tmp_path / "cli.csv"
    code = main(["run", "--topology", TOPO, "--algorithm", "ring", "--sizes", "1KiB,1MiB",
                 "--bandwidth", "100Gb/s", "--link-latency", "1us", "--alpha", "2ms",
                 "--format", "csv", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    cli = pd.read_csv(out)
    by_string = flowemu.simulate(TOPO, "ring", "1KiB,1MiB", bandwidth="100Gb/s",
                                 link_latency="1us", alpha="2ms")
    by_helper = flowemu.simulate(TOPO, "ring", "1KiB,1MiB", bandwidth=Gbps(100),
                                 link_latency=us(1), alpha=ms(2))
    assert list(by_string.time_s) == list(by_helper.time_s)
    np.testing.assert_allclose(cli.time_s, by_string.time_s, rtol=1e-15)
    assert (cli.bandwidth_Bps == 12.5e9).all() and (by_helper.bandwidth_Bps == 12.5e9).all()


def test_cli_and_toml_refuse_a_bare_number_too(capsys, tmp_path):
    code = main(["run", "--topology", TOPO, "--algorithm", "ring", "--sizes", "1KiB",
                 "--bandwidth", "400"])
    assert code == 2 and "--bandwidth" in capsys.readouterr().err
    preset = tmp_path / "net.toml"
    preset.write_text("[network]\nbandwidth = 400\n")
    with pytest.raises(ConfigError, match="network.bandwidth: 400 has no unit"):
        flowemu.simulate(TOPO, "ring", "1KiB", network=str(preset))


def test_helpers():
    from flowemu.units import Gbps as public  # the public name of flowemu/api/units.py
    assert public is Gbps and flowemu.units.ns is ns
    assert str(Gbps(400)) == "400Gb/s" and Gbps(400).value == 5e10
    assert GBps(50) == Gbps(400) and ns(100).value == 1e-7 and us(1.5).value == 1.5e-6
    assert ps(20).value == 2e-11 and str(us(1.5)) == "1.5us" and repr(ns(100)) == \
        "Quantity('100ns')"
    assert isinstance(flowemu.units.ms(2), Quantity)
    with pytest.raises(ConfigError, match=r"^bandwidth: 100ns is a time; expected a rate"):
        Network(bandwidth=ns(100))
    with pytest.raises(ConfigError, match=r"^alpha: 400Gb/s is a rate; expected a time"):
        Network(alpha=Gbps(400))
    for bad in ("400", None, True):
        with pytest.raises(ConfigError, match="^Gbps: "):
            Gbps(bad)
    with pytest.raises(ConfigError, match="^ns: "):
        ns(-1)


def test_network_replace_keeps_the_other_fields_and_takes_units():
    """``Network.replace`` changes the fields given (as the constructor takes
    them) and keeps the others; ``dataclasses.replace`` cannot, since it
    hands the SI floats back to the constructor."""
    net = Network(bandwidth="400Gb/s", alpha="2us", incast_threshold=4, incast_slope="1ps")
    wider = net.replace(bandwidth="800Gb/s")
    assert wider.bandwidth == 1e11                # 800e9 bits/s / 8
    assert (wider.alpha, wider.incast_threshold, wider.incast_slope) == (2e-6, 4.0, 1e-12)
    assert (wider.link_latency, wider.hop_latency) == (net.link_latency, net.hop_latency)
    assert net.bandwidth == 5e10                  # the original is unchanged
    assert net.replace() == net
    with pytest.raises(ConfigError, match=r"^alpha=3: a bare number has no unit"):
        net.replace(alpha=3)
    with pytest.raises(ConfigError, match=r"Network.replace: unknown keyword argument\(s\) "
                                          r"bandwith \(did you mean 'bandwidth'\?\)"):
        net.replace(bandwith="1Gb/s")


@pytest.mark.parametrize("make, says", [
    # a sign was "cannot read '-400Gb/s' as a rate", a non-finite helper "cannot read
    # 'infGb/s'", an SI value Quantity('-1.0B/s')
    (lambda: flowemu.Network(bandwidth="-400Gb/s"),
     "bandwidth: '-400Gb/s': a rate must be positive; expected 400Gb/s"),
    (lambda: flowemu.units.Gbps(-400), "Gbps: '-400Gb/s': a rate must be positive"),
    (lambda: flowemu.units.Gbps(float("inf")), ("Gbps: inf is not allowed; expected a finite "
                                               "number")),
    (lambda: flowemu.units.ns(float("nan")), "ns: nan is not allowed; expected a finite number"),
    (lambda: flowemu.Network.from_si(bandwidth=-1),
     "bandwidth: rate -1.0B/s must be positive and finite"),
    (lambda: flowemu.simulate(TOPO, "ring", "-1MiB"), "sizes: '-1MiB': a size must be positive"),
])
def test_a_negative_or_non_finite_value_says_so(make, says):
    with pytest.raises(ConfigError) as e:
        make()
    assert str(e.value).startswith(says) and "Quantity(" not in str(e.value)

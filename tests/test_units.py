import itertools
import math

import pytest

from flowemu.errors import ConfigError
from flowemu.network import Network
from flowemu.units import (
    format_rate,
    format_size,
    format_time,
    parse_rate,
    parse_size,
    parse_sizes,
    parse_time,
)


@pytest.mark.parametrize("text,expected", [
    ("32B", 32), ("32", 32), (" 4KiB ", 4096), ("1MiB", 2**20), ("2GiB", 2**31),
    ("1KB", 1000), ("1e6", 10**6), ("1.5KiB", 1536), (4096, 4096), ("512mib", 512 * 2**20),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "MiB", "12XB", "-1KiB", "0", "1.5B", "nan", "inf",
                                 "1e400", "1..2", True])
def test_parse_size_rejects(bad):
    with pytest.raises(ConfigError) as e:
        parse_size(bad, "sizes")
    assert "sizes" in str(e.value)


def test_size_range_is_every_power_of_two():
    sizes = parse_sizes("32B..512MiB")
    assert sizes[0] == 32 and sizes[-1] == 512 * 2**20 and len(sizes) == 25
    assert all(b == 2 * a for a, b in itertools.pairwise(sizes))
    assert parse_sizes("33B..100B") == [64]
    assert parse_sizes("1MiB,1KiB,1KiB") == [1024, 2**20]
    assert parse_sizes([64, "1KiB"]) == [64, 1024]


@pytest.mark.parametrize("bad", ["1MiB..1KiB", "65B..127B", ",", "1KiB,,x"])
def test_size_range_rejects(bad):
    with pytest.raises(ConfigError):
        parse_sizes(bad)


@pytest.mark.parametrize("text,expected", [
    ("400Gb/s", 50e9), ("400Gbps", 50e9), ("50GB/s", 50e9), ("1.6Tb/s", 200e9),
    ("100Mb/s", 12.5e6), ("5e10", 5e10), (1e9, 1e9), ("8b/s", 1.0),
])
def test_parse_rate(text, expected):
    assert parse_rate(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("bad", ["", "fast", "0Gb/s", "-1Gb/s", "nan", "400Xb/s", "400Gb/h", 0])
def test_parse_rate_rejects(bad):
    with pytest.raises(ConfigError) as e:
        parse_rate(bad, "bandwidth")
    assert "bandwidth" in str(e.value)


@pytest.mark.parametrize("text,expected", [
    ("100ns", 100e-9), ("1.5us", 1.5e-6), ("1µs", 1e-6), ("2ms", 2e-3), ("1s", 1.0),
    ("3e-7", 3e-7), ("0", 0.0), (0, 0.0),
])
def test_parse_time(text, expected):
    assert parse_time(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("bad", ["", "100lightyears", "-1ns", "nan", "inf", "ns"])
def test_parse_time_rejects(bad):
    with pytest.raises(ConfigError) as e:
        parse_time(bad, "hop_latency")
    assert "hop_latency" in str(e.value)


def test_format_round_trips():
    for s in ("32B", "4KiB", "512MiB", "1GiB"):
        assert format_size(parse_size(s)) == s
    assert format_rate(parse_rate("400Gb/s")) == "400Gb/s"
    assert parse_time(format_time(3e-7)) == pytest.approx(3e-7)


def test_network_defaults_and_strings():
    net = Network()
    assert net.bandwidth == 50e9 and net.link_latency == 100e-9 and net.hop_latency == 300e-9
    assert net.alpha == 0 and net.gamma == 0 and net.delta == 0 and not net.incast_on
    net = Network(bandwidth="100Gb/s", link_latency="1us", incast_threshold="4",
                  incast_slope=1e-12)
    assert net.bandwidth == 12.5e9 and net.link_latency == 1e-6 and net.incast_on


@pytest.mark.parametrize("field,value", [
    ("bandwidth", 0), ("bandwidth", -1.0), ("bandwidth", math.nan), ("bandwidth", math.inf),
    ("link_latency", -1e-9), ("hop_latency", math.nan), ("alpha", "x"), ("gamma", -1.0),
    ("delta", math.inf), ("incast_threshold", -1), ("incast_threshold", "many"),
    ("incast_slope", -1e-9), ("incast_threshold", math.nan),
])
def test_network_rejects(field, value):
    with pytest.raises(ConfigError) as e:
        Network(**{field: value})
    assert field in str(e.value)

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.core.units import (
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
    ("1KB", 1000), ("1kB", 1000), ("1e6", 10**6), ("1.5KiB", 1536), (4096, 4096),
    ("512MiB", 512 * 2**20), ("3TB", 3 * 10**12), ("1TiB", 2**40), (np.int64(64), 64),
    (np.float64(2048.0), 2048), (np.uint32(8), 8),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "MiB", "12XB", "-1KiB", "0", "1.5B", "nan", "inf",
                                 "1e400", "1..2", True, None, "1 MiB/s", np.float64("nan"),
                                 np.bool_(True), np.float64(-1.0)])
def test_parse_size_rejects(bad):
    with pytest.raises(ConfigError) as e:
        parse_size(bad, "sizes")
    assert "sizes" in str(e.value)
    assert "np." not in str(e.value)


@pytest.mark.parametrize("big", ["9007199254740993", 2**53 + 1, np.uint64(2**53 + 1),
                                 "9007199254740992.5", "8.000000000000001PiB"])
def test_a_size_past_2_53_is_refused_not_rounded(big):
    """2**53 + 1 read as 2**53 (converted to a double before the check); the
    8 PiB the message names is a size too."""
    with pytest.raises(ConfigError, match=r"^sizes: size .* is larger than the 8PiB"):
        parse_size(big, "sizes")
    assert parse_size("8PiB") == parse_size(2**53) == 2**53 and parse_size("1PB") == 10**15


@pytest.mark.parametrize("bad", ["1Mb", "1kb", "8b", "1Gb", "512mib", "1Kib"])
def test_size_with_bits_is_refused(bad):
    # a lowercase b is a bit: a size in bits must not silently become bytes
    with pytest.raises(ConfigError) as e:
        parse_size(bad, "sizes")
    msg = str(e.value)
    assert msg.startswith("sizes:") and repr(bad) in msg and "bits" in msg and "KiB" in msg


@pytest.mark.parametrize("bad", ["1k", "1M", "4G", "2T", "1m"])
def test_size_with_bare_prefix_is_refused(bad):
    # 1M: 10**6 or 2**20? the message offers both spellings
    with pytest.raises(ConfigError) as e:
        parse_size(bad, "sizes")
    msg = str(e.value)
    assert repr(bad) in msg and "iB" in msg and "B (powers of 10)" in msg


def test_size_range_is_every_power_of_two():
    sizes = parse_sizes("32B..512MiB")
    assert sizes[0] == 32 and sizes[-1] == 512 * 2**20 and len(sizes) == 25
    assert all(b == 2 * a for a, b in itertools.pairwise(sizes))
    assert parse_sizes("33B..100B") == [64]
    assert parse_sizes("1MiB,1KiB,1KiB") == [1024, 2**20]
    assert parse_sizes([64, "1KiB"]) == [64, 1024]
    assert parse_sizes(np.array([4096, 64])) == [64, 4096]
    assert parse_sizes(np.int64(128)) == [128]


@pytest.mark.parametrize("bad", ["1MiB..1KiB", "65B..127B", ",", "1KiB,,x"])
def test_size_range_rejects(bad):
    with pytest.raises(ConfigError):
        parse_sizes(bad)


@pytest.mark.parametrize("bad", ["32B...512MiB", "..1MiB", "1KiB..", "1KiB..1MiB,4MiB"])
def test_a_malformed_size_range_names_the_range_syntax(bad):
    # not "size '.512MiB' is not a whole number of bytes": the value as given, and LO..HI
    with pytest.raises(ConfigError) as e:
        parse_sizes(bad, "--sizes")
    assert str(e.value) == (f"--sizes: {bad!r} is not a size range; expected LO..HI with two "
                            "dots, e.g. 32B..512MiB (every power of two from LO to HI), or a "
                            "comma list such as 1KiB,1MiB")


@pytest.mark.parametrize("bad", ["1MiB,", ",1MiB", "1KiB,,1MiB", "1KiB, ,1MiB"])
def test_a_size_list_with_an_empty_entry_is_refused(bad):
    with pytest.raises(ConfigError) as e:
        parse_sizes(bad)
    assert str(e.value) == (f"sizes: {bad!r} has an empty entry (a comma at either end or two "
                            "in a row); expected sizes separated by commas, e.g. 1KiB,1MiB")


@pytest.mark.parametrize("text,expected", [
    ("400Gb/s", 50e9), ("400Gbps", 50e9), ("50GB/s", 50e9), ("1.6Tb/s", 200e9),
    ("100Mb/s", 12.5e6), ("1kb/s", 125.0), ("1Kb/s", 125.0), ("2GBps", 2e9), (5e10, 5e10),
    (1e9, 1e9), ("8b/s", 1.0), (np.float64(5e10), 5e10), (np.int64(1000), 1000.0),
])
def test_parse_rate(text, expected):
    assert parse_rate(text) == expected


@pytest.mark.parametrize("bad", ["", "fast", "0Gb/s", "-1Gb/s", "nan", "400Xb/s", "400Gb/h", 0,
                                 "400mb/s", "400gb/s", None, [1]])
def test_parse_rate_rejects(bad):
    with pytest.raises(ConfigError) as e:
        parse_rate(bad, "bandwidth")
    assert "bandwidth" in str(e.value)


@pytest.mark.parametrize("bare", ["400", "5e10", "1.5", " 100 "])
def test_rate_string_without_unit_is_refused(bare):
    # "400": 400 bytes/s? 400 Gb/s? a string must say; a Python number is SI (bytes/s)
    with pytest.raises(ConfigError) as e:
        parse_rate(bare, "--bandwidth")
    msg = str(e.value)
    assert msg.startswith("--bandwidth:") and repr(bare) in msg and "no unit" in msg
    assert "400Gb/s" in msg and "50GB/s" in msg


@pytest.mark.parametrize("bare", ["100", "1e-7", "3e-7", "0.5"])
def test_time_string_without_unit_is_refused(bare):
    with pytest.raises(ConfigError) as e:
        parse_time(bare, "link_latency")
    msg = str(e.value)
    assert msg.startswith("link_latency:") and "no unit" in msg and "100ns" in msg


@pytest.mark.parametrize("text,expected", [
    ("100ns", 1e-7), ("1.5us", 1.5e-6), ("1µs", 1e-6), ("2ms", 2e-3), ("1s", 1.0),
    ("300ns", 3e-7), ("0", 0.0), ("0.0", 0.0), ("0ns", 0.0), (0, 0.0), (3e-7, 3e-7),
    ("10ps", 1e-11), (np.float64(1e-7), 1e-7),
])
def test_parse_time(text, expected):
    # exact: "100ns" is the double nearest 1e-7, not 100 * 1e-9
    assert parse_time(text) == expected


@pytest.mark.parametrize("digits,unit,exp10", [
    ("100", "ns", -9), ("300", "ns", -9), ("1.1", "us", -6), ("0.7", "ms", -3), ("7", "ps", -12),
    ("123.456", "ns", -9), ("1e2", "ns", -9), ("2.5e-1", "us", -6),
])
def test_time_is_the_nearest_double(digits, unit, exp10):
    # independent of the parser: the exact rational, rounded once by Fraction -> float
    exact = Fraction(digits) * Fraction(10) ** exp10
    assert parse_time(digits + unit) == float(exact)


@pytest.mark.parametrize("digits,unit,exact", [
    ("1.6", "Tb/s", Fraction(16, 10) * 10**12 / 8), ("0.3", "GB/s", Fraction(3, 10) * 10**9),
    ("100", "Mb/s", Fraction(100 * 10**6, 8)), ("2.2", "kB/s", Fraction(22, 10) * 10**3),
    ("0.1", "Gbps", Fraction(1, 10) * 10**9 / 8),
])
def test_rate_is_the_nearest_double(digits, unit, exact):
    assert parse_rate(digits + unit) == float(exact)


def test_decimal_sizes_are_exact():
    assert parse_size("1.1KB") == 1100 and parse_size("0.001MB") == 1000
    assert parse_size("4.1GB") == 4_100_000_000     # 4.1 * 1e9 in floats is 4100000000.0000005


@pytest.mark.parametrize("bad", ["", "100lightyears", "-1ns", "nan", "inf", "ns", "100NS",
                                 "1e999999999ns"])
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
                  incast_slope="1ps")
    assert net.bandwidth == 12.5e9 and net.link_latency == 1e-6 and net.incast_on
    # a time may be a bare 0 (numpy's too); per-byte costs are a time per byte
    net = Network(bandwidth="50GB/s", link_latency=np.float32(0), gamma="1ps",
                  incast_threshold=np.int64(4), incast_slope="2ps")
    assert net.bandwidth == 5e10 and net.gamma == 1e-12 and net.incast_threshold == 4.0
    assert net.incast_slope == 2e-12 and net.incast_on and net.link_latency == 0
    # flowemu's own SI floats, said so explicitly
    assert Network.from_si(bandwidth=5e10, incast_slope=2e-12, incast_threshold=4) == \
        Network(bandwidth="400Gb/s", incast_slope="2ps", incast_threshold=4)


@pytest.mark.parametrize("field,value", [
    ("bandwidth", "400"), ("link_latency", "100"), ("hop_latency", "3e-7"), ("alpha", "1"),
    ("gamma", "1e-12"),
])
def test_network_refuses_strings_without_unit(field, value):
    with pytest.raises(ConfigError) as e:
        Network(**{field: value})
    msg = str(e.value)
    assert msg.startswith(f"{field}:") and "no unit" in msg and repr(value) in msg


@pytest.mark.parametrize("field,value", [
    ("bandwidth", 0), ("bandwidth", -1.0), ("bandwidth", math.nan), ("bandwidth", math.inf),
    ("link_latency", -1e-9), ("hop_latency", math.nan), ("alpha", "x"), ("gamma", -1.0),
    ("delta", math.inf), ("incast_threshold", -1), ("incast_threshold", "many"),
    ("incast_slope", -1e-9), ("incast_threshold", math.nan), ("incast_threshold", np.int64(-3)),
    ("bandwidth", np.float64(-2.0)),
])
def test_network_rejects(field, value):
    with pytest.raises(ConfigError) as e:
        Network(**{field: value})
    assert field in str(e.value)
    assert "np." not in str(e.value)     # values print as plain numbers


@pytest.mark.parametrize("n,expected", [
    (1023, "1023B"), (1024, "1KiB"), (1023.6, "1KiB"), (1048575, "1MiB"),
    (2**20 - 2**9, "1MiB"),            # 1023.5 KiB rounds to 1024 KiB: 1 MiB
    (1073741823, "1GiB"), (2**40 - 1, "1TiB"), (1000 * 2**20, "1000MiB"),
    (1023 * 2**20, "1023MiB"), (1536, "1.5KiB"), (2**53, "8192TiB"), (0, "0B"),
    (1e30, "9.095e+17TiB"),            # (a file's 1e30 bytes printed 18 digits of TiB)
])
def test_format_size_boundaries(n, expected):
    """A value that rounds to 1024 of a unit is 1 of the next one; no exponent
    below 10,000 TiB, and four digits above."""
    assert format_size(n) == expected


def test_format_size_every_boundary():
    """Near every unit boundary (and at random), the printed size has no
    exponent, a number below 1024 unless in TiB, the smallest unit that
    allows that, and is within 3 significant digits of the value."""
    units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
    rng = np.random.default_rng(7)
    values = [2**(10 * k) * f + d for k in range(5) for f in (1, 1000, 1023, 1024)
              for d in (-2, -1, -0.5, 0, 0.5, 1, 2) if 2**(10 * k) * f + d > 0]
    values += [2**(10 * k) * 1024 * (1 - e) for k in range(4) for e in (1e-3, 1e-4, 1e-9)]
    values += list(2.0 ** rng.uniform(0, 50, 2000)) + list(rng.integers(1, 2**45, 2000))
    decimal = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
    for n in values:
        text = format_size(n)
        m = __import__("re").fullmatch(r"(\d+(?:\.\d+)?)(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)", text)
        assert m, (n, text)
        v, unit = float(m.group(1)), m.group(2)
        if unit in decimal:
            # only where binary units would round: whole, exact, below 1000
            assert v == int(v) and v * decimal[unit] == n and (v < 1000 or unit == "TB"), \
                (n, text)
            continue
        assert v < 1024 or unit == "TiB", (n, text)
        assert abs(v * units[unit] - n) <= 0.005 * n, (n, text)
        # a smaller unit would print 1024 or more (or the value is below its scale)
        smaller = [u for u, s in units.items() if s < units[unit]]
        if smaller:
            assert n / units[smaller[-1]] >= 1023.5, (n, text)


def test_a_decimal_size_prints_as_typed():
    """-s 8MB showed as 7.63MiB: a size that binary units print only
    rounded, and a decimal unit exactly, prints in that unit; binary sizes
    keep binary units, and a size neither prints exactly stays binary."""
    assert format_size(8 * 10**6) == "8MB" and format_size(10**6) == "1MB"
    assert format_size(500 * 10**3) == "500KB" and format_size(10**12) == "1TB"
    assert format_size(2**20) == "1MiB" and format_size(1.5 * 2**20) == "1.5MiB"
    assert format_size(1000) == "1000B" and format_size(123_456_000) == "118MiB"
    assert parse_size(format_size(8 * 10**6)) == 8 * 10**6


@pytest.mark.parametrize("value, says", [
    (-1, 'link_latency=-1: a time cannot be negative; write 0 or more with its unit'),
    ("-1ns", "link_latency: '-1ns': a time cannot be negative; expected 0 or more: 100ns"),
    (" -2us", "a time cannot be negative"),
])
def test_a_negative_time_is_refused_as_negative(value, says):
    """link_latency=-1 was told to write "-1ns", and "-1ns" then could not
    be read 'as a time': neither said that a time cannot be negative."""
    with pytest.raises(ConfigError) as got:
        Network(link_latency=value)
    assert says in str(got.value)
    assert '"-1ns"' not in str(got.value)


def test_formats_say_nan_and_inf_without_a_unit():
    """NaN read 'nanb/s' as a rate and 'nanps' as a time, and a size of NaN
    raised ValueError from deep inside; each is 'nan' now, an infinity 'inf'."""
    for fmt in (format_rate, format_size, format_time):
        assert fmt(float("nan")) == "nan"
        assert fmt(float("inf")) == "inf"
    assert format_time(float("-inf")) == "-inf"
    assert (format_rate(5e10), format_size(1024), format_time(1e-12)) == ("400Gb/s", "1KiB",
                                                                           "1ps")


@pytest.mark.parametrize("field, value, kind", [("link_latency", float("nan"), "time"),
                                                ("alpha", float("inf"), "time"),
                                                ("bandwidth", float("inf"), "rate")])
def test_a_bare_non_finite_number_is_said_to_be_one(field, value, kind):
    """link_latency=nan advised writing "nanns", which is then refused."""
    with pytest.raises(ConfigError) as e:
        Network(**{field: value})
    assert str(e.value).startswith(f"{field}={value:g} is not allowed; a {kind} is a finite "
                                   "number with its unit")
    assert '"nan' not in str(e.value) and '"inf' not in str(e.value)


def test_a_dataframe_is_shown_as_one():
    """background=<DataFrame> was shown as the flat list of its values."""
    import pandas as pd

    from flowemu.core.errors import show
    frame = pd.DataFrame({"step": [0, 0], "src": [0, 1], "dst": [5, 6], "bytes": [1e10, 1e10]})
    assert show(frame) == "DataFrame(2 rows; columns step, src, dst, bytes)"
    assert show(pd.DataFrame()) == "DataFrame(0 rows; no columns)"
    wide = pd.DataFrame({f"c{i}": [1] for i in range(20)})
    assert show(wide) == "DataFrame(1 rows; columns c0, c1, c2, c3, c4, c5, c6, c7, ... (20 in all))"


def test_an_incast_threshold_too_large_for_a_double_is_not_off():
    """'1e400' read as inf: incast off, unsaid."""
    with pytest.raises(ConfigError, match=r"^incast_threshold: '1e400' is not allowed; expected "
                                          "a flow count >= 0 or 'inf'"):
        Network(incast_threshold="1e400", incast_slope="1ps")
    assert Network(incast_threshold="inf").incast_threshold == math.inf

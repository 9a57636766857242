"""``--where`` of ``flowemu compare`` and ``flowemu plot`` reads the sweep
file's filter language: its names (``bandwidth``), its unit helpers
(``rate('100Gb/s')``), mapped onto the dataset's columns (``bandwidth_Bps``);
the column names keep working, and a bad filter is a one-line error."""

from __future__ import annotations

import pandas as pd
import pytest

import flowemu
from flowemu.cli.app import main
from flowemu.study import results
from flowemu.study.figures import common, gain, goodput, slowdown

SWEEP = """
sizes = "1KiB,1MiB"
topology = ["torus:4x4", "torus:8"]
algorithm = ["ring", "recdoub:variant=latency"]
bandwidth = ["100Gb/s", "400Gb/s"]
"""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("where")
    (tmp / "bw.toml").write_text(SWEEP)
    assert main(["sweep", str(tmp / "bw.toml"), "--out", str(tmp / "bw"), "--jobs", "1"]) == 0
    return tmp / "bw"


@pytest.fixture
def compared(monkeypatch):
    """The rows ``flowemu compare`` compares (the command reads through the module)."""
    seen = []
    real = results.compare

    def spy(df, **kw):
        seen.append(df)
        return real(df, **kw)
    monkeypatch.setattr(results, "compare", spy)
    return seen


@pytest.fixture
def plotted(monkeypatch):
    """The rows a figure of ``flowemu plot`` draws."""
    seen = []
    real = common.filter_rows

    def spy(df, *a, **kw):
        seen.append(real(df, *a, **kw))
        return seen[-1]
    for figure_module in (goodput, gain, slowdown):
        monkeypatch.setattr(figure_module, "filter_rows", spy)
    return seen


def same_rows(got: pd.DataFrame, want: pd.DataFrame) -> bool:
    key = ["config_hash", "size_bytes"]
    return sorted(map(tuple, got[key].to_numpy())) == sorted(map(tuple, want[key].to_numpy()))


WHERE = [
    ("bandwidth == rate('100Gb/s')", lambda d: d[d["bandwidth_Bps"] == 12.5e9]),
    ("bandwidth_Bps == 12.5e9", lambda d: d[d["bandwidth_Bps"] == 12.5e9]),     # as before
    ("bandwidth > rate('100Gb/s') and topology == 'torus:4x4' and size_bytes >= size('1MiB')",
     lambda d: d[(d["bandwidth_Bps"] > 12.5e9) & (d["topology"] == "torus:4x4")
                 & (d["size_bytes"] >= 2**20)]),
    ("family == 'torus' and ndims == 1", lambda d: d[d["topology"] == "torus:8"]),
    ("algorithm == 'recdoub' and options['variant'] == 'latency' and link_latency >= time('0s')",
     lambda d: d[d["algorithm"] == "recdoub"]),
    # ring has no variant: it reads as None there (this was a KeyError at ring's rows)
    ("options['variant'] == 'latency'", lambda d: d[d["algorithm"] == "recdoub"]),
    ("options['variant'] != 'latency'", lambda d: d[d["algorithm"] == "ring"]),
    ("'variant' not in options and size_bytes == 1024",
     lambda d: d[(d["algorithm"] == "ring") & (d["size_bytes"] == 1024)]),
]


@pytest.mark.parametrize("where, want", WHERE, ids=[w for w, _ in WHERE])
def test_compare_where_selects_the_rows_pandas_selects(dataset, compared, where, want, capsys):
    assert main(["compare", str(dataset), "--where", where, "-f", "csv"]) == 0
    expected = want(flowemu.load(dataset))
    assert 0 < len(expected) < len(flowemu.load(dataset))
    assert same_rows(compared[-1], expected)


@pytest.mark.parametrize("where", [WHERE[0][0], WHERE[1][0]])
def test_plot_where_selects_the_rows_pandas_selects(dataset, plotted, where, tmp_path):
    out = tmp_path / "g.png"
    assert main(["plot", str(dataset), "--where", where, "--out", str(out)]) == 0
    assert out.stat().st_size > 0
    df = flowemu.load(dataset)
    assert same_rows(plotted[-1], df[df["bandwidth_Bps"] == 12.5e9])


@pytest.mark.parametrize("where, says", [
    ("bandwith == rate('100Gb/s')", "unknown name 'bandwith' (did you mean 'bandwidth'?)"),
    ("bandwidth == rate('fast')", "cannot read 'fast' as a rate"),
    ("network == 'paper'", "'network' is not in the results"),
    ("open('x')", "only these functions may be called"),
    ("nodes >", "cannot parse"),
    ("nodes = 4", "cannot parse 'nodes = 4': invalid syntax (compare with ==, not =)"),
    # a result column is suggested by its name without the unit, too
    ("sizee == 1", "unknown name 'sizee' (did you mean 'size_bytes'?)"),
    ("bandwith > 1", "unknown name 'bandwith' (did you mean 'bandwidth'?)"),
    # the tables' size and time columns are size_bytes and time_s; size and
    # time are the unit functions (size == '1MiB' selected nothing, time <
    # ... failed inside Python comparing a function)
    ("size == '1MiB'", ("size is a function, not a value: size('1MiB') is 1 MiB in bytes; "
                        "the vector size column is size_bytes (size_bytes == size('1MiB'))")),
    ("time < time('100us')", ("time is a function, not a value: time('100us') is 100 µs in "
                              "seconds; the time column is time_s")),
    # an option no algorithm has is a misspelling, not None everywhere
    ("options['varient'] == 'latency'", ("no algorithm has the option 'varient' (did you mean "
                                         "'variant'?); their options: layout, mirrored, ports, "
                                         "variant")),
    # pandas read options.get on the text column: every row compared None, silently
    ("options.get('variant') != 'latency'", ("options.get is not offered; write "
                                            "options['variant']")),
])
def test_a_bad_filter_is_one_line_naming_it(dataset, where, says, capsys):
    assert main(["compare", str(dataset), "--where", where]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "--where" in err and repr(where) in err and says in err


def test_a_pandas_query_still_works(dataset, compared):
    assert main(["compare", str(dataset), "--where", "topology.str.endswith('4x4')"]) == 0
    df = flowemu.load(dataset)
    assert same_rows(compared[-1], df[df["topology"] == "torus:4x4"])


def test_a_bare_number_against_a_rate_gets_a_hint(dataset, capsys):
    """``bandwidth == 100`` reads 100 B/s and selects nothing: the refusal
    says so and shows the unit helper (the filter itself stays as typed)."""
    from flowemu.study.sweep.where import unit_hint

    assert "write bandwidth == rate('100Gb/s')" in unit_hint("bandwidth == 100")
    assert "link_latency is in s" in unit_hint("topology == 'x' and link_latency < 5")
    assert unit_hint("bandwidth == rate('100Gb/s')") == "" == unit_hint("ranks == 16")
    assert unit_hint("bandwidth_Bps == 0") == "" == unit_hint("((")
    assert main(["compare", str(dataset), "--where", "bandwidth == 100"]) == 2
    err = capsys.readouterr().err
    assert "no results" in err and "bandwidth is in B/s" in err and err.count("\n") == 1
    # the helper's call is whole (its closing parenthesis was stripped with the hint's)
    assert err.rstrip().endswith("write bandwidth == rate('100Gb/s'))")
    # a rate against a text: the same helper, with the text given
    assert main(["compare", str(dataset), "--where", "bandwidth == '400Gb/s'"]) == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith("(bandwidth is a number in B/s, never equal to the text "
                                 "'400Gb/s'; write bandwidth == rate('400Gb/s'))")


@pytest.mark.parametrize("where,says", [
    ("family == 'tours'", ("'tours' is no family of the data; family: torus "
                          "(did you mean 'torus'?)")),
    ("algorithm == 'rnig' and ranks > 2", ("'rnig' is no algorithm of the data; algorithm: "
                                          "recdoub, ring (did you mean 'ring'?)")),
    ("algorithm in ['rign', 'swnig']", ("'rign' is no algorithm of the data; algorithm: "
                                       "recdoub, ring (did you mean 'ring'?); 'swnig' is no "
                                       "algorithm")),
])
def test_a_text_no_row_holds_is_named_with_the_values_there(dataset, where, says, capsys):
    """A misspelt value selects nothing: the refusal names it beside the
    values the column holds (a misspelt name already got 'did you mean')."""
    assert main(["compare", str(dataset), "--where", where]) == 2
    err = capsys.readouterr().err
    assert "no results" in err and says in err and err.count("\n") == 1, err
    assert main(["plot", str(dataset), "--kind", "goodput", "--where", where,
                 "--out", str(dataset.parent / "w.png")]) == 2
    assert says in capsys.readouterr().err


def test_a_topology_matches_any_spelling_of_it():
    """A dataset holds a topology's own spec (hammingmesh:2x2,4x4); a filter
    or a figure's topologies may name it as the command line took it."""
    df = pd.DataFrame({"topology": ["hammingmesh:2x2,4x4", "torus:4x4"], "nodes": [64, 16],
                       "size_bytes": [1024, 1024], "algorithm": ["ring", "ring"],
                       "goodput_Bps": [1e9, 2e9], "time_s": [1024 / 1e9, 1024 / 2e9]})
    for where in ("topology == 'hx2mesh:4x4'", "topology in ['hx2mesh:4x4']",
                  "topology == 'hammingmesh:2x2,4x4'"):
        assert list(results.query(df, where)["topology"]) == ["hammingmesh:2x2,4x4"], where
    assert list(results.query(df, "topology != 'hx2mesh:4x4'")["topology"]) == ["torus:4x4"]
    assert list(common.filter_rows(df, topologies="hx2mesh:4x4")["topology"]) == \
        ["hammingmesh:2x2,4x4"]
    with pytest.raises(flowemu.ConfigError, match="topologies: hx2mesh:8x8 not in the data"):
        common.filter_rows(df, topologies=["hx2mesh:8x8"])

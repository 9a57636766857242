"""The Python API validates at its boundary: numpy/pandas inputs work, every
bad argument is a ConfigError naming it (never a raw numpy/pandas error), and
values print as plain numbers."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowemu
from flowemu import ConfigError, Network
from flowemu.algorithms import get_algorithm
from flowemu.algorithms.base import Traffic
from flowemu.core.errors import show
from flowemu.engine.profiles import profile
from flowemu.topology import parse_topology

TOPO = "torus:4x4"
#: one link of 1 GB/s, no latency: a flow of b bytes alone on its link takes b/1e9 s
FAST = {"bandwidth": "1GB/s", "link_latency": 0, "hop_latency": 0}


def _message(call) -> str:
    with pytest.raises(ConfigError) as info:
        call()
    msg = str(info.value)
    assert "\n" not in msg
    # values print as plain numbers, never numpy reprs
    assert "np." not in msg and "numpy" not in msg and "dtype(" not in msg, msg
    return msg


def _frame(rows, columns=("step", "src", "dst", "bytes")):
    return pd.DataFrame(rows, columns=list(columns))


# ---------------------------------------------------------------- simulate

SIMULATE_BAD = [
    ({"topology": 42}, "topology"),
    ({"topology": None}, "topology"),
    ({"topology": ["torus:4x4"]}, "topology"),
    ({"topology": "torus:1x4"}, "torus:1x4"),
    ({"algorithm": 3}, "algorithm"),
    ({"algorithm": None}, "algorithm"),
    ({"algorithm": ""}, "algorithm"),
    ({"algorithm": "nosuch"}, "nosuch"),
    ({"algorithm": "ring:ports=3"}, "ports"),
    ({"sizes": None}, "sizes"),
    ({"sizes": []}, "sizes"),
    ({"sizes": np.array([])}, "sizes"),
    ({"sizes": [-1]}, "sizes"),
    ({"sizes": 0}, "sizes"),
    ({"sizes": [float("nan")]}, "sizes"),
    ({"sizes": np.array([1024.0, np.nan])}, "sizes"),
    ({"sizes": [1.5]}, "sizes"),
    ({"sizes": [True]}, "sizes"),
    ({"sizes": np.zeros((2, 2))}, "sizes"),
    ({"sizes": {"a": 1}}, "sizes"),
    ({"sizes": [[1024]]}, "sizes"),
    ({"sizes": "lots"}, "sizes"),
    ({"seed": "1"}, "seed"),
    ({"seed": 1.0}, "seed"),
    ({"seed": True}, "seed"),
    ({"seed": -1}, "seed"),
    ({"seed": 2**64}, "seed"),
    ({"seed": np.float64(1)}, "seed"),
    ({"seed": None}, "seed"),
    ({"ranks": 1}, "ranks"),
    ({"ranks": 17}, "ranks"),
    ({"ranks": np.int64(17)}, "ranks"),
    ({"ranks": "4"}, "ranks"),
    ({"ranks": 4.0}, "ranks"),
    ({"ranks": True}, "ranks"),
    ({"threads": 0}, "threads"),
    ({"threads": "2"}, "threads"),
    ({"threads": np.int32(-1)}, "threads"),
    ({"ecmp": "random"}, "ecmp"),
    ({"ecmp": None}, "ecmp"),
    ({"ecmp": ["split"]}, "ecmp"),
    ({"network": "fast"}, "network"),
    ({"network": Network(), "bandwidth": "1Gb/s"}, "network"),
    ({"bandwidth": "fast"}, "bandwidth"),
    ({"bandwidth": [1]}, "bandwidth"),
    ({"bandwidth": 10**400}, "bandwidth"),
    ({"link_latency": np.float64(-1)}, "link_latency"),
    ({"colour": "red"}, "colour"),
    ({"max_memory": "lots"}, "max_memory"),
    ({"max_memory": -1}, "max_memory"),
    ({"max_memory": "80%"}, "max_memory"),
    ({"max_memory": [1]}, "max_memory"),
]


@pytest.mark.parametrize("bad,name", SIMULATE_BAD, ids=[show(b) for b, _ in SIMULATE_BAD])
def test_simulate_bad_argument(bad, name):
    kw = {"topology": TOPO, "algorithm": "ring", "sizes": "1KiB"}
    kw.update(bad)
    msg = _message(lambda: flowemu.simulate(kw.pop("topology"), kw.pop("algorithm"), **kw))
    assert name in msg


def test_unknown_keyword_names_it_and_the_allowed_ones():
    msg = _message(lambda: flowemu.simulate(TOPO, "ring", "1KiB", colour="red"))
    assert msg.startswith("simulate: unknown keyword argument(s) colour")
    assert "max_memory" in msg and "bandwidth" in msg


#: every public function and constructor that takes keywords, called with one misspelt:
#: (call, the message it must start with), written out by hand
MISSPELT = [
    (lambda: Network(bandwith="400Gb/s"),
     ("Network: unknown keyword argument(s) bandwith (did you mean 'bandwidth'?); allowed: "
      "bandwidth, link_latency, hop_latency, alpha, gamma, delta, incast_threshold, "
      "incast_slope")),
    (lambda: flowemu.simulate(TOPO, "ring", "1KiB", bandwith="400Gb/s"),
     ("simulate: unknown keyword argument(s) bandwith (did you mean 'bandwidth'?); allowed: "
      "sizes, ecmp, seed, ")),
    (lambda: flowemu.simulate_jobs(TOPO, ["algorithm=ring size=1KiB"], synk="barrier"),
     "simulate_jobs: unknown keyword argument(s) synk (did you mean 'sync'?); allowed: sync, "),
    (lambda: flowemu.compare(pd.DataFrame(), bye="label"),
     "compare: unknown keyword argument(s) bye (did you mean 'by'?); allowed: df, by"),
    (lambda: flowemu.load(datset="results"),
     "load: unknown keyword argument(s) datset (did you mean 'dataset'?); allowed: dataset"),
    (lambda: flowemu.fit("m.csv", bandwidht="400Gb/s"),
     ("fit: unknown keyword argument(s) bandwidht (did you mean 'bandwidth'?); allowed: data, "
      "bandwidth, algorithm, ranks")),
    (lambda: flowemu.sweep("s.toml", job=2),
     ("sweep: unknown keyword argument(s) job (did you mean 'jobs'?); allowed: config_path, "
      "out, jobs, ")),
    (lambda: flowemu.read_traffic("t.csv", max_mem="1GiB"),
     ("read_traffic: unknown keyword argument(s) max_mem (did you mean 'max_memory'?); "
      "allowed: path, max_memory")),
    (lambda: flowemu.register_algorithm("mine", lambda p, topo, blocks: None, familes=["torus"]),
     ("register_algorithm: unknown keyword argument(s) familes (did you mean 'families'?); "
      "allowed: name, build, params, doc, families, auto_param, sized, replace")),
    (lambda: flowemu.unregister_algorithm(nmae="mine"),
     ("unregister_algorithm: unknown keyword argument(s) nmae (did you mean 'name'?); "
      "allowed: name")),
    (lambda: flowemu.verify("ring", 4, colective="allreduce"),
     ("verify: unknown keyword argument(s) colective (did you mean 'collective'?); allowed: "
      "algorithm, ranks, topology, size, network, max_memory, collective")),
]


@pytest.mark.parametrize("call,start", MISSPELT, ids=[m.split(":")[0] for _, m in MISSPELT])
def test_a_misspelt_keyword_is_a_config_error_with_a_suggestion(call, start):
    """An unknown keyword is a ConfigError (not Python's TypeError) naming it, the
    closest allowed keyword and every allowed one (docs/getting-started.md)."""
    msg = _message(call)
    assert msg.startswith(start), msg


def test_plain_numbers_in_messages():
    msg = _message(lambda: flowemu.simulate(TOPO, "ring", "1KiB", ranks=np.int64(17)))
    assert "17 ranks" in msg
    msg = _message(lambda: flowemu.simulate(TOPO, "ring", "1KiB", seed=np.float32(1.5)))
    assert "seed: 1.5 is not allowed" in msg


def test_show_prints_plain_values():
    assert show(np.int64(3)) == "3"
    assert show(np.float64(0.5)) == "0.5"
    assert show(np.array([1, 2])) == "[1, 2]"
    assert show(pd.Series([1.0])) == "[1.0]"
    assert show([np.int64(1), "a"]) == "[1, 'a']"
    assert show(np.bool_(True)) == "True"
    assert len(show(np.arange(10**6))) < 200


# ------------------------------------------------------- numpy/pandas inputs

def test_numpy_and_pandas_inputs_equal_plain_ones():
    plain = flowemu.simulate(TOPO, "ring", [1024, 2**20], seed=0, ranks=16, threads=1)
    for sizes in (np.array([1024, 2**20]), np.array([1024.0, 2.0**20]),
                  pd.Series([2**20, 1024]), [np.int64(1024), np.int32(2**20)],
                  ["1KiB", np.int64(2**20)], pd.Index([1024, 2**20])):
        got = flowemu.simulate(TOPO, "ring", sizes, seed=np.int64(0), ranks=np.int64(16),
                               threads=np.int64(1))
        pd.testing.assert_frame_equal(got, plain)
    got = flowemu.simulate(np.str_(TOPO), np.str_("ring"), "1KiB,1MiB", ecmp=np.str_("split"))
    pd.testing.assert_frame_equal(got, plain)
    # a 0-d integer array (np.array(16); it printed as 16 and was refused as no integer)
    got = flowemu.simulate(TOPO, "ring", [1024, 2**20], seed=np.array(0), ranks=np.array(16),
                           threads=np.array(1))
    pd.testing.assert_frame_equal(got, plain)


def test_numpy_network_fields_equal_plain_ones():
    plain = flowemu.simulate(TOPO, "ring", "1MiB", bandwidth="1GB/s", incast_threshold=3,
                             incast_slope="1ns")
    got = flowemu.simulate(TOPO, "ring", "1MiB", bandwidth=np.str_("1GB/s"),
                           incast_threshold=np.int64(3), incast_slope=np.str_("1ns"))
    pd.testing.assert_frame_equal(got, plain)
    # a numpy number has no unit either: refused as a plain one is
    for bare in (np.float64(1e9), 1e9):
        with pytest.raises(ConfigError, match=r"^bandwidth=1e\+09: a bare number has no unit"):
            flowemu.simulate(TOPO, "ring", "1MiB", bandwidth=bare)


def test_single_size_number():
    df = flowemu.simulate(TOPO, "ring", np.int64(4096))
    assert df.size_bytes.tolist() == [4096]


# ------------------------------------------------------------- time_traffic

GOOD_ROWS = [(0, 0, 1, 1e6), (0, 1, 0, 1e6), (1, 0, 1, 5e5)]


def test_traffic_forms_agree_with_closed_form(tmp_path):
    # step 0: two 1 MB flows on opposite link directions at 1 GB/s = 1 ms each;
    # step 1: one 0.5 MB flow = 0.5 ms; total 1.5 ms for 2.5 MB
    expect = 1e-3 + 0.5e-3
    path = tmp_path / "t.csv"
    _frame(GOOD_ROWS).to_csv(path, index=False)
    frame = _frame(GOOD_ROWS).astype({"step": np.int32, "src": np.int64, "dst": np.uint16,
                                      "bytes": np.float32})
    lists = [Traffic([0, 1], [1, 0], [1e6, 1e6]), Traffic([0], [1], [5e5])]
    results = [flowemu.time_traffic(TOPO, t, ecmp="dor", name="x", **FAST)
               for t in (str(path), path, frame, lists)]
    for r in results:
        assert r.time_s.iloc[0] == pytest.approx(expect, rel=1e-12)
        assert r.size_bytes.iloc[0] == pytest.approx(2.5e6)
        assert r.note.iloc[0] == ""
        pd.testing.assert_frame_equal(r, results[0])


def test_traffic_steps_need_not_be_contiguous():
    a = flowemu.time_traffic(TOPO, _frame([(7, 0, 1, 1e6), (3, 1, 2, 1e6)]), **FAST)
    b = flowemu.time_traffic(TOPO, _frame([(0, 1, 2, 1e6), (1, 0, 1, 1e6)]), **FAST)
    assert a.time_s.iloc[0] == pytest.approx(2e-3) == b.time_s.iloc[0]
    assert a.steps.iloc[0] == 2


TRAFFIC_BAD = [
    ([], "empty"),
    ((), "empty"),
    (None, "traffic"),
    (42, "traffic"),
    ({"step": [0]}, "traffic"),
    ([42], "step 0"),
    ([Traffic([], [], [])], "no flows"),
    (Traffic([0], [0], [1.0]), "src equals dst"),
    ([Traffic([0], [1], [-1.0])], "bytes"),
    ([Traffic([0], [1], [np.nan])], "bytes"),
    ([Traffic([0, 1], [1, 0], [0.0, 0.0]), Traffic([], [], [])], "every flow carries 0 bytes"),
    ([Traffic([-1], [1], [1.0])], "negative"),
    ([Traffic([0], [99], [1.0])], "rank 99"),
    (_frame([]), "no rows"),
    (_frame([(0, 0, 1)], ("step", "src", "dst")), "missing column(s) bytes"),
    (_frame([(0, 0, 1, 5, 1)], ("step", "src", "dst", "bytes", "colour")),
     "extra column(s) colour"),
    (_frame([(0, 0, 1, 5, 1)], ("step", "src", "dst", "bytes", "bytes")), "more than once"),
    (_frame([(0, 0, 1, -5)]), "bytes"),
    (_frame([(0, 0, 1, np.nan)]), "bytes"),
    (_frame([(0, 0, 1, np.inf)]), "bytes"),
    # True was read as 1 byte; 1e30 passed the cap every size has
    (_frame([(0, 0, 1, True)]), "column bytes row 0: True is not a number of bytes"),
    (_frame([(0, 0, 1, 1.0)] * 1500 + [(0, 0, 1, True)]), "column bytes row 1500: True"),
    (_frame([(0, 0, 1, 1e30)]), ("column bytes row 0: 1e+30 is not a number of bytes in "
                                "0..2**53")),
    (_frame([(0, 0, 0, 5)]), "src equals dst"),
    (_frame([(0, 0.5, 1, 5)]), "src"),
    (_frame([(0, -1, 1, 5)]), "src"),
    (_frame([(0, 0, 2**40, 5)]), "dst"),
    (_frame([(-1, 0, 1, 5)]), "step"),
    (_frame([("x", 0, 1, 5)]), "step"),
    (_frame([(0, "a", 1, 5)]), "src"),
    (_frame([(0, [1], 1, 5)]), "src"),
    (_frame([(0, 0, 99, 5)]), "rank 99"),
    ("/nonexistent/t.csv", "does not exist"),
]


@pytest.mark.parametrize("traffic,needle", TRAFFIC_BAD, ids=[show(t)[:40] for t, _ in TRAFFIC_BAD])
def test_time_traffic_bad_traffic(traffic, needle):
    msg = _message(lambda: flowemu.time_traffic(TOPO, traffic))
    assert "traffic" in msg or "Traffic" in msg
    assert needle in msg


@pytest.mark.parametrize("bad,name", [
    ({"name": 3}, "name"), ({"seed": "x"}, "seed"), ({"ecmp": "any"}, "ecmp"),
    ({"topology": 3}, "topology"), ({"network": 1}, "network"), ({"speed": 1}, "speed"),
    ({"threads": 0}, "threads"), ({"max_memory": "1KiB"}, "max_memory"),
])
def test_time_traffic_bad_argument(bad, name):
    kw = {"topology": TOPO, "traffic": _frame(GOOD_ROWS)}
    kw.update(bad)
    msg = _message(lambda: flowemu.time_traffic(kw.pop("topology"), kw.pop("traffic"), **kw))
    assert name in msg


def test_traffic_of_no_bytes_is_nothing_to_time(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("step,src,dst,bytes\n0,0,1,0\n1,1,0,0\n")
    msg = _message(lambda: flowemu.time_traffic(TOPO, path))
    assert "t.csv" in msg and "every flow carries 0 bytes; there is nothing to time" in msg
    assert len(flowemu.read_traffic(path)) == 2     # reading it is fine (a background may)


@pytest.mark.parametrize("text,needle", [
    ("step,src,dst,bytes,colour\n0,0,1,5,red\n", "extra column(s) colour"),
    (",step,src,dst,bytes\n0,0,0,1,5\n", "index=False"),
    ("step,src,dst\n0,0,1\n", "missing column(s) bytes"),
    ("step,src,dst,bytes\n", "no rows"),
    ("", "cannot read"),
    # no header row: pandas names the columns after the first flow
    ("0,0,1,10\n0,1,0,10\n", ("the file has no header row; its first line must name the "
                              "columns, step,src,dst,bytes")),
    # a field more than the header on every row: pandas took the first column
    # for an index and read step 7, src 0 as src 7 (the flows were timed)
    ("step,src,dst,bytes\n7,0,1,2,1000000\n8,0,1,2,1000000\n",
     "line 2 has 5 fields, the header names 4"),
    ("step,src,dst,bytes\n0,0,1,10\n1,0,1,2,5\n", "line 3 has 5 fields, the header names 4"),
    ("step,src,dst,bytes\n0,0,1,100,5\n", "line 2 has 5 fields"),
    # a trailing comma on the header: no index there (the hint said to_csv's index)
    ("step,src,dst,bytes,\n0,0,1,100,\n", ("extra column(s) Unnamed: 4 (a trailing comma on "
                                          "the header line?)")),
    # a short row: its missing fields read as empty, not as 'nan is not a number'
    ("step,src,dst,bytes\n0,0,1,100\n0,1\n", "column dst row 1 (line 3): the field is empty"),
    # an integer past 2**53 rounded to one in range as a double
    ("step,src,dst,bytes\n0,0,1,9007199254740993\n", ("column bytes row 0 (line 2): "
                                                       "9007199254740993 is not a number of "
                                                       "bytes in 0..2**53")),
    # 'nan' reads as a missing value: it was said to be empty, which it is not
    ("step,src,dst,bytes\n0,0,1,nan\n", ("column bytes row 0 (line 2): the field is empty or "
                                        "NaN")),
])
def test_traffic_csv_columns(tmp_path, text, needle):
    path = tmp_path / "t.csv"
    path.write_text(text)
    msg = _message(lambda: flowemu.time_traffic(TOPO, path))
    assert needle in msg and "t.csv" in msg
    assert needle in _message(lambda: flowemu.read_traffic(path))


@pytest.mark.parametrize("text,needle", [
    # rows count from 0 as a DataFrame's; the line is the file's (header line 1)
    ("step,src,dst,bytes\n0,0,1,100\n0,1,2,abc\n", "column bytes row 1 (line 3): 'abc'"),
    # pandas skips blank lines: the row's line counts them
    ("step,src,dst,bytes\n\n0,0,1,100\n\n\n0,1,1,5\n", "row 1 (line 6): src equals dst"),
    ("\nstep,src,dst,bytes\n0,0,1,-5\n", "column bytes row 0 (line 3): -5"),
    # a line of empty fields is a row to pandas (a blank one is not)
    ("step,src,dst,bytes\n0,0,1,100\n,,,\n0,2,2,1\n", "column step row 1 (line 3): the field is empty"),
    ('step,src,dst,bytes\n0,0,1,100\n""\n0,2,2,1\n', "column step row 1 (line 3): the field is empty"),
    ("step,src,dst,bytes\n0,0,1,100\n \t \n0,2,2,1\n", "row 1 (line 4): src equals dst"),
    # a byte-order mark alone on the first line
    ("\ufeff\nstep,src,dst,bytes\n0,0,1,100\n0,2,2,1\n", "row 1 (line 4): src equals dst"),
    # a quoted field over lines 2-3: the row after it is on line 4
    ('step,src,dst,bytes\n0,0,1,"1\n0"\n0,2,x,1\n', "column dst row 1 (line 4): 'x'"),
])
def test_traffic_csv_rows_name_their_line(tmp_path, text, needle):
    """A message naming a row of a CSV file also names the file line it
    came from (the rows were counted from 0 after the header, so row 1 was
    the file's line 3, or further on past blank lines)."""
    path = tmp_path / "t.csv"
    path.write_text(text)
    assert needle in _message(lambda: flowemu.read_traffic(path))
    assert needle in _message(lambda: flowemu.simulate(TOPO, "ring", background=str(path)))


def test_traffic_size_bytes_is_an_integer_where_the_bytes_are_whole(tmp_path):
    """``size_bytes`` of a traffic's row was a float (2000000.0) where an
    algorithm's is an integer; a traffic of fractional bytes keeps them."""
    path = tmp_path / "t.csv"
    path.write_text("step,src,dst,bytes\n0,0,1,1000000\n1,1,2,1000000\n")
    whole = flowemu.time_traffic(TOPO, path)
    assert whole["size_bytes"].dtype == np.int64 and whole["size_bytes"][0] == 2_000_000
    path.write_text("step,src,dst,bytes\n0,0,1,1000000\n1,1,2,1000000.5\n")
    assert flowemu.time_traffic(TOPO, path)["size_bytes"][0] == 2_000_000.5


def test_traffic_dataframe_rows_have_no_line():
    msg = _message(lambda: flowemu.time_traffic(TOPO, _frame([(0, 0, 1, 5), (0, 2, 2, 5)])))
    assert "row 1: src equals dst" in msg and "line" not in msg


def test_a_header_written_with_spaces_reads(tmp_path):
    """``step, src, dst, bytes`` (as one types it) was refused as 'extra
    column(s)  src,  dst, ...' with the spaces invisible; the names are
    read without them, and the flows are the same."""
    spaced, plain = tmp_path / "s.csv", tmp_path / "p.csv"
    spaced.write_text("step, src, dst, bytes\n0, 0, 1, 1e6\n0, 2, 3, 2e6\n")
    plain.write_text("step,src,dst,bytes\n0,0,1,1e6\n0,2,3,2e6\n")
    a, b = flowemu.time_traffic(TOPO, spaced), flowemu.time_traffic(TOPO, plain)
    assert a["time_s"][0] == b["time_s"][0] and a["size_bytes"][0] == 3e6


def test_a_trailing_comma_reads_as_the_same_flows(tmp_path):
    """``0,0,1,100,`` (a spreadsheet's trailing comma) is the flow 0 -> 1 of
    100 bytes; it was read shifted (src 0 as the index, dst 100, bytes nan)."""
    comma, plain = tmp_path / "c.csv", tmp_path / "p.csv"
    comma.write_text("step,src,dst,bytes\n0,0,1,100,\n0,2,3,200,\n")
    plain.write_text("step,src,dst,bytes\n0,0,1,100\n0,2,3,200\n")
    (a,), (b,) = flowemu.read_traffic(comma), flowemu.read_traffic(plain)
    assert a.src.tolist() == b.src.tolist() == [0, 2] and a.dst.tolist() == [1, 3]
    assert a.share.tolist() == b.share.tolist() == [100.0, 200.0]


def test_traffic_directory_is_refused(tmp_path):
    assert "not a file" in _message(lambda: flowemu.time_traffic(TOPO, tmp_path))


def test_traffic_object_bad_arrays():
    assert "src" in _message(lambda: Traffic(["a"], [1], [1.0]))
    assert "equal lengths" in _message(lambda: Traffic([0, 1], [1], [1.0]))
    assert "dst" in _message(lambda: Traffic([0], [2**40], [1.0]))


# --------------------------------------------------------------- congestion

@pytest.mark.parametrize("bad,name", [
    ({"algorithm": None}, "algorithm"), ({"seed": "x"}, "seed"), ({"ranks": 99}, "ranks"),
    ({"ecmp": 1}, "ecmp"), ({"sizes": "1KiB"}, "sizes"), ({"topology": 1.5}, "topology"),
    ({"network": Network(), "alpha": 1}, "network"), ({"max_memory": "1KiB"}, "max_memory"),
])
def test_congestion_bad_argument(bad, name):
    kw = {"topology": TOPO, "algorithm": "ring"}
    kw.update(bad)
    msg = _message(lambda: flowemu.congestion(kw.pop("topology"), kw.pop("algorithm"), **kw))
    assert name in msg


def test_congestion_numpy_inputs_and_note_column():
    steps, summary = flowemu.congestion(TOPO, "ring", ranks=np.int64(8), seed=np.uint8(0))
    plain_steps, plain_summary = flowemu.congestion(TOPO, "ring", ranks=8)
    pd.testing.assert_frame_equal(steps, plain_steps)
    pd.testing.assert_frame_equal(summary, plain_summary)
    # 8 ranks are not the 16 nodes of the torus: the fallback is said, as in simulate
    assert "8 ranks are not the 16 nodes" in summary.note.iloc[0]
    assert summary.note.iloc[0] == flowemu.simulate(TOPO, "ring", "1KiB", ranks=8).note.iloc[0]


# ------------------------------------------------------------------ profile

def _schedule(p=16):
    return get_algorithm("ring").build(p, parse_topology(TOPO), False, ports=1)


@pytest.mark.parametrize("bad,name", [
    ({"schedule": None}, "schedule"), ({"schedule": "ring"}, "schedule"),
    ({"topology": 5}, "topology"), ({"network": "x"}, "network"),
    ({"ecmp": "x"}, "ecmp"), ({"seed": 0.5}, "seed"), ({"congestion": "yes"}, "congestion"),
    ({"threads": 0}, "threads"), ({"mapping": [[1], [2, 3]]}, "mapping"),
    ({"mapping": [0] * 16}, "mapping"), ({"mapping": list(range(8))}, "ranks 0..7"),
    ({"mapping": ["a"] * 16}, "mapping"), ({"max_memory": "1KiB"}, "max_memory"),
])
def test_profile_bad_argument(bad, name):
    kw = {"schedule": _schedule(), "topology": parse_topology(TOPO)}
    kw.update(bad)
    msg = _message(lambda: profile(kw.pop("schedule"), kw.pop("topology"), **kw))
    assert name in msg


def test_profile_accepts_a_spec_and_numpy_values():
    a = profile(_schedule(), TOPO, seed=np.int64(0), threads=np.int8(1),
                congestion=np.bool_(False)).times([1e6])
    b = profile(_schedule(), parse_topology(TOPO), threads=1).times([1e6])
    assert a.tolist() == b.tolist()


# ----------------------------------------------------------------- property

ANY = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
    st.text(max_size=12), st.binary(max_size=4),
    st.lists(st.integers(-5, 2**21), max_size=3), st.lists(st.text(max_size=5), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.tuples(st.integers(), st.floats()),
    st.integers(-3, 40).map(np.int64), st.floats(-1e3, 1e7).map(np.float64),
    st.lists(st.floats(-10, 1e6), min_size=0, max_size=3).map(np.array),
    st.sampled_from(["torus:4x4", "ring", "split", "1KiB", "1MiB", "400Gb/s", "1ns",
                     "1e999", "torus:2", "mesh:2x2", "ring:ports=2", "", " ", "-1"]),
)


@pytest.mark.parametrize("name", ["/\n", "a\tb/net.toml", "missing.toml"])
def test_a_preset_file_name_is_shown_on_one_line(name):
    """(hypothesis drew network="/\n": the file name went into the message
    as it was, newline included)"""
    with pytest.raises(ConfigError) as info:
        flowemu.simulate("torus:4", "ring", "1KiB", network=name, threads=1)
    text = str(info.value)
    assert "\n" not in text and "\t" not in text
    assert text.startswith("network: ") and "file not found" in text
    assert (repr(name) if not name.isprintable() else name) in text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arg=st.sampled_from(["topology", "algorithm", "sizes", "ecmp", "seed", "ranks",
                            "network", "threads", "max_memory", "bandwidth", "alpha",
                            "incast_threshold"]),
       value=ANY)
def test_simulate_raises_only_config_errors(arg, value):
    kw = {"topology": "torus:4", "algorithm": "ring", "sizes": "1KiB", "threads": 1}
    kw[arg] = value
    try:
        df = flowemu.simulate(kw.pop("topology"), kw.pop("algorithm"), **kw)
    except ConfigError as exc:
        assert "\n" not in str(exc) and "np." not in str(exc)
    else:
        assert len(df) >= 1 and (df.time_s >= 0).all()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(column=st.sampled_from(["step", "src", "dst", "bytes"]), value=ANY,
       arg=st.sampled_from(["traffic", "name", "seed", "ecmp"]))
def test_time_traffic_raises_only_config_errors(column, value, arg):
    rows = _frame([(0, 0, 1, 1e3), (1, 1, 2, 1e3)]).astype(object)
    kw = {"traffic": rows, "name": "t", "seed": 0, "ecmp": "split"}
    if arg == "traffic":
        try:
            rows.at[0, column] = value
        except (ValueError, TypeError):
            return   # pandas itself cannot store it: nothing reaches flowemu
    else:
        kw[arg] = value
    try:
        flowemu.time_traffic("torus:4", kw.pop("traffic"), **kw)
    except ConfigError as exc:
        assert "\n" not in str(exc) and "np." not in str(exc)


# ----------------------------------------------------- paths and streams

def test_path_arguments_that_are_no_path_are_named(tmp_path):
    """They were TypeErrors from pathlib (sweep(None), load(5), plot(df, 5))
    or, for a sweep's stream, an AttributeError after the dataset's manifest
    was written."""
    good = tmp_path / "s.toml"
    good.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n')
    df = flowemu.simulate(TOPO, "ring", "1KiB")
    for call, needle in (
            (lambda: flowemu.sweep(None), ("config_path: None is not allowed; expected the "
                                          "path of a sweep file")),
            (lambda: flowemu.sweep([str(good)]), "config_path: "),
            (lambda: flowemu.sweep(good, out=5), ("out: 5 is not allowed; expected the path of "
                                                 "the dataset directory")),
            (lambda: flowemu.load(None), "dataset: None is not allowed"),
            (lambda: flowemu.load(df), "dataset: a DataFrame (loaded already) is not allowed"),
            (lambda: flowemu.plot(df, 5), "out: 5 is not allowed; expected a file name"),
            (lambda: flowemu.plot(df, tmp_path / "p.png", title=5), "title: 5 is not allowed"),
            (lambda: flowemu.plot(df[["size_bytes", "goodput_Bps"]], tmp_path / "p.png"),
             "plot: the data lacks column(s) label or algorithm"),
            (lambda: flowemu.fit(None), "data: None is not allowed; expected a file path"),
            (lambda: flowemu.fit({"algorithm": ["ring"]}), "data: {'algorithm'"),
            (lambda: flowemu.fit(pd.DataFrame({"algorithm": [], "ranks": [], "size": [],
                                               "time": []})), "data: no measurements")):
        assert needle in _message(call)
    out = tmp_path / "ds"
    assert "stream: 5 is not allowed; expected a text stream" in _message(
        lambda: flowemu.sweep(good, out=out, stream=5))
    assert not out.exists()   # refused before anything was written


def test_arguments_that_would_change_nothing_or_misname_their_cause(tmp_path):
    """Each was accepted (and changed nothing) or blamed something else; the
    command line refused the first four alike."""
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n')
    sched = flowemu.schedule("swing", TOPO, variant="bandwidth")
    (tmp_path / "other").mkdir()
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "other" / "x.parquet")
    (tmp_path / "r1.txt").write_text("time_s\n1\n")
    for call, needle in (
            (lambda: flowemu.global_bandwidth(TOPO, alpha="1us"),
             "alpha: does not change a global bandwidth"),
            (lambda: flowemu.profile(sched, TOPO, seed=5),
             "seed: 5 applies only to ecmp='hash'"),
            (lambda: flowemu.sweep(sweep_file, out=tmp_path / "d", scheduler_timeout=5),
             "scheduler_timeout: applies only with scheduler="),
            (lambda: flowemu.sweep(sweep_file, out=tmp_path / "d", retry_errors="yes"),
             "retry_errors: 'yes' is not allowed; expected True or False"),
            (lambda: flowemu.load(tmp_path / "other"),
             ("is no flowemu dataset (no _manifest.json, no part-*.parquet files; it holds "
             "x.parquet)")),
            (lambda: flowemu.load(tmp_path / "r1.txt"), "is neither a CSV (.csv) nor a parquet"),
            (lambda: flowemu.simulate(TOPO, "ring", "1KiB", fail="link:-1"),
             "fail: 'link:-1': link -1 is out of range; expected link ids in 0..63"),
            (lambda: flowemu.simulate(TOPO, "ring", "1KiB", degrade="link:0=1e-300"),
             "degrade: 'link:0=1e-300' leaves a link 5e-290 bytes/s")):
        assert needle in _message(call)
    assert flowemu.global_bandwidth(TOPO, bandwidth="100Gb/s")["global_bw"].iloc[0] > 0
    # a placement file as a pathlib.Path, as a string
    (tmp_path / "pl.txt").write_text("3\n2\n1\n0\n")
    by_path = flowemu.simulate("torus:2x2", "ring", "1KiB", placement=tmp_path / "pl.txt")
    by_text = flowemu.simulate("torus:2x2", "ring", "1KiB", placement=str(tmp_path / "pl.txt"))
    assert by_path["time_s"].iloc[0] == by_text["time_s"].iloc[0]


def test_schedule_refuses_a_size_or_network_its_algorithm_does_not_plan_for():
    """They were ignored (the docstring said so): ring's steps are the same
    at every size; gentree plans for both."""
    for kw in ({"size": "1MiB"}, {"network": flowemu.Network()}):
        (arg,) = kw
        assert f"{arg}: ring's steps are the same at every size" in _message(
            lambda kw=kw: flowemu.schedule("ring", TOPO, **kw))
    small = flowemu.schedule("gentree", "tree:8", size="1KiB")
    large = flowemu.schedule("gentree", "tree:8", size="1GiB")
    assert small.num_steps >= 1 and large.num_steps >= 1

"""flowemu.flows() and ``run --flows-out``: step selection, user traffic,
progress, the vectorized texts, atomic output, bad input."""

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowemu
from flowemu import ConfigError
from flowemu.api.flows import FLOW_COLUMNS, describe_paths, write_flows
from flowemu.cli.app import main
from flowemu.topology import parse_topology

ROOT = Path(__file__).resolve().parents[2]
FAST = {"bandwidth": "1GB/s", "link_latency": 0, "hop_latency": 0}


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# -------------------------------------------------------------- step selection

def test_flows_columns_and_selection_by_index_range_and_label():
    every = flowemu.flows("torus:8x8", "recdoub:variant=bandwidth", size="1MiB", progress=False)
    assert list(every.columns) == FLOW_COLUMNS
    labels = list(dict.fromkeys(every.label))
    assert labels[:2] == ["rs0", "rs1"] and len(labels) == 12   # 2 log2(64) steps
    # recursive halving: every rank sends one flow per step
    assert (every.groupby("step").size() == 64).all()
    part = flowemu.flows("torus:8x8", "recdoub:variant=bandwidth", steps="0,3-4,ag0",
                         progress=False)
    assert sorted(set(part.step)) == [0, 3, 4, 6]
    for k in (0, 3, 4, 6):
        pd.testing.assert_frame_equal(part[part.step == k].reset_index(drop=True),
                                      every[every.step == k].reset_index(drop=True))
    same = [flowemu.flows("torus:8x8", "recdoub:variant=bandwidth", steps=s, progress=False)
            for s in ([0, 3, 4, "ag0"], np.array([0, 3, 4, 6]), "rs0,rs3,rs4,6")]
    for s in same:
        pd.testing.assert_frame_equal(s, part)


def test_flows_rows_follow_closed_forms():
    # ring on a 1-D torus of 8, one port: each step every rank sends n/8 to
    # its neighbour over one link at full bandwidth, so rate = 1e9 B/s and
    # finish = (n/8)/1e9 s
    df = flowemu.flows("torus:8", "ring:ports=1", size=8_000_000, steps="0", **FAST,
                       ecmp="dor", progress=False)
    assert len(df) == 8
    assert (df.bytes == 1e6).all() and np.allclose(df.rate_Bps, 1e9)
    assert np.allclose(df.finish_s, 1e-3)
    assert (df.hops == 1).all()
    # one hop: the path is src>dst
    assert (df.path == df.src_node.astype(str) + ">" + df.dst_node.astype(str)).all()


def test_flows_of_user_traffic(tmp_path):
    frame = pd.DataFrame({"step": [5, 5, 9], "src": [0, 1, 2], "dst": [1, 0, 3],
                          "bytes": [1e6, 1e6, 2e6]})
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    for traffic in (frame, path, str(path)):
        df = flowemu.flows("torus:4x4", traffic=traffic, ecmp="dor", progress=False, **FAST)
        assert df.label.tolist() == ["step5", "step5", "step9"]
        assert df.bytes.tolist() == [1e6, 1e6, 2e6]
        # one flow per link direction at 1 GB/s
        assert np.allclose(df.finish_s, [1e-3, 1e-3, 2e-3])
    df = flowemu.flows("torus:4x4", traffic=frame, steps="step9", progress=False)
    assert df.src.tolist() == [2]


def test_auto_variant_details_the_fastest_at_size():
    for size, fastest in (("16B", "latency"), ("64MiB", "bandwidth")):
        df = flowemu.flows("torus:8x8", "recdoub:variant=auto", size=size, progress=False)
        best = flowemu.simulate("torus:8x8", "recdoub:variant=auto", size).variant.iloc[0]
        assert best == fastest
        pd.testing.assert_frame_equal(
            df, flowemu.flows("torus:8x8", f"recdoub:variant={fastest}", size=size))


def test_repeated_steps_are_described_alike():
    # ring repeats one pattern: its steps are solved once and their rows agree
    df = flowemu.flows("torus:4x4", "ring", steps="0-2", progress=False)
    a, b = df[df.step == 0], df[df.step == 2]
    for col in ("src", "dst", "bytes", "rate_Bps", "finish_s", "links", "path"):
        assert a[col].tolist() == b[col].tolist()


# ----------------------------------------------------------- vectorized texts

def _slow_describe(topology, routes, src, ecmp):
    """The per-flow loop the vectorized version replaced (reference)."""
    ls, ld = topology.link_src, topology.link_dst
    links, paths = [], []
    for f in range(routes.num_flows):
        lk, fr = routes.flow_links(f)
        links.append(" ".join(f"{int(a)}:{b:.6g}" for a, b in zip(lk, fr)))
        if ecmp == "split":
            paths.append(" ".join(f"{ls[a]}>{ld[a]}" for a in lk))
        else:
            paths.append(">".join([str(int(src[f]))] + [str(int(ld[a])) for a in lk]))
    return links, paths


@pytest.mark.parametrize("spec", ["torus:8x8", "mesh:5x3", "torus:4x4x4", "torus:6"])
@pytest.mark.parametrize("ecmp", ["split", "dor", "hash"])
def test_describe_paths_equals_the_per_flow_loop(spec, ecmp):
    topo = parse_topology(spec)
    rng = np.random.default_rng(1)
    src = rng.integers(0, topo.num_nodes, 200)
    dst = rng.integers(0, topo.num_nodes, 200)   # src == dst rows: no entries
    routes = topo.route(src, dst, ecmp=ecmp, seed=3)
    links, paths = describe_paths(topo, routes, src, ecmp)
    slow_links, slow_paths = _slow_describe(topo, routes, src, ecmp)
    assert list(links) == slow_links and list(paths) == slow_paths
    # with the names cache switched off (a big topology, few flows)
    links, paths = describe_paths(topo, routes, src, ecmp, names={"unused": True})
    assert list(links) == slow_links and list(paths) == slow_paths


def _edges_of_links(topo, links_text):
    """The edges ``head>tail`` a ``links`` text names (independent of ``path``)."""
    ids = [int(item.split(":")[0]) for item in links_text.split()]
    return [f"{topo.link_src[i]}>{topo.link_dst[i]}" for i in ids]


def _edges_of_path(path_text):
    """The edges a ``path`` text names: a chain ``a>b>c`` or hops ``a>b b>c``."""
    if " " in path_text:
        return path_text.split()
    nodes = path_text.split(">")
    return [f"{a}>{b}" for a, b in itertools.pairwise(nodes)]


@pytest.mark.parametrize("spec, ecmp", [("dragonfly:a=4,p=2,h=2", "valiant"),
                                        ("dragonfly:a=4,p=2,h=2", "hash"),
                                        ("torus:6x6", "hash"), ("fattree:k=4", "split")])
def test_path_text_names_the_edges_the_links_name(spec, ecmp):
    """A valiant flow crosses several intermediate groups (entries below 1):
    its path was written as one chain through every entry's tail, naming
    hops that do not exist (0>72>80>76>73...); a flow spread over several
    paths is its edges, one hop each."""
    topo = parse_topology(spec)
    rng = np.random.default_rng(4)
    n = topo.num_endpoints
    src, dst = rng.integers(0, n, 60), rng.integers(0, n, 60)
    keep = src != dst
    traffic = pd.DataFrame({"step": 0, "src": src[keep], "dst": dst[keep], "bytes": 1e6})
    fl = flowemu.flows(spec, traffic=traffic, ecmp=ecmp)
    spread = 0
    for links, path in zip(fl["links"], fl["path"]):
        assert _edges_of_path(path) == _edges_of_links(topo, links)
        spread += " " in path
    assert spread > 0 if ecmp in ("valiant", "split") else spread == 0


# --------------------------------------------------------------- bad input

FLOWS_BAD = [
    ({"algorithm": None}, "exactly one"),
    ({"traffic": pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": [1.0]})},
     "exactly one"),
    ({"steps": "zz"}, "labelled 'zz'"),
    ({"steps": "99"}, "step 99 does not exist"),
    ({"steps": -1}, "step -1 does not exist"),
    ({"steps": "3-1"}, "range '3-1'"),
    ({"steps": "1-99"}, "range '1-99'"),
    ({"steps": [1.5]}, "steps: 1.5"),
    ({"steps": ""}, "steps"),
    ({"steps": []}, "selects no step"),
    ({"steps": {"a"}}, "steps"),
    ({"steps": np.float64(2.0)}, "steps: 2.0"),
    ({"size": -1}, "size"),
    ({"size": "lots"}, "size"),
    ({"size": [1, 2]}, "size"),
    ({"progress": "yes"}, "progress"),
    ({"seed": "x"}, "seed"),
    ({"ranks": 99}, "ranks"),
    ({"colour": 1}, "flows: unknown keyword argument(s) colour"),
    ({"max_memory": "64KiB"}, "max_memory"),
]


@pytest.mark.parametrize("bad,needle", FLOWS_BAD, ids=[str(b)[:40] for b, _ in FLOWS_BAD])
def test_flows_bad_argument(bad, needle):
    kw = {"topology": "torus:8x8", "algorithm": "recdoub:variant=bandwidth"}
    kw.update(bad)
    with pytest.raises(ConfigError) as info:
        flowemu.flows(kw.pop("topology"), kw.pop("algorithm"), **kw)
    msg = str(info.value)
    assert needle in msg and "np." not in msg


@pytest.mark.parametrize("bad,needle", [
    ({"size": "1MiB"}, "size: applies to an algorithm"),
    ({"ranks": 4}, "ranks: applies to an algorithm"),
    ({"steps": "step3"}, "labelled 'step3'"),
    ({"traffic": []}, "empty"),
])
def test_flows_bad_argument_with_traffic(bad, needle):
    kw = {"traffic": pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": [1.0]})}
    kw.update(bad)
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        flowemu.flows("torus:4x4", **kw)


# --------------------------------------------------------------------- CLI

def test_cli_flows_out_with_traffic_and_steps(capsys, tmp_path):
    traffic = tmp_path / "t.csv"
    traffic.write_text("step,src,dst,bytes\n0,0,1,1e6\n0,1,0,1e6\n3,0,1,5e5\n")
    out = tmp_path / "f.csv"
    code, _, err = run(capsys, ["run", "-t", "torus:4x4", "--traffic", str(traffic),
                                "--flows-out", str(out), "--flows-steps", "step3",
                                "--ecmp", "dor", "--bandwidth", "8Gb/s"])
    assert code == 0, err
    df = pd.read_csv(out)
    assert df.label.tolist() == ["step3"] and df.src.tolist() == [0] and df.dst.tolist() == [1]
    # 0.5 MB at 1 GB/s (8 Gb/s) + one hop of 100 ns + 300 ns
    assert df.finish_s.iloc[0] == pytest.approx(0.5e-3 + 400e-9)
    assert not list(tmp_path.glob(".*tmp"))


def test_cli_flows_out_parquet_by_extension(capsys, tmp_path):
    out = tmp_path / "f.parquet"
    code, _, err = run(capsys, ["run", "-t", "torus:8x8", "-a", "recdoub:variant=bandwidth",
                                "-s", "1MiB", "--flows-out", str(out), "--flows-steps", "0,ag0"])
    assert code == 0, err
    df = pd.read_parquet(out)
    assert sorted(set(df.step)) == [0, 6] and len(df) == 128


@pytest.mark.parametrize("extra,needle", [
    (["--flows-steps", "zz"], "--flows-steps: no step is labelled 'zz'"),
    (["--flows-steps", "99"], "--flows-steps: step 99 does not exist"),
    (["--flows-steps", " "], "--flows-steps"),
    (["--max-memory", "200KiB"], "the flow dump of torus:8x8 recdoub"),
    (["--max-memory", "-1"], "--max-memory"),
    (["--max-memory", "80%"], "--max-memory"),
])
def test_cli_flows_bad_input(capsys, tmp_path, extra, needle):
    out = tmp_path / "f.csv"
    code, _, err = run(capsys, ["run", "-t", "torus:8x8", "-a", "recdoub:variant=bandwidth",
                                     "-s", "1MiB", "--flows-out", str(out)] + extra)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flowemu: error:") and "Traceback" not in err
    assert needle in lines[0]
    assert not out.exists()


def test_cli_flows_size_with_traffic_is_an_error(capsys, tmp_path):
    traffic = tmp_path / "t.csv"
    traffic.write_text("step,src,dst,bytes\n0,0,1,1e6\n")
    code, _, err = run(capsys, ["run", "-t", "torus:4x4", "--traffic", str(traffic),
                                "--flows-out", str(tmp_path / "f.csv"), "--flows-size", "1MiB"])
    assert code == 2 and "--flows-size" in err


def test_progress_lines_on_stderr_for_large_dumps(tmp_path):
    # 64x64 swing has 16k flows a step, 24 steps: > 1e5 rows, so a line per step
    code = ("import sys; from flowemu.cli.app import main; sys.exit(main(['run', '-t', "
            "'torus:64x64', '-a', 'swing:variant=bandwidth', '-s', '1MiB', '--ecmp', 'dor', "
            f"'--flows-out', {str(tmp_path / 'f.parquet')!r}, '-f', 'csv']))")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT)}, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("flowemu: flows:")]
    steps = flowemu.simulate("torus:64x64", "swing:variant=bandwidth", "1MiB").steps.iloc[0]
    assert len(lines) == steps
    assert lines[-1].startswith(f"flowemu: flows: step {steps}/{steps}")
    assert "(100%)" in lines[-1]
    assert len(pd.read_parquet(tmp_path / "f.parquet")) > 100_000


def test_no_progress_for_small_dumps(capsys):
    flowemu.flows("torus:4x4", "ring", steps="0")
    assert capsys.readouterr().err == ""
    flowemu.flows("torus:4x4", "ring", steps="0", progress=True)
    assert "flowemu: flows: step 1/1 (rs0)" in capsys.readouterr().err


STEPS_ANY = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 20), st.floats(), st.text(max_size=8),
    st.lists(st.one_of(st.integers(-2, 14), st.text(max_size=4)), max_size=3),
    st.sampled_from(["rs0", "ag1", "0-3", "3-0", "0,1", "1-", "-1", " 2 ", "2 - 4",
                     "²", "1-²", "٣"]),   # (non-ASCII digits: str.isdigit, not int)
    st.integers(0, 12).map(np.int64), st.dictionaries(st.text(max_size=2), st.integers()),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS_ANY, size=st.one_of(st.none(), st.integers(-5, 2**40), st.floats(),
                                       st.text(max_size=6), st.integers(0, 9).map(np.int32)))
def test_flows_raises_only_config_errors(steps, size):
    try:
        df = flowemu.flows("torus:8x8", "recdoub:variant=bandwidth", steps=steps, size=size,
                           progress=False)
    except ConfigError as exc:
        assert "\n" not in str(exc) and "np." not in str(exc)
    else:
        assert len(df) > 0 and list(df.columns) == FLOW_COLUMNS


# ------------------------------------------------------------- streamed writes

@pytest.mark.parametrize("name", ["f.csv", "f.parquet"])
def test_write_flows_equals_flows(tmp_path, name):
    expect = flowemu.flows("torus:8x8", "swing:variant=bandwidth", steps="0-3,ag0",
                           progress=False)
    rows = write_flows(tmp_path / name, "torus:8x8", "swing:variant=bandwidth",
                       steps="0-3,ag0", progress=False)
    assert rows == len(expect)
    if name.endswith(".csv"):
        got = pd.read_csv(tmp_path / name)
        expect = pd.read_csv(__import__("io").StringIO(expect.to_csv(index=False)))
    else:
        got = pd.read_parquet(tmp_path / name)
    pd.testing.assert_frame_equal(got, expect)
    assert [p.name for p in tmp_path.iterdir()] == [name]   # no temporary left


def test_streamed_write_needs_one_step_not_the_whole_table(tmp_path):
    # ring on torus:8x8 repeats one 256-flow pattern over 126 steps: the
    # table (32,256 rows x 200 B ~ 6 MiB) does not fit 2 MiB, one step does
    assert flowemu.simulate("torus:8x8", "ring", "1MiB").steps.iloc[0] == 126
    with pytest.raises(ConfigError, match="the flow dump of torus:8x8 ring"):
        flowemu.flows("torus:8x8", "ring", max_memory="2MiB")
    rows = write_flows(tmp_path / "f.csv", "torus:8x8", "ring", max_memory="2MiB",
                       progress=False)
    assert rows == 126 * 256 == len(pd.read_csv(tmp_path / "f.csv"))


def test_write_flows_empty_selection_and_bad_path(tmp_path):
    traffic = pd.DataFrame({"step": [0, 1], "src": [0, 0], "dst": [1, 1], "bytes": [0.0, 1.0]})
    rows = write_flows(tmp_path / "e.parquet", "torus:4x4", traffic=traffic, steps="step0")
    assert rows == 1 and len(pd.read_parquet(tmp_path / "e.parquet")) == 1
    for bad, needle in ((tmp_path, "is a directory"), (tmp_path / "no" / "f.csv", "does not"),
                        (3, "path: 3")):
        with pytest.raises(ConfigError, match=needle):
            write_flows(bad, "torus:4x4", "ring")

"""The sweep's up-front check: every configuration goes through the checks
simulate makes before it solves (check_simulation), so a misfit the run
would refuse fails the whole sweep before anything runs, naming each
configuration and the field at fault."""

import pytest

import flowemu
from flowemu.api.simulation import check_simulation
from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.study.sweep import SweepConfigError, load_sweep, sweep
from flowemu.study.sweep.executor import simulate_arguments

TOO_MANY_RANKS = """
sizes = "1KiB"
topology = "torus:4x4"
algorithm = ["ring", "recdoub"]
ranks = [8, 100]
"""

STRICT_RING = """
sizes = "1KiB"
topology = "torus:4x4"
algorithm = "ring"
failures = [0, 4]
"""

BOTH = """
sizes = "1KiB"
[groups.big]
topology = "torus:4x4"
algorithm = "ring"
ranks = [8, 100]
[groups.cut]
topology = "torus:4x4"
algorithm = "ring"
failures = [0, 4]
"""

CUT_OFF = """
sizes = "1KiB"
topology = "torus:4x4"
algorithm = "recdoub"
failures = [0, 20]
failure_seed = 1
fail_policy = "reroute"
"""


def write(tmp_path, text, name="m.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def cli_error(tmp_path, capsys, text):
    """Run `flowemu sweep` on ``text``: exit code 2, one ConfigError, and no
    dataset (nothing ran, no row was written)."""
    path = write(tmp_path, text)
    out = tmp_path / "out"
    code = main(["sweep", str(path), "--out", str(out), "-q", "--jobs", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert not out.exists()
    return err


def test_too_many_ranks_fail_the_sweep_before_it_runs(tmp_path, capsys):
    err = cli_error(tmp_path, capsys, TOO_MANY_RANKS)
    assert "m.toml: ranks: 2 configurations (main|torus:4x4|ring:" in err
    assert "ranks=100" in err and "ranks=8" not in err
    assert "ranks: 100 ranks do not fit on torus:4x4 (16 endpoints)" in err


def test_a_strict_ring_on_a_failed_link_fails_the_sweep_before_it_runs(tmp_path, capsys):
    err = cli_error(tmp_path, capsys, STRICT_RING)
    assert "m.toml: failures[1]: configuration main|torus:4x4|ring:" in err
    assert "fail=random:4:0" in err and "algorithm ring relies on link" in err
    assert "fail_policy='reroute'" in err


def test_every_misfit_is_reported_together(tmp_path):
    with pytest.raises(SweepConfigError) as e:
        load_sweep(write(tmp_path, BOTH))
    locs = [loc for loc, _ in e.value.problems]
    assert locs == ["groups.big.ranks", "groups.cut.failures[1]"]
    assert str(e.value).startswith(f"{tmp_path / 'm.toml'}: 2 problems")
    # the Python sweep refuses it too, before it makes the dataset
    with pytest.raises(SweepConfigError):
        sweep(write(tmp_path, BOTH), tmp_path / "d", progress=False)
    assert not (tmp_path / "d").exists()


def test_a_draw_that_cuts_ranks_off_is_found_up_front(tmp_path):
    with pytest.raises(SweepConfigError) as e:
        load_sweep(write(tmp_path, CUT_OFF))
    ((loc, msg),) = e.value.problems
    assert loc == "failures[1]" and "cuts off" in msg and "fail=random:20:1|" in msg


def test_the_sweep_checks_what_simulate_checks(tmp_path):
    """The refusal is simulate's own, word for word."""
    with pytest.raises(SweepConfigError) as e:
        load_sweep(write(tmp_path, STRICT_RING))
    ((_, msg),) = e.value.problems
    with pytest.raises(ConfigError) as direct:
        flowemu.simulate("torus:4x4", "ring", "1KiB", fail="random:4:0")
    assert msg.endswith(str(direct.value))
    with pytest.raises(ConfigError) as checked:
        check_simulation("torus:4x4", "ring", "1KiB", fail="random:4:0")
    assert str(checked.value) == str(direct.value)


def test_a_valid_file_still_runs(tmp_path):
    text = STRICT_RING.replace("failures = [0, 4]",
                               'failures = [0, 4]\nfail_policy = "reroute"')
    path = write(tmp_path, text)
    configs = load_sweep(path).configs
    for cfg in configs:   # the check passes each configuration as it will run
        args, kwargs = simulate_arguments(cfg)
        check_simulation(*args, **kwargs)
    s = sweep(path, tmp_path / "d", jobs=1, progress=False)
    assert (s.total, s.computed, s.failed) == (2, 2, 0)


def test_simulate_refuses_an_algorithm_off_its_family():
    with pytest.raises(ConfigError, match=r"^algorithm: gentree does not run on torus:4x4 "
                                          r"\(it runs on tree, leafspine, fattree\)"):
        check_simulation("torus:4x4", "gentree", "1MiB")


SHAPE_MISFIT = """
sizes = ["1KiB", "1MiB"]
topology = ["torus:4x4", "fattree:k=4"]
algorithm = ["ring:ports=4", "ring"]
"""


def test_an_option_the_shape_refuses_fails_the_sweep_before_it_runs(tmp_path, capsys):
    """ring's ports=4 needs a 2-D torus (two edge-disjoint Hamiltonian
    cycles); only building its schedule finds that, and the sweep's check
    builds it for a healthy configuration too (it did only under failures,
    and the sweep ran everything else first and failed at the end)."""
    err = cli_error(tmp_path, capsys, SHAPE_MISFIT)
    assert "m.toml: algorithm: configuration main|fattree:k=4|ring:ports=4" in err
    assert "ports=4 needs a 2-D torus" in err
    assert "torus:4x4|ring:ports=4" not in err   # fits there


def test_check_simulation_builds_the_schedules_when_asked():
    check_simulation("fattree:k=4", "ring:ports=4", "1KiB")   # (building is not asked)
    with pytest.raises(ConfigError, match=r"ports=4 needs a 2-D torus"):
        check_simulation("fattree:k=4", "ring:ports=4", "1KiB", schedules=True)
    check_simulation("torus:4x4", "ring:ports=4", "1KiB", schedules=True)


def test_a_workers_memory_share_says_how_to_give_it_more():
    """A sweep has no --max-memory: a worker's refusal names the variable
    the workers share and --jobs (it said 'use --max-memory', which `flowemu
    sweep` does not take)."""
    from flowemu.core import budget
    from flowemu.study.sweep.executor import _LocalPool
    pool = _LocalPool(2)
    try:
        with pytest.raises(ConfigError) as got:
            budget.check(2 * pool.share.bytes, pool.share, "x")
    finally:
        pool.ex.shutdown()
    assert "1/2 of the" in str(got.value) and "one share a worker" in str(got.value)
    assert str(got.value).endswith("; run fewer workers (--jobs) or give them more "
                                   "(FLOWEMU_MAX_MEMORY, which they share)")


MODES_AND_MORE = """
sizes = "1KiB"
topology = ["torus:4x4", "fattree:k=4"]
algorithm = ["ring", "recdoub"]
ecmp = ["split", "dor"]
ranks = [8, 100]
"""


def test_a_mode_a_topology_lacks_hides_no_other_problem(tmp_path, capsys):
    """`dor` does not route a fat tree; that was reported alone, and the
    ranks that fit nowhere only once it was fixed. Both are said at once."""
    err = cli_error(tmp_path, capsys, MODES_AND_MORE)
    assert "m.toml: ecmp: 'dor' does not apply to fattree:k=4" in err
    assert "ranks: 100 ranks do not fit on torus:4x4" in err
    assert "ranks: 100 ranks do not fit on fattree:k=4" in err
    assert "fattree:k=4|ring:|ecmp=dor" not in err   # (the pair is not a configuration)


SIZES_SEEDS_AND_WHATIFS = """
sizes = ["1Mib", "2KiB"]
topology = "torus:4x4"
algorithm = "ring"
failures = 0
failure_seed = 3
background = ["perm:1.5", "permutation:0.3"]
slow = ["99=0.5"]
"""


def test_bad_sizes_and_seeds_hide_no_other_problem(tmp_path, capsys):
    """A bad size or a failure_seed without failures stopped the checks of
    the grid: the bad backgrounds and slow rank showed only once those were
    mended. The grid is checked on (with the default sizes), all at once."""
    err = cli_error(tmp_path, capsys, SIZES_SEEDS_AND_WHATIFS)
    assert "m.toml: 5 problems" in err
    for said in ("sizes[0]: '1Mib'", "failure_seed: a failure_seed applies only with",
                 "slow[0]: rank 99", "background[0]: LOAD '1.5'",
                 "background[1]: unknown generator 'permutation'"):
        assert said in err, said


def test_a_compute_slowdown_that_costs_nothing_is_noted(tmp_path):
    """`flowemu run --slow 3=0.5:compute` notes that with gamma = delta = 0 a
    slower reduction costs nothing; a sweep file said nothing. Its plan
    notes it once, naming the spec; with gamma given, or a network-only
    slowdown, it does not."""
    text = ('sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
            'slow = ["3=0.5:compute", "5=0.5:network"]\n')
    plan = load_sweep(write(tmp_path, text))
    said = [n for n in plan.notes if "costs nothing" in n]
    assert len(said) == 1 and "'3=0.5:compute'" in said[0] and "5=0.5" not in said[0]
    plan = load_sweep(write(tmp_path, text + 'gamma = "1ps"\n', "g.toml"))
    assert not [n for n in plan.notes if "costs nothing" in n]


def test_one_half_of_the_incast_pair_is_refused_in_python_and_in_a_sweep(tmp_path):
    """A threshold without a slope (or the reverse) leaves incast off: the
    run equals one without it, and the row recorded the threshold. The
    command line refused it; simulate and a sweep file now do too."""
    for kw, name in (({"incast_threshold": 4}, "incast_threshold"),
                     ({"incast_slope": "1ps"}, "incast_slope")):
        with pytest.raises(ConfigError, match=f"^{name}: incast needs both incast_threshold "
                                              "and incast_slope"):
            flowemu.simulate("torus:4x4", "ring", "1KiB", **kw)
    both = flowemu.simulate("torus:4x4", "ring", "1KiB", incast_threshold=4, incast_slope="1ps")
    assert both["incast_threshold"].iloc[0] == 4
    path = write(tmp_path, 'topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n'
                           'incast_threshold = 4\n')
    with pytest.raises(SweepConfigError, match="incast_threshold: incast needs both"):
        load_sweep(path)
    path.write_text(path.read_text() + 'incast_slope = "1ps"\n')
    assert len(load_sweep(path).configs) == 1
    # a Network with one half is refused as the keywords are
    for net, name in ((flowemu.Network(incast_threshold=4), "incast_threshold"),
                      (flowemu.Network(incast_slope="1ps"), "incast_slope")):
        with pytest.raises(ConfigError, match=f"^network: its {name} is set"):
            flowemu.simulate("torus:4x4", "ring", "1KiB", network=net)
    # a grid's cell with a slope of 0 beside a threshold is incast off: one configuration
    # with the cells that have neither (they were timed apart, identical)
    path.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n'
                    'incast_threshold = [4, 8]\nincast_slope = ["0", "1ps"]\n')
    got = sorted((c.incast_threshold, c.incast_slope) for c in load_sweep(path).configs)
    assert got == [(4.0, 1e-12), (8.0, 1e-12), (float("inf"), 0.0)]

"""Units in sweep files: every bad size is reported at once; a rate or a time
without its unit is an error showing the accepted forms."""

import pytest

from flowemu.cli.app import main
from flowemu.study.sweep import SweepConfigError, load_sweep

BASE = 'topology = "torus:4x4"\nalgorithm = "ring"\n'


def problems(tmp_path, text):
    path = tmp_path / "units.toml"
    path.write_text(BASE + text)
    with pytest.raises(SweepConfigError) as err:
        load_sweep(path)
    return err.value.problems, str(err.value)


def test_every_bad_size_is_reported_with_its_index(tmp_path):
    probs, _ = problems(tmp_path, 'sizes = ["1KiB", "3XB", "nope", 0, "2MiB"]\n')
    assert [loc for loc, _ in probs] == ["sizes[1]", "sizes[2]", "sizes[3]"]
    assert "'3XB'" in probs[0][1] and "'nope'" in probs[1][1] and "positive" in probs[2][1]
    probs, _ = problems(tmp_path, 'sizes = "1KiB,3XB,4KiB,nope"\n')
    assert [loc for loc, _ in probs] == ["sizes item 1", "sizes item 3"]


def test_bad_sizes_and_other_problems_together_through_the_cli(tmp_path, capsys):
    path = tmp_path / "units.toml"
    path.write_text(BASE + 'sizes = ["3XB", "nope"]\nbandwidth = 400\n')
    code = main(["sweep", str(path), "--out", str(tmp_path / "d"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "3 problems" in err
    assert "sizes[0]" in err and "sizes[1]" in err and "bandwidth: 400 has no unit" in err
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("text, loc, shown", [
    ("bandwidth = 400\n", "bandwidth", "400 has no unit"),
    ('bandwidth = "400"\n', "bandwidth", "'400' has no unit"),
    ('bandwidth = ["400Gb/s", 5e10]\n', "bandwidth[1]", "5e+10 has no unit"),
    ("link_latency = 100\n", "link_latency", "100 has no unit"),
    ('hop_latency = "300"\n', "hop_latency", "'300' has no unit"),
    ("alpha = 1.5\n", "alpha", "1.5 has no unit"),
    ("gamma = 1e-10\n", "gamma", "1e-10 has no unit"),
])
def test_rate_or_time_without_unit_shows_the_forms(tmp_path, text, loc, shown):
    probs, _ = problems(tmp_path, text)
    assert len(probs) == 1 and probs[0][0] == loc
    msg = probs[0][1]
    assert msg.startswith(shown)
    forms = "400Gb/s" if loc.startswith("bandwidth") else "100ns"
    assert forms in msg and "np." not in msg


def test_zero_may_be_bare_for_times(tmp_path):
    path = tmp_path / "zero.toml"
    path.write_text(BASE + 'sizes = "1KiB"\nlink_latency = 0\nhop_latency = "0"\nalpha = 0.0\n')
    cfg = load_sweep(path).configs[0]
    assert (cfg.link_latency, cfg.hop_latency, cfg.alpha) == (0.0, 0.0, 0.0)
    path.write_text(BASE + 'sizes = "1KiB"\nbandwidth = 0\n')
    with pytest.raises(SweepConfigError, match="bandwidth: 0 has no unit"):
        load_sweep(path)

"""A solved profile's times take sizes as simulate does (text, ranges, lists
of numbers or texts), keep the order given, and refuse what is not a size
with a ConfigError naming it."""

import numpy as np
import pandas as pd
import pytest

import flowemu


@pytest.fixture(scope="module")
def prof():
    return flowemu.profile(flowemu.schedule("ring", "torus:4x4"), "torus:4x4")


def test_sizes_as_text_equal_the_byte_counts(prof):
    by_count = prof.times([2**20, 2**10])
    np.testing.assert_array_equal(prof.times(["1MiB", "1KiB"]), by_count)
    np.testing.assert_array_equal(prof.times([2**20, "1KiB"]), by_count)
    np.testing.assert_array_equal(prof.times(pd.Series([2**20, 2**10])), by_count)
    # a range is every power of two in it, ascending, as simulate reads it
    np.testing.assert_array_equal(prof.times("1KiB..4KiB"), prof.times([1024, 2048, 4096]))
    np.testing.assert_array_equal(prof.step_times("1MiB"), prof.step_times([2**20]))
    assert prof.steps[0].time("1KiB").shape == (1,)


def test_the_order_given_is_kept(prof):
    """Not sorted as a sweep's size list is: the times line up with the
    caller's sizes."""
    up, down = prof.times([1024, 2**20]), prof.times([2**20, 1024])
    np.testing.assert_array_equal(up, down[::-1])
    assert up[0] < up[1]   # a larger vector takes longer (closed form of the ring)


@pytest.mark.parametrize("bad, says", [
    ([-1], "sizes: size -1 is not allowed; expected a positive, finite number of bytes"),
    ([0.0], "sizes: size 0.0 is not allowed"),
    ([float("nan")], "sizes: size nan is not allowed"),
    (["x"], "sizes: cannot read 'x' as a size"),
    (True, "sizes: True is not allowed"),
    (np.ones((2, 2)), "sizes: an array of shape (2, 2) is not allowed"),
    # empty: simulate refuses it, times returned an empty array
    ([], "sizes: no sizes given; expected e.g. '32B..512MiB', '1KiB,1MiB'"),
    (np.array([]), "sizes: no sizes given"),
])
def test_what_is_not_a_size_is_refused_by_name(prof, bad, says):
    with pytest.raises(flowemu.ConfigError) as err:
        prof.times(bad)
    assert str(err.value).startswith(says)

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


def test_ranks_and_refusals():
    assert flowemu.schedule("ring", "torus:4x4", ranks=8).p == 8
    with pytest.raises(ConfigError, match="variant=auto picks a variant per size"):
        flowemu.schedule("recdoub:variant=auto", "torus:4x4")
    with pytest.raises(ConfigError, match="given in 'ring:ports=2' and as keywords"):
        flowemu.schedule("ring:ports=2", "torus:4x4", ports=1)
    with pytest.raises(ConfigError, match="nope"):
        flowemu.schedule("nope", "torus:4x4")
    assert "schedule" in flowemu.__all__

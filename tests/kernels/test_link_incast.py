"""Incast on links (``solve_completion(..., link_incast=...)``, issue 27 item
2): a link with GenModel terms ``(w_t, eps)`` has capacity ``1 / (1 / c +
max(w - w_t, 0) eps)`` with ``w`` the active flows crossing it. Checked
against the pure-Python oracle (its ``incast_at``) on random problems, with
and without the receivers' own incast, for every solver; and a closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowemu.kernels.maxmin import solve_completion
from flowemu.topology.base import Routes
from tests.helpers.maxmin_oracle import OK, completion

RTOL = 1e-12


def _routes(paths):
    ptr = np.zeros(len(paths) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in paths])
    return Routes(ptr, np.array([r for x in paths for r, _ in x], dtype=np.int32),
                  np.array([a for x in paths for _, a in x], dtype=np.float64),
                  np.array([len(x) for x in paths], dtype=np.int32))


def test_closed_form_one_link():
    """w flows of b bytes over one link of capacity c with w_t = 2, eps:
    each gets (1 / (1/c + (w - 2) eps)) / w while all run; equal bytes end
    together at w b (1/c + (w - 2) eps)."""
    c, eps, b = 1e9, 1e-10, 1e6
    for w in (1, 2, 5):
        sol = solve_completion(_routes([[(0, 1.0)]] * w), [c], [b] * w,
                               link_incast=([2.0], [eps]))
        assert sol.finish == pytest.approx([w * b * (1 / c + max(w - 2, 0) * eps)] * w,
                                           rel=RTOL)
    # off (eps = 0 or w_t = inf) is the plain link
    for terms in (([2.0], [0.0]), ([math.inf], [eps])):
        sol = solve_completion(_routes([[(0, 1.0)]] * 5), [c], [b] * 5, link_incast=terms)
        assert sol.finish == pytest.approx([5 * b / c] * 5, rel=RTOL)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), method=st.sampled_from(["auto", "incremental",
                                                                "screened"]),
       receivers=st.booleans())
def test_random_problems_match_the_oracle(seed, method, receivers):
    rng = np.random.default_rng(seed)
    n_links, n_flows, n_dst = int(rng.integers(1, 7)), int(rng.integers(1, 12)), 3
    paths = []
    for _ in range(n_flows):
        links = sorted(set(rng.integers(0, n_links, int(rng.integers(0, 4))).tolist()))
        paths.append([(r, float(rng.choice([1.0, 0.5, rng.uniform(0.05, 1)]))) for r in links])
    cap = rng.choice([1.0, 2.0, 5.0], n_links)
    w_t = rng.choice([0.0, 1.0, 2.0, math.inf], n_links)
    eps = rng.choice([0.0, 0.3, 1.0], n_links)
    nbytes = rng.choice([0.0, 1.0, 2.5], n_flows, p=[0.1, 0.4, 0.5])
    dst = rng.integers(0, n_dst, n_flows)
    kw = {}
    oracle_paths = [list(p) for p in paths]
    oracle_cap = list(cap)
    n_plain = None
    recv = (1.5, 0.2)
    if receivers:
        kw = {"flow_dst": dst, "ingress_capacity": np.full(n_dst, 3.0),
              "incast_threshold": recv[0], "incast_slope": recv[1]}
        for f, p in enumerate(oracle_paths):
            if p:
                p.append((n_links + int(dst[f]), 1.0))
        oracle_cap += [3.0] * n_dst
        n_plain = n_links
    sol = solve_completion(_routes(paths), cap, nbytes, method=method,
                           link_incast=(w_t, eps), **kw)
    at = {r: (float(w_t[r]), float(eps[r])) for r in range(n_links)}
    rate0, finish, status = completion(oracle_paths, oracle_cap, nbytes, n_plain,
                                       *(recv if receivers else (math.inf, 0.0)), incast_at=at)
    assert status == OK and sol.ok
    np.testing.assert_allclose(sol.finish, finish, rtol=RTOL)
    np.testing.assert_allclose(sol.rate0, rate0, rtol=RTOL)

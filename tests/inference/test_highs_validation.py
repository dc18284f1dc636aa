"""highs_lp / milp_map: graphs without factors or variables agree with ad3 / ad3_map, and
time_limit / gap_tol are checked."""

import numpy as np
import pytest

from sksparse_struct.inference import FactorGraph, ad3, ad3_map, highs_lp, milp_map


def _graphs():
    yield FactorGraph(0), np.zeros(0), None
    yield FactorGraph(4), np.array([1.5, -2.0, 0.0, 3.0]), None
    fg = FactorGraph(3)
    fg.add_pair(0, 1)  # a scored factor but no constraint on its own
    yield fg, np.array([0.5, 0.8, -1.0]), np.array([-2.0])


@pytest.mark.parametrize("case", range(3))
def test_graphs_without_constraints_agree_with_ad3(case):
    graph, theta, fs = list(_graphs())[case]
    lp, ref = highs_lp(graph, theta, fs), ad3(graph, theta, fs)
    np.testing.assert_allclose(lp.variables, ref.variables, atol=1e-6)
    np.testing.assert_allclose(lp.factors, ref.factors, atol=1e-6)
    assert lp.primal == pytest.approx(ref.primal, abs=1e-6)
    assert lp.dual == pytest.approx(ref.dual, abs=1e-6)
    assert lp.integral == ref.integral
    exact, ref_map = milp_map(graph, theta, fs), ad3_map(graph, theta, fs)
    np.testing.assert_array_equal(exact.variables, ref_map.variables)
    np.testing.assert_array_equal(exact.factors, ref_map.factors)
    assert exact.objective == pytest.approx(ref_map.objective, abs=1e-9)
    assert exact.optimal and ref_map.optimal


def test_an_empty_graph_gives_empty_arrays():
    for result in (highs_lp(FactorGraph(0), []), milp_map(FactorGraph(0), [])):
        assert result.variables.shape == (0,)
        assert result.factors.shape == (0,)
    assert highs_lp(FactorGraph(0), []).primal == 0.0
    assert milp_map(FactorGraph(0), []).objective == 0.0


@pytest.mark.parametrize("value", [0, 0.0, -1.0, np.inf, np.nan, "10", True, [1.0]])
def test_time_limit_must_be_a_positive_finite_number(value):
    fg = FactorGraph(2)
    fg.add_xor([0, 1])
    with pytest.raises(ValueError, match="milp_map: time_limit must be (a real number|finite and > 0)"):
        milp_map(fg, [1.0, 0.0], time_limit=value)


@pytest.mark.parametrize("value", [-1e-3, np.inf, np.nan, "0.1", False])
def test_gap_tol_must_be_a_non_negative_finite_number(value):
    fg = FactorGraph(2)
    fg.add_xor([0, 1])
    with pytest.raises(ValueError, match="milp_map: gap_tol must be (a real number|finite and >= 0)"):
        milp_map(fg, [1.0, 0.0], gap_tol=value)


def test_valid_limits_are_used():
    rng = np.random.RandomState(0)
    fg = FactorGraph(6)
    fg.add_xor([0, 1, 2])
    fg.add_at_most_one([3, 4, 5])
    fg.add_pairs([[0, 3], [1, 4], [2, 5]])
    theta, fs = rng.randn(6), rng.randn(3)
    ref = ad3_map(fg, theta, fs)
    for options in ({"time_limit": 10}, {"time_limit": np.float32(5.0)}, {"gap_tol": 0},
                    {"gap_tol": 1e-9, "time_limit": 30.0}):
        result = milp_map(fg, theta, fs, **options)
        assert result.optimal
        assert result.objective == pytest.approx(ref.objective, abs=1e-9)

import pytest

from collscope.stats.significance import late_rank_p, min_late_trials, rank_sum_p, signed_rank_p


def test_late_rank_p_is_a_bonferroni_corrected_one_sided_binomial_test():
    assert late_rank_p(10, 10, 2) == pytest.approx(2 * 0.5 ** 10)      # 2 x P(X >= 10)
    assert late_rank_p(4, 4, 4) == pytest.approx(4 * 0.25 ** 4)
    assert late_rank_p(5, 10, 2) == 1.0                                # capped: 2 x 0.62


def test_min_late_trials_is_the_first_count_that_can_reach_alpha():
    assert min_late_trials(2, 0.05) == 6        # 2 x 0.5^5 = 0.0625, 2 x 0.5^6 = 0.031
    assert min_late_trials(8, 0.01) == 4        # 8 x 8^-3 = 0.0156, 8 x 8^-4 = 0.002
    with pytest.raises(ValueError, match="ranks >= 2"):
        min_late_trials(1, 0.05)


def test_signed_rank_p_drops_zeros_and_is_one_without_evidence():
    assert signed_rank_p([1.0, 2.0, 3.0, 4.0, 5.0, 0.0]) == pytest.approx(1 / 32)   # exact
    assert signed_rank_p([0.0, 0.0]) == 1.0
    assert signed_rank_p([-1.0, -2.0, -3.0], "greater") > 0.5


def test_rank_sum_p_is_one_sided_mann_whitney():
    assert rank_sum_p([5.0, 6.0, 7.0], [1.0, 2.0, 3.0], "greater") == pytest.approx(1 / 20)
    assert rank_sum_p([5.0, 6.0, 7.0], [1.0, 2.0, 3.0], "less") == pytest.approx(1.0)

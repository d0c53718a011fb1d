import math

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


def test_binomial_and_mann_whitney_give_scipys_p_values():
    import random

    from scipy.stats import binomtest, mannwhitneyu

    from collscope.stats.significance import binomial_tail, rank_sum_p

    for n, p in ((12, 0.25), (50, 0.5), (3000, 1 / 16), (7, 0.9)):
        for k in sorted({0, 1, n // 4, n // 2, n - 1, n}):
            want = float(binomtest(k, n, p, alternative="greater").pvalue) if k else 1.0
            assert math.isclose(binomial_tail(k, n, p), want, rel_tol=1e-9, abs_tol=1e-300)
    rng = random.Random(7)
    for case in range(400):
        n1, n2 = rng.randint(1, 14), rng.randint(1, 14)
        pool = [rng.randint(0, 6) for _ in range(8)] if case % 2 else None  # ties or none
        x = [rng.choice(pool) if pool else rng.random() + 0.3 * (case % 3) for _ in range(n1)]
        y = [rng.choice(pool) if pool else rng.random() for _ in range(n2)]
        if len(set(x + y)) < 2:
            continue
        for alternative in ("greater", "less"):
            want = float(mannwhitneyu(x, y, alternative=alternative).pvalue)
            assert math.isclose(rank_sum_p(x, y, alternative), want, rel_tol=1e-9,
                                abs_tol=1e-15), (x, y, alternative)


def test_the_tests_that_run_inside_the_users_job_never_import_scipy():
    import subprocess
    import sys

    code = ("import sys; from collscope.stats.significance import late_rank_p, rank_sum_p; "
            "late_rank_p(9, 12, 4); rank_sum_p([1, 2, 3] * 5, [0.5, 1.5] * 6, 'greater'); "
            "print('scipy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "False"

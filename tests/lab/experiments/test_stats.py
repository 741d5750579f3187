import pytest

from react_lab.lab.experiments.stats import pass_at_k, pass_hat_k, success_rate


def test_wilson_interval_brackets_the_rate_and_narrows_with_n():
    small, large = success_rate(6, 10), success_rate(60, 100)
    assert small.low < 0.6 < small.high
    assert large.low < 0.6 < large.high
    assert (large.high - large.low) < (small.high - small.low)


def test_wilson_interval_at_zero_and_all_stays_inside_0_1_and_is_not_degenerate():
    none, every = success_rate(0, 20), success_rate(20, 20)
    assert none.low == 0.0 and 0.1 < none.high < 0.2
    assert every.high == pytest.approx(1.0) and 0.8 < every.low < 0.9


def test_known_value():
    # 30/52: Wilson 95% interval by hand, (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    rate = success_rate(30, 52)
    assert rate.low == pytest.approx(0.4419, abs=1e-3)
    assert rate.high == pytest.approx(0.7013, abs=1e-3)
    assert "30/52" in str(rate)


@pytest.mark.parametrize("s,n", [(-1, 5), (6, 5)])
def test_bad_counts_raise(s, n):
    with pytest.raises(ValueError):
        success_rate(s, n)


def test_pass_k_on_one_trial_is_the_success_rate():
    trials = [[True], [False], [True], [True]]
    assert pass_at_k(trials, 1) == pass_hat_k(trials, 1) == 0.75


def test_pass_hat_k_falls_and_pass_at_k_rises_with_k():
    trials = [[True, True, True, True], [True, False, True, False], [False] * 4]
    hats = [pass_hat_k(trials, k) for k in range(1, 5)]
    ats = [pass_at_k(trials, k) for k in range(1, 5)]
    assert hats == sorted(hats, reverse=True) and ats == sorted(ats)
    assert hats[-1] == pytest.approx(1 / 3)  # only the first task never failed
    assert ats[-1] == pytest.approx(2 / 3)  # the last task never succeeded
    assert hats[1] == pytest.approx((1 + 1 / 6) / 3)  # C(2,2)/C(4,2) for the middle task


def test_too_few_trials_raise():
    with pytest.raises(ValueError):
        pass_hat_k([[True, False]], 3)


def test_paired_comparison_counts_disagreements_and_tests_them():
    from react_lab.lab.experiments.stats import paired_comparison

    old = {f"t{i}": i < 10 for i in range(40)}  # solves t0-t9
    new = {f"t{i}": 2 <= i < 22 for i in range(40)}  # loses t0-t1, gains t10-t21
    r = paired_comparison(old, new)
    assert (r.gained, r.lost, r.same) == (12, 2, 26)
    # exact McNemar: P(X <= 2 or X >= 12), X ~ Binomial(14, 1/2) = 2 * 106/16384
    assert r.p == pytest.approx(2 * (1 + 14 + 91) / 2**14)
    assert r.verdict == "better" and "+12 -2" in str(r)
    assert paired_comparison(new, old).verdict == "worse"
    near = paired_comparison(old, {**old, "t20": True, "t0": False, "t21": True})
    assert (near.gained, near.lost, near.verdict) == (2, 1, "not significant")
    assert "p = 0.013" in str(r)
    assert paired_comparison(old, old).p == 1.0
    with pytest.raises(ValueError, match="different tasks"):
        paired_comparison(old, {"t0": True})


def test_interval_and_sign_test_agree_with_scipy_for_every_count_up_to_60():
    # The formulas are written with the standard library (scipy.stats costs a kernel ~70 MiB);
    # SciPy's binomtest is the reference they must match.
    from scipy.stats import binomtest

    from react_lab.lab.experiments.stats import sign_test

    for n in range(1, 61):
        for k in range(n + 1):
            ref = binomtest(k, n)
            ci, rate = ref.proportion_ci(method="wilson"), success_rate(k, n)
            assert (rate.low, rate.high) == (
                pytest.approx(ci.low, abs=1e-12),
                pytest.approx(ci.high, abs=1e-12),
            )
            assert 0.0 <= rate.low <= rate.high <= 1.0
            assert sign_test(k, n - k) == pytest.approx(ref.pvalue, abs=1e-12)
    ninety = success_rate(30, 52, confidence=0.90)
    ref90 = binomtest(30, 52).proportion_ci(confidence_level=0.90, method="wilson")
    assert (ninety.low, ninety.high) == (pytest.approx(ref90.low), pytest.approx(ref90.high))


def test_sign_test_edges():
    from react_lab.lab.experiments.stats import sign_test

    assert sign_test(0, 0) == 1.0 and sign_test(3, 3) == 1.0
    assert sign_test(5, 0) == pytest.approx(2 / 32) == sign_test(0, 5)
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def test_importing_the_statistics_does_not_import_scipy():
    import subprocess
    import sys

    code = "import sys, react_lab.lab.experiments.stats; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_rate_says_its_own_level_and_bad_levels_or_counts_are_refused():
    from react_lab.lab.experiments.stats import paired_comparison, sign_test

    assert "(90% CI" in str(success_rate(30, 52, confidence=0.90))
    assert "(95% CI" in str(success_rate(30, 52))
    for level in (0, 1, 95, -0.5, float("nan"), "0.95"):
        with pytest.raises(ValueError, match="confidence"):
            success_rate(30, 52, confidence=level)
    with pytest.raises(ValueError, match="confidence"):
        success_rate(0, 0, confidence=95)
    for args in ((2.5, 5), (float("nan"), 5), (2, 5.0)):
        with pytest.raises(TypeError, match="whole number"):
            success_rate(*args)
    with pytest.raises(TypeError, match="whole number"):
        sign_test(2.0, 1)
    with pytest.raises(TypeError, match="mappings"):
        paired_comparison([True], [True])
    assert success_rate(True, 2).successes == 1  # a bool is a count of 0 or 1


def test_the_sign_test_is_exact_for_large_counts():
    from scipy.stats import binomtest

    from react_lab.lab.experiments.stats import sign_test

    for up, down in ((4900, 5100), (600, 400), (1, 2000)):
        assert sign_test(up, down) == pytest.approx(binomtest(up, up + down).pvalue, rel=1e-9)

"""Flow-size distributions (rocesim.traffic.distributions): CDFs, sampling, files."""

import numpy as np
import pytest

from rocesim.errors import ScenarioError
from rocesim.traffic import FB_HADOOP, WEBSEARCH, FlowSizeCDF, builtin

WEBSEARCH_POINTS = [
    (0, 0),
    (10_000, 15),
    (20_000, 20),
    (30_000, 30),
    (50_000, 40),
    (80_000, 53),
    (200_000, 60),
    (1_000_000, 70),
    (2_000_000, 80),
    (5_000_000, 90),
    (10_000_000, 97),
    (30_000_000, 100),
]


def integrated_mean(cdf, steps=2_000_001):
    """Mean as the integral of the survival function 1 - F(x), computed numerically."""
    x = np.linspace(0.0, cdf.sizes[-1], steps)
    survival = 1.0 - cdf.fraction_at_most(x)
    return float(np.sum((survival[1:] + survival[:-1]) / 2 * np.diff(x)))


def test_builtin_points_match_the_published_tables():
    assert list(zip(WEBSEARCH.sizes.tolist(), WEBSEARCH.percents.tolist())) == WEBSEARCH_POINTS
    assert FB_HADOOP.sizes[-1] == 10_000_000 and FB_HADOOP.percents[-3] == 97.5
    assert len(FB_HADOOP.sizes) == 20


def test_exact_means():
    # sum over segments of (probability x midpoint), worked out by hand for WebSearch
    assert WEBSEARCH.mean() == pytest.approx(1_711_250.0)
    assert FB_HADOOP.mean() == pytest.approx(120_420.75)
    for cdf in (WEBSEARCH, FB_HADOOP):
        assert cdf.mean() == pytest.approx(integrated_mean(cdf), rel=1e-4)


@pytest.mark.parametrize("cdf", [WEBSEARCH, FB_HADOOP], ids=lambda c: c.name)
def test_samples_follow_the_cdf_at_every_point(cdf):
    sizes = cdf.sample(np.random.default_rng(7), 400_000)
    assert sizes.dtype == np.int64
    assert sizes.min() >= 1 and sizes.max() <= cdf.sizes[-1]
    for size, percent in zip(cdf.sizes[1:-1], cdf.percents[1:-1]):
        assert np.mean(sizes <= size) == pytest.approx(percent / 100, abs=0.005)


def test_websearch_fifteen_percent_at_most_10kb():
    sizes = WEBSEARCH.sample(np.random.default_rng(1), 200_000)
    assert np.mean(sizes <= 10_000) == pytest.approx(0.15, abs=0.004)


@pytest.mark.parametrize("cdf", [WEBSEARCH, FB_HADOOP], ids=lambda c: c.name)
def test_sample_mean_near_exact_mean(cdf):
    sizes = cdf.sample(np.random.default_rng(3), 1_000_000)
    assert sizes.mean() == pytest.approx(cdf.mean(), rel=0.015)


def test_sampling_is_reproducible():
    a = WEBSEARCH.sample(np.random.default_rng(42), 1000)
    b = WEBSEARCH.sample(np.random.default_rng(42), 1000)
    c = WEBSEARCH.sample(np.random.default_rng(43), 1000)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_interpolation_is_linear_between_points():
    cdf = FlowSizeCDF([(1000, 0), (2000, 100)])
    assert cdf.mean() == 1500
    assert cdf.fraction_at_most(1250) == pytest.approx(0.25)
    assert cdf.fraction_at_most(500) == 0.0
    assert cdf.fraction_at_most(5000) == 1.0
    sizes = cdf.sample(np.random.default_rng(0), 100_000)
    assert sizes.min() >= 1000 and sizes.max() <= 2000
    counts, _ = np.histogram(sizes, bins=4, range=(1000, 2000))
    assert np.allclose(counts / sizes.size, 0.25, atol=0.01)


def test_repeated_size_is_an_atom():
    cdf = FlowSizeCDF([(0, 0), (100, 0), (100, 50), (200, 100)])
    assert cdf.fraction_at_most(100) == pytest.approx(0.5)
    assert cdf.fraction_at_most(99.9) == 0.0
    assert cdf.mean() == pytest.approx(0.5 * 100 + 0.5 * 150)
    sizes = cdf.sample(np.random.default_rng(0), 100_000)
    assert np.mean(sizes == 100) == pytest.approx(0.5, abs=0.01)
    assert sizes.min() == 100


def test_repeated_percent_is_a_gap():
    cdf = FlowSizeCDF([(0, 0), (10, 50), (1000, 50), (1010, 100)])
    sizes = cdf.sample(np.random.default_rng(0), 100_000)
    assert not np.any((sizes > 10) & (sizes < 1000))
    assert np.mean(sizes >= 1000) == pytest.approx(0.5, abs=0.01)


def test_small_sizes_round_up_to_one_byte():
    sizes = FlowSizeCDF([(0, 0), (2, 100)]).sample(np.random.default_rng(0), 10_000)
    assert sizes.min() == 1 and sizes.max() == 2


@pytest.mark.parametrize(
    "points, key, message",
    [
        ([(0, 0)], "cdf", "needs at least 2 points"),
        ([(0, 5), (10, 100)], "cdf[0]", "first point must have cumulative percent 0"),
        ([(0, 0), (10, 90)], "cdf[1]", "last point must have cumulative percent 100"),
        ([(0, 0), (20, 50), (10, 100)], "cdf[2]", "size 10 is below the previous point's 20"),
        (
            [(0, 0), (20, 50), (30, 40), (40, 100)],
            "cdf[2]",
            "percent 40 is below the previous point's 50",
        ),
        ([(0, 0), (20, 150)], "cdf[1]", "must be within 0..100"),
        ([(-1, 0), (20, 100)], "cdf[0]", "non-negative"),
        ([(0, 0), (1, 2, 3)], "cdf[1]", "expected a pair"),
        ([(0, 0), ("big", 100)], "cdf[1]", "expected a pair"),
    ],
)
def test_invalid_points(points, key, message):
    with pytest.raises(ScenarioError) as info:
        FlowSizeCDF(points)
    assert info.value.key == key
    assert message in info.value.reason


def test_builtin_lookup():
    assert builtin("websearch") is WEBSEARCH
    assert builtin("FB_Hadoop") is FB_HADOOP
    with pytest.raises(ScenarioError) as info:
        builtin("datamining", key="traffic[0].cdf")
    assert str(info.value) == (
        "traffic[0].cdf: unknown flow-size distribution 'datamining'; "
        "valid names: fb_hadoop, websearch"
    )


def test_from_file_percent_format(tmp_path):
    path = tmp_path / "web.txt"
    path.write_text("# WebSearch\n" + "\n".join(f"{s} {p}" for s, p in WEBSEARCH_POINTS) + "\n\n")
    cdf = FlowSizeCDF.from_file(path)
    assert cdf.name == "web"
    assert np.array_equal(cdf.sizes, WEBSEARCH.sizes)
    assert np.array_equal(cdf.percents, WEBSEARCH.percents)
    assert cdf.mean() == WEBSEARCH.mean()


def test_from_file_fraction_format(tmp_path):
    path = tmp_path / "frac.txt"
    path.write_text("100 0\n200 0.25   # a quarter\n400 1.0\n")
    cdf = FlowSizeCDF.from_file(path, name="mine")
    assert cdf.name == "mine"
    assert cdf.percents.tolist() == [0, 25, 100]
    assert cdf.fraction_at_most(200) == pytest.approx(0.25)


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("0 0\n10 20 30\n20 100\n", 2, "expected 2 fields"),
        ("0 0\n10 lots\n20 100\n", 2, "cumulative percent must be a number, got 'lots'"),
        ("0 0\n\n# gap\n20 50\n10 100\n", 5, "size 10 is below the previous point's 20"),
        ("0 0\n10 50\n20 90\n", 3, "last point must have cumulative percent 100"),
        ("5 5\n10 100\n", 1, "first point must have cumulative percent 0"),
    ],
)
def test_from_file_errors_name_the_line(tmp_path, text, line, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        FlowSizeCDF.from_file(path)
    assert info.value.key == f"{path}:{line}"
    assert message in info.value.reason


def test_from_file_empty_and_missing(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("# nothing\n")
    with pytest.raises(ScenarioError, match="needs at least 2 points"):
        FlowSizeCDF.from_file(path)
    with pytest.raises(ScenarioError, match="cannot read file"):
        FlowSizeCDF.from_file(tmp_path / "missing.txt")

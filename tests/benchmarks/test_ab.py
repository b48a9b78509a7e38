"""`benchmarks.ab`: the before/after table of process medians."""

from benchmarks import ab


def test_the_table_gives_medians_ranges_and_ratios():
    keys = [key for _, key in ab.ROWS]
    before = [dict.fromkeys(keys, v) for v in (10.0, 30.0, 20.0)]
    after = [dict.fromkeys(keys, v) for v in (11.0, 22.0)]
    lines = ab.table({"before": before, "after": after})
    assert lines[2] == (
        "| training, 5 steps | 20.0 (10.0-30.0, 3) | 16.5 (11.0-22.0, 2) | 0.82 |"
    )
    assert len(lines) == 2 + len(ab.ROWS)

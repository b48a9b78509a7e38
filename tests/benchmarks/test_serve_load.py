"""The serving load benchmark at a tiny size: every request answered and
counted, the server's memory read, the table written."""

import json

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("serving runs SavedModels: TensorFlow", allow_module_level=True)

from benchmarks import serve_load  # noqa: E402

# The serving tests' tiny export, shared when they run in this process.
from tests.zoo.serving.conftest import translator_base  # noqa: E402, F401


def test_tiny_load_run(translator_base, tmp_path):  # noqa: F811
    base = translator_base
    output = tmp_path / "serve_load"
    results = serve_load.main(
        ["--saved-model", str(base), "--clients", "1", "3", "--sentences", "4",
         "--per-client", "2", "--warm-up", "1", "--endurance", "20",
         "--output", str(output)]
    )  # fmt: skip
    # Per strategy: 4 requests at 1 client, max(4, 3 * 2) = 6 at 3; then 20.
    assert results["total_requests"] == 2 * (4 + 6) + 20
    assert results["total_failed"] == 0
    assert results["server_exit"] == 0  # SIGTERM: a clean stop.
    assert set(results["served"]) == {"greedy 1", "greedy 3", "beam 1", "beam 3"}
    assert set(results["in_process"]) == {"saved_model greedy", "saved_model beam"}
    endurance = results["endurance"]
    assert endurance["first_tenth"] == 2
    assert endurance["rss_at_end"] > 100 * 2**20  # TensorFlow alone is larger.
    assert abs(endurance["rss_growth"]) < 1.0
    table = (tmp_path / "serve_load.md").read_text()
    assert table.count("`keras-seq serve`") == 4
    assert "0 failed of 40 requests" in table
    assert json.loads((tmp_path / "serve_load.json").read_text())["total_failed"] == 0

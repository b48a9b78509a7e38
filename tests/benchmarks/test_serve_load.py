"""The serving load benchmark at a tiny size: every request answered and
counted, the server's memory read, the table written."""

import json

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("serving runs SavedModels: TensorFlow", allow_module_level=True)

from benchmarks import serve_load  # noqa: E402
from tests.zoo.serving import exports  # noqa: E402

# The serving tests' tiny export, shared when they run in this process.
from tests.zoo.serving.conftest import translator_base  # noqa: E402, F401


def test_tiny_load_run(translator_base, tmp_path):  # noqa: F811
    base = translator_base
    ctranslate2 = exports.export_translator_ctranslate2(tmp_path, "int8")
    output = tmp_path / "serve_load"
    results = serve_load.main(
        ["--saved-model", str(base), "--clients", "1", "3", "--sentences", "4",
         "--per-client", "2", "--warm-up", "1", "--endurance", "20",
         "--ctranslate2", str(ctranslate2), "--output", str(output)]
    )  # fmt: skip
    # Per server and strategy: 4 requests at 1 client, max(4, 3 * 2) = 6 at
    # 3; then 20 per server.
    assert results["total_requests"] == 2 * (2 * (4 + 6) + 20)
    assert results["total_failed"] == 0
    # SIGTERM: a clean stop.
    assert results["server_exit"] == {"saved_model": 0, "ctranslate2 int8": 0}
    runs = {"greedy 1", "greedy 3", "beam 1", "beam 3"}
    assert {name: set(rows) for name, rows in results["served"].items()} == {
        "saved_model": runs,
        "ctranslate2 int8": runs,
    }
    assert {name: set(rows) for name, rows in results["in_process"].items()} == {
        "saved_model": {"greedy", "beam"},
        "ctranslate2 int8": {"greedy", "beam"},
    }
    endurance = results["endurance"]["saved_model"]
    assert endurance["first_tenth"] == 2
    assert endurance["rss_at_end"] > 100 * 2**20  # TensorFlow alone is larger.
    assert abs(endurance["rss_growth"]) < 1.0
    # The CTranslate2 server loads no TensorFlow.
    assert results["endurance"]["ctranslate2 int8"]["rss_at_end"] < (
        endurance["rss_at_end"] / 2
    )
    table = (tmp_path / "serve_load.md").read_text()
    assert table.count("| `keras-seq serve` |") == 4
    assert table.count("| `serve --ctranslate2` (int8) |") == 4
    assert table.count("| 1.00x |") == 4  # The SavedModel server's own rows.
    assert "`CTranslate2Model` (int8), in process" in table
    assert "0 failed of 80 requests" in table
    assert json.loads((tmp_path / "serve_load.json").read_text())["total_failed"] == 0


def test_a_served_row_is_the_round_of_median_throughput():
    def row(per_s, p50_ms, failed=0):
        return {"requests": 10, "failed": failed, "per_s": per_s, "p50_ms": p50_ms}

    rounds = [row(30.0, 5.0), row(10.0, 9.0, failed=1), row(20.0, 7.0)]
    assert serve_load.median_round(rounds) == {
        "requests": 30,
        "failed": 1,
        "per_s": 20.0,
        "p50_ms": 7.0,
        "per_s_rounds": [30.0, 10.0, 20.0],
    }
    assert serve_load.median_round(rounds[:2])["per_s"] == 10.0

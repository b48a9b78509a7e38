"""`benchmarks.marian_speed` end to end at a tiny size: every implementation
timed in its own process, every row a positive rate, the same number of
tokens decoded per sentence by all (the fixed work each figure measures)."""

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("ctranslate2")
pytest.importorskip("sentencepiece")

from benchmarks import marian_speed  # noqa: E402

NEW_TOKENS = 6
# One worker of each kind (the zoo's, transformers', CTranslate2's): the
# zoo's TensorFlow worker and CTranslate2's float32 one differ from these
# only in a backend name and a compute type.
TIMED = ("zoo-jax", "transformers", "ct2-int8")


def test_tiny_run_times_every_row_on_the_same_work(tmp_path):
    output = tmp_path / "marian_speed.json"
    results = marian_speed.main(
        ["--config", "tiny", "--rounds", "1", "--repeats", "1", "--threads", "1",
         "--new-tokens", str(NEW_TOKENS), "--directory", str(tmp_path / "work"),
         "--output", str(output), "--implementations", *TIMED]
    )  # fmt: skip
    cases = {f"{batch}x{beams}" for batch, beams in marian_speed.CASES}
    assert cases == {"1x1", "32x1", "1x4", "32x4"}
    throughput = results["throughput"]
    assert set(throughput) == set(TIMED)
    for name, row in throughput.items():
        assert set(row) == cases, name
        for key, entry in row.items():
            assert entry["sentences_per_s"] > 0, (name, key)
            assert len(entry["per_process_s"]) == 1
            # The rate is the batch over the one process's median.
            batch = int(key.split("x")[0])
            assert entry["sentences_per_s"] == pytest.approx(
                batch / entry["per_process_s"][0]
            )
        assert row["1x1"]["vs_transformers"] == pytest.approx(
            row["1x1"]["sentences_per_s"]
            / throughput["transformers"]["1x1"]["sentences_per_s"]
        )
    assert all(
        entry["vs_transformers"] == 1.0 for entry in throughput["transformers"].values()
    )
    # Fixed work: every sentence of every case, NEW_TOKENS tokens, everywhere.
    assert results["tokens_per_sentence"] == {
        name: {key: [NEW_TOKENS, NEW_TOKENS] for key in cases} for name in TIMED
    }
    assert results["fixed_work"] is True
    # Each worker on the one processor it was given; the peers' workers
    # never load TensorFlow or Keras; the zoo's decodes on JAX.
    for name, workers in results["workers"].items():
        assert [w["processors"] for w in workers] in ([1], [None]), name
    loaded = {name: set(w[0]["loaded"]) for name, w in results["workers"].items()}
    for name in ("transformers", "ct2-int8"):
        assert not loaded[name] & {"tensorflow", "keras"}, name
    assert {"jax", "keras"} <= loaded["zoo-jax"]
    assert results["model_bin"]["int8_bytes"] < results["model_bin"]["float32_bytes"]
    assert json.loads(output.read_text())["throughput"] == json.loads(
        json.dumps(throughput)
    )

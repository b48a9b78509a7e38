"""`keras-seq classify`: one `label<TAB>probability` line per input line."""

import json

import numpy as np
import pytest

from tests.zoo.conftest import run_cli
from zoo.recipes import model_dir


def test_classify_answers_every_line(tiny_runs):
    out, _ = tiny_runs("classifier")
    classified = run_cli("classify", "--model-dir", out, "du is good", "")
    assert classified.returncode == 0, classified.stderr[-2000:]
    rows = [line.split("\t") for line in classified.stdout.splitlines()]
    assert len(rows) == 2  # one line per input, the blank one too
    assert all(label in ("0", "1") and 0.5 <= float(p) <= 1 for label, p in rows)
    by_stdin = run_cli("classify", "--model-dir", out, input="du is good\n\n")
    assert by_stdin.stdout == classified.stdout


def test_a_cut_text_is_one_note_not_a_python_warning(tiny_runs):
    out, _ = tiny_runs("classifier")
    long = " ".join(["good"] * 80)
    result = run_cli("classify", "--model-dir", out, "du is good", long, long)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(result.stdout.splitlines()) == 3
    assert result.stderr.splitlines() == [
        f"loading {out}...",
        "keras-seq: note: 2 of 3 texts are longer than the model's max_length "
        "(32 tokens); each was cut to it.",
    ]


@pytest.fixture(scope="module")
def named_run(tmp_path_factory):
    """A tiny classifier trained on `pos`/`neg` labels."""
    root = tmp_path_factory.mktemp("named")
    german = ["ich", "du", "er", "sie", "wir"]
    rows = [
        f"{w} is {'good' if i % 2 else 'bad'}\t{'pos' if i % 2 else 'neg'}"
        for i, w in enumerate(german * 20)
    ]
    (root / "named.tsv").write_text("\n".join(rows) + "\n")
    out = root / "run"
    trained = run_cli(
        "train", "classifier", "--data", root / "named.tsv", "--preset", "tiny",
        "--epochs", "1", "--output-dir", out, in_process=True,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-2000:]
    return out


def test_text_labels_train_and_classify_by_name(named_run):
    settings = json.loads((named_run / "preprocessor.json").read_text())
    assert settings["class_names"] == ["neg", "pos"]
    trained = model_dir.load_model_dir(str(named_run))
    assert trained.class_names == ["neg", "pos"]
    texts = ["du is good", "er is bad"]
    probabilities = trained.probabilities(texts)
    expected = [["neg", "pos"][i] for i in probabilities.argmax(-1)]
    assert trained.label(texts) == expected
    assert trained.label(texts[0]) == expected[0]
    # From Python, what the command line prints: label and probability.
    classified = trained.classify(texts)
    assert [c.label for c in classified] == expected
    # One text is a batch of its own: its float32 sums may round otherwise.
    one = trained.classify(texts[0])
    assert one.label == classified[0].label
    assert one.probability == pytest.approx(classified[0].probability, abs=1e-5)
    assert one.probabilities == pytest.approx(classified[0].probabilities, abs=1e-5)
    for c, row in zip(classified, probabilities):
        assert c.probabilities == pytest.approx(dict(zip(["neg", "pos"], row)))
        assert c.probability == pytest.approx(row.max())
    result = run_cli("classify", "--model-dir", named_run, *texts, in_process=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == "".join(
        f"{c.label}\t{c.probability:.4f}\n" for c in classified
    )
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [label for label, _ in rows] == expected
    np.testing.assert_allclose(
        [float(p) for _, p in rows], probabilities.max(-1), atol=1e-4
    )


def test_integer_labels_keep_their_ids(tiny_runs):
    out, _ = tiny_runs("classifier")
    assert "class_names" not in json.loads((out / "preprocessor.json").read_text())
    assert model_dir.load_model_dir(str(out)).class_names == ["0", "1"]

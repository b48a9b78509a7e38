"""`zoo.recipes.demo`: what the demo shows besides the translator recipe
(the whole demo runs in tests/zoo/cli/test_demo.py)."""

import types

import keras
import numpy as np

import zoo
from keras_seq import text
from keras_seq.data import TranslationCorpus
from zoo.recipes import demo, plots, run_dir

VOCABULARY = list(text.RESERVED_TOKENS) + ["ich", "sehe", "dich", "i", "see", "you"]


def test_the_attention_map_of_a_middling_sentence_is_drawn(tmp_path, monkeypatch):
    keras.utils.set_random_seed(0)
    model = zoo.build_translator("tiny", vocabulary_size=len(VOCABULARY))
    tokenizer = text.make_tokenizer(VOCABULARY)
    trained = types.SimpleNamespace(
        model=model,
        source_tokenizer=tokenizer,
        target_tokenizer=tokenizer,
        preprocessor=text.TranslationPreprocessor(tokenizer, max_length=8),
    )
    long = " ".join(["ich sehe dich"] * 3)  # 9 words: the one drawn
    corpus = TranslationCorpus(
        train=[], validation=[], test=[("ich.", "i."), (long, "i see you.")]
    )
    drawn = []
    plot = plots.plot_attention
    monkeypatch.setattr(plots, "plot_attention", lambda *a, **k: drawn.append(a))
    path = tmp_path / run_dir.ATTENTION_FILE
    demo.plot_attention(trained, corpus, str(path))
    # Cut by the run's preprocessor (max_length 8), as every path cuts it.
    weights, source_labels, target_labels, _ = drawn[0]
    assert source_labels == ["ich", "sehe", "dich"] * 2 + ["ich", "sehe"]
    assert weights.shape == (len(target_labels), 8)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    plot(weights, source_labels, target_labels, str(path))
    assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 1000


def test_exports_take_the_next_version(tmp_path):
    root, version = run_dir.RunDir(str(tmp_path)).next_export_version()
    assert (root, version) == (str(tmp_path / run_dir.EXPORT_DIR), 1)
    for name in ("1", "3", "notes"):
        (tmp_path / run_dir.EXPORT_DIR / name).mkdir(parents=True)
    assert run_dir.RunDir(str(tmp_path)).next_export_version()[1] == 4

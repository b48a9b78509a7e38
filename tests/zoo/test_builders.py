import keras
import numpy as np
import pytest

import zoo
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.testing import run_model_saving_test

BUILDERS = {
    "translator": (zoo.build_translator, zoo.TRANSLATOR_PRESETS),
    "classifier": (zoo.build_classifier, zoo.CLASSIFIER_PRESETS),
    "masked_language_model": (
        zoo.build_masked_language_model,
        zoo.ENCODER_PRESETS,
    ),
    "language_model": (zoo.build_language_model, zoo.LANGUAGE_MODEL_PRESETS),
}
PRESET_CASES = [
    (family, preset) for family, (_, presets) in BUILDERS.items() for preset in presets
]


def _ids(batch, length, vocabulary_size, seed=0, pad=2):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocabulary_size, size=(batch, length)).astype("int32")
    ids[:, length - pad :] = 0
    return ids


def _inputs(model, vocabulary_size=100):
    if isinstance(model, zoo.Translator):
        return {
            "encoder_token_ids": _ids(3, 7, vocabulary_size),
            "decoder_token_ids": _ids(3, 5, vocabulary_size, seed=1, pad=1),
        }
    return _ids(3, 6, vocabulary_size)


@pytest.mark.parametrize("family, preset", PRESET_CASES)
def test_preset_parameter_counts(family, preset):
    build, presets = BUILDERS[family]
    model = build(preset)
    assert model.count_params() == presets[preset]["params"]
    assert presets[preset]["description"]


def test_book_translator_matches_the_book():
    """6 + 6 blocks of Eq. (7.32) and a 37,000 x 512 output layer: ~63M."""
    model = zoo.build_translator("book")
    encoder = sum(b.count_params() for b in model.encoder_blocks)
    decoder = sum(b.count_params() for b in model.decoder_blocks)
    assert encoder == 6 * 3_150_336  # "about 19 million"
    assert decoder == 6 * 4_199_936  # "about 25 million"
    output = model.target_embedding.token_embedding.count_params()
    assert output == 37_000 * 512  # "about 19 million", tied to the input
    assert model.count_params() == encoder + decoder + output
    assert round(model.count_params() / 1e6) == 63


@pytest.mark.parametrize(
    "preset, paper_millions", [("base", 65), ("big", 213)], ids=["base", "big"]
)
def test_vaswani_presets_are_near_the_paper(preset, paper_millions):
    # The preset's count, which test_preset_parameter_counts holds to the
    # built model's: building `big` again costs seconds for nothing.
    params = zoo.TRANSLATOR_PRESETS[preset]["params"] / 1e6
    assert abs(params - paper_millions) / paper_millions < 0.04


@pytest.mark.parametrize("family", BUILDERS)
def test_named_inputs_save_and_load(family):
    build, _ = BUILDERS[family]
    model = build("tiny")
    names = sorted(i.name for i in keras.tree.flatten(model.inputs))
    expected = (
        ["decoder_token_ids", "encoder_token_ids"]
        if family == "translator"
        else ["token_ids"]
    )
    assert names == expected
    restored = run_model_saving_test(model, _inputs(model), atol=1e-6)
    assert type(restored) is type(model)
    assert restored.get_config() == model.get_config()
    layer_names = [layer.name for layer in model.layers]
    assert layer_names == [layer.name for layer in restored.layers]


@pytest.mark.parametrize("family", BUILDERS)
def test_a_few_fit_steps_lower_the_loss(family):
    build, _ = BUILDERS[family]
    keras.utils.set_random_seed(0)
    model = build("tiny")
    x = _inputs(model)
    if family == "classifier":
        y = np.array([0, 1, 1])
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        ids = x["decoder_token_ids"] if family == "translator" else x
        y = np.roll(ids, -1, axis=1)
        loss = MaskedSparseCategoricalCrossentropy()
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=10, verbose=0)
    after = model.evaluate(x, y, verbose=0)
    assert after < 0.8 * before


def test_translator_cannot_be_sequential():
    """Cross attention takes two inputs, which `Sequential` cannot wire."""
    model = zoo.build_translator("tiny")
    block = model.decoder_blocks[0]
    with pytest.raises((ValueError, TypeError)):
        seq = keras.Sequential([model.source_embedding, block])
        seq(np.ones((1, 4), "int32"))
    decoder_inputs = [node for node in block._inbound_nodes]
    assert len(decoder_inputs[0].arguments.keras_tensors) == 2


def test_translator_source_padding_does_not_leak():
    model = zoo.build_translator("tiny")
    x = _inputs(model)
    longer = dict(x)
    extra = np.full((3, 4), 0, "int32")
    longer["encoder_token_ids"] = np.concatenate([x["encoder_token_ids"], extra], 1)
    a = np.asarray(model(x))
    b = np.asarray(model(longer))
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_tied_embeddings_need_one_vocabulary():
    with pytest.raises(ValueError, match="`source_vocabulary_size` must equal"):
        zoo.build_translator("tiny", tie_embeddings=True, source_vocabulary_size=50)


def test_unknown_preset_and_argument():
    with pytest.raises(ValueError, match="Unknown translator `preset` 'huge'"):
        zoo.build_translator("huge")
    with pytest.raises(TypeError, match="Unknown translator arguments"):
        zoo.build_translator("tiny", width=3)


def test_masked_language_model_sentence_embeddings():
    model = zoo.build_masked_language_model("tiny")
    ids = _ids(3, 6, 100)
    embeddings = np.asarray(model.embed_sentences(ids))
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=-1), 1.0, atol=1e-5)
    padded = np.concatenate([ids, np.zeros((3, 3), "int32")], axis=1)
    np.testing.assert_allclose(
        np.asarray(model.embed_sentences(padded)), embeddings, atol=1e-5
    )


def test_plot_model_draws_the_translator_graph(tmp_path):
    pytest.importorskip("pydot")
    import shutil

    if shutil.which("dot") is None:
        pytest.skip("graphviz is not installed: run `make setup`")
    path = tmp_path / "translator.png"
    keras.utils.plot_model(zoo.build_translator("tiny"), to_file=str(path))
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_dataset_batch_with_an_id_past_the_vocabulary_stops_the_pipeline():
    """`tf.data` batches are checked as they are read, on every backend
    (unchecked, JAX reads NaN and PyTorch raises an IndexError), in one
    message that names the input and the range."""
    tf = pytest.importorskip("tensorflow")

    keras.utils.set_random_seed(0)
    model = zoo.build_translator("tiny", vocabulary_size=30, max_length=8)
    model.compile("adam", MaskedSparseCategoricalCrossentropy())
    source = _ids(8, 6, 30)

    def dataset(source):
        features = {"encoder_token_ids": source, "decoder_token_ids": source}
        return tf.data.Dataset.from_tensor_slices((features, source)).batch(4)

    good = dataset(source)
    history = model.fit(good, validation_data=good, shuffle=False, verbose=0)
    assert np.isfinite(history.history["val_loss"]).all()
    bad_source = source.copy()
    bad_source[5, 1] = 33  # in the second batch
    bad = dataset(bad_source)
    message = (
        "`encoder_token_ids` in the `{}` dataset must lie in [0, 30) "
        "(source_vocabulary_size=30); a batch holds values in [min, max] ="
    )
    calls = {
        "x": lambda: model.fit(bad, shuffle=False, verbose=0),
        "validation_data": lambda: model.fit(
            good, validation_data=bad, shuffle=False, verbose=0
        ),
    }
    for prefix, call in calls.items():
        with pytest.raises(tf.errors.InvalidArgumentError) as refused:
            call()
        assert message.format(prefix) in str(refused.value)
        assert "33" in str(refused.value).split(message.format(prefix))[1][:40]


# The raw model API at its edges: a refusal leaves the model whole, the
# options are refused as the application refuses them, and a row without a
# token has one answer.

V = 30
GENERATING = ("translator", "rnn_translator", "language_model")


@pytest.fixture(scope="module")
def generating_models():
    keras.utils.set_random_seed(0)
    return {
        family: getattr(zoo, f"build_{family}")("tiny", vocabulary_size=V)
        for family in GENERATING
    }


def test_a_refused_dataset_leaves_the_model_whole(tmp_path):
    """Ids and labels past the vocabulary stop the `tf.data` pipeline with
    one message on every backend (unchecked, JAX trains on such labels),
    and the model keeps its weights and saves: Keras' JAX trainer detaches
    the weights before the first batch of an epoch is read."""
    tf = pytest.importorskip("tensorflow")

    keras.utils.set_random_seed(0)
    model = zoo.build_language_model("tiny", vocabulary_size=V, max_length=8)
    model.compile("adam", MaskedSparseCategoricalCrossentropy())
    ids = _ids(4, 6, V)
    model.fit(ids, ids, verbose=0)  # Built and compiled: no symbolic build reads.
    weights = model.get_weights()
    bad_ids, bad_labels = ids.copy(), ids.copy()
    bad_ids[0, 0], bad_labels[1, 1] = V + 3, V + 4

    def dataset(x, y):
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(4)

    refusals = {
        ("token_ids", V + 3): dataset(bad_ids, ids),
        ("y", V + 4): dataset(ids, bad_labels),
    }
    for (name, bad), data in refusals.items():
        message = (
            f"`{name}` in the `x` dataset must lie in [0, {V}) "
            f"(vocabulary_size={V}); a batch holds values in [min, max] ="
        )
        for method in (model.fit, model.evaluate):
            with pytest.raises(tf.errors.InvalidArgumentError) as refused:
                method(data, verbose=0)
            assert message in str(refused.value)
            assert str(bad) in str(refused.value).split(message)[1][:20]
            for before, after in zip(weights, model.get_weights()):
                np.testing.assert_array_equal(before, after)
    with pytest.raises(tf.errors.InvalidArgumentError):
        model.predict(dataset(bad_ids, ids).map(lambda x, y: x), verbose=0)
    for before, after in zip(weights, model.get_weights()):
        np.testing.assert_array_equal(before, after)
    model.save(tmp_path / "kept.keras")
    reloaded = keras.saving.load_model(tmp_path / "kept.keras")
    np.testing.assert_allclose(reloaded.predict(ids, verbose=0), model(ids), atol=1e-5)
    assert np.isfinite(model.fit(dataset(ids, ids), verbose=0).history["loss"]).all()


def _bound(family):
    if family == "language_model":
        return "the vocabulary size"
    return "the target vocabulary size"


NAN, INF = float("nan"), float("inf")
# (options, error, message); `{bound}` names the output vocabulary.
BAD_OPTIONS = [
    ({"strategy": "sample", "temperature": NAN}, ValueError,
     "`temperature` must be a finite number above 0; received nan."),
    ({"strategy": "sample", "temperature": 0.0}, ValueError,
     "`temperature` must be a finite number above 0; received 0.0."),
    ({"strategy": "sample", "temperature": "1"}, TypeError,
     "`temperature` must be a finite number above 0; received '1'."),
    ({"strategy": "sample", "top_k": V + 1}, ValueError,
     f"`top_k` must be at most {V} ({{bound}}); received {V + 1}."),
    ({"strategy": "sample", "top_k": 2.5}, TypeError,
     "`top_k` must be an int; received 2.5."),
    ({"strategy": "sample", "top_p": NAN}, ValueError,
     "`top_p` must be in (0, 1]; received nan."),
    ({"strategy": "beam", "length_penalty": NAN}, ValueError,
     "`length_penalty` must be a finite number; received nan."),
    ({"strategy": "beam", "length_penalty": INF}, ValueError,
     "`length_penalty` must be a finite number; received inf."),
    ({"strategy": "beam", "length_penalty": "0.6"}, TypeError,
     "`length_penalty` must be a finite number; received '0.6'."),
    ({"strategy": "beam", "beam_width": V + 1}, ValueError,
     f"`beam_width` must be at most {V} ({{bound}}); received {V + 1}."),
    ({"strategy": "beam", "beam_width": 100_000}, ValueError,
     f"`beam_width` must be at most {V} ({{bound}}); received 100000."),
    ({"strategy": "beam", "beam_width": None}, TypeError,
     "`beam_width` must be an int; received None."),
]  # fmt: skip


@pytest.mark.parametrize("family", GENERATING)
def test_decoding_options_are_refused_as_the_application_refuses_them(
    generating_models, family
):
    from zoo.recipes.model_dir import check_int_in  # `TrainedModel`'s check

    model = generating_models[family]
    prompt = np.array([[5, 6], [7, 8]], "int32")
    for options, error, message in BAD_OPTIONS:
        message = message.format(bound=_bound(family))
        with pytest.raises(error) as refused:
            model.generate(prompt, 3, **options)
        assert str(refused.value) == message, options
        if options["strategy"] == "beam":
            beam_options = {k: v for k, v in options.items() if k != "strategy"}
            with pytest.raises(error) as refused:
                model.beam_search(prompt, 3, **beam_options)
            assert str(refused.value) == message
    # The message `TrainedModel.translate` gives for the same beam width.
    with pytest.raises(ValueError) as refused:
        check_int_in(V + 1, "beam_width", 1, V, _bound(family))
    assert str(refused.value) == BAD_OPTIONS[9][2].format(bound=_bound(family))


@pytest.mark.parametrize("family", GENERATING)
def test_a_row_without_a_token_answers_the_end_token(generating_models, family):
    """An all-padding row, or a source or prompt of length 0, decodes to the
    end token and zeros (an empty output), by every search; no model runs
    over no token."""
    from keras_seq.text import END_ID

    model = generating_models[family]
    empty_row = [END_ID, 0, 0, 0]
    ids = np.array([[0, 0], [5, 6]], "int32")  # all padding beside a real row
    greedy = keras.ops.convert_to_numpy(model.generate(ids, 4))
    assert greedy[0].tolist() == empty_row
    no_source = keras.ops.convert_to_numpy(model.generate(ids[:, :0], 4))
    assert no_source.tolist() == [empty_row, empty_row]
    best, scores = model.beam_search(ids, 4, beam_width=2, num_return=2)
    assert keras.ops.convert_to_numpy(best)[0].tolist() == [empty_row, empty_row]
    assert keras.ops.convert_to_numpy(scores)[0].tolist() == [0.0, 0.0]

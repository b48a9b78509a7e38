"""The PyTorch decoding path of `keras_seq.generation.fast_step`.

It must compute what the layers' own `encode`, `start_decoding` and
`decoding_step` compute: the same encoder output and caches (1e-5), the
same logits (1e-5) at every position, including a padding query (a
finished beam's) and a source without real tokens, and so the same greedy
and beam ids; the eager loops around it (beam search's bookkeeping, the
greedy choice, the masked ids) choose what the `keras.ops` loops choose.
Off PyTorch, and where it cannot mirror the layers exactly, there is no
fast path and generation takes the ordinary one.
"""

import contextlib

import keras
import numpy as np
import pytest

import zoo
from keras_seq.generation import beam, sampling
from keras_seq.generation.fast_step import torch_decoder_step, torch_encoder
from keras_seq.generation.loop_policy import LoopPolicy
from keras_seq.masks import mask_token_logits, token_logits_mask
from keras_seq.testing import assert_all_close

START = 2
ON_TORCH = keras.backend.backend() == "torch"
torch_only = pytest.mark.skipif(not ON_TORCH, reason="a PyTorch step")

TRANSLATORS = {
    "post-norm, untied, sinusoidal": {},
    "pre-norm, tied, learned": {
        "norm_first": True,
        "tie_embeddings": True,
        "positional": "learned",
    },
    "no biases, gelu": {"attention_bias": False, "activation": "gelu"},
    "Marian's: swish, concatenated sines, tied output with logits bias": {
        "activation": "swish",
        "sinusoidal_layout": "concatenated",
        "tie_output_embedding": True,
        "logits_bias": True,
    },
}


def _translator(**overrides):
    keras.utils.set_random_seed(1)
    return _spread(zoo.build_translator("tiny", vocabulary_size=50, **overrides))


def _language_model(**overrides):
    keras.utils.set_random_seed(2)
    return _spread(zoo.build_language_model("tiny", vocabulary_size=50, **overrides))


def _spread(model):
    """Token tables of unit scale: untrained, the default small ones make
    every position's logits nearly alike and the greedy paths constant."""
    rng = np.random.default_rng(3)
    for variable in model.variables:
        if variable.path.endswith("token_embedding/embeddings"):
            variable.assign(rng.normal(size=variable.shape).astype("float32"))
    return model


def _source():
    ids = np.random.default_rng(0).integers(4, 50, (3, 7)).astype("int32")
    ids[1, 4:] = 0
    ids[2, :] = 0  # No real token: cross attention has no key.
    return ids


def _no_grad():
    if not ON_TORCH:
        return contextlib.nullcontext()
    import torch  # The PyTorch backend only.

    return torch.no_grad()


def _step_both_ways(model, source, ids):
    """Logits of the ordinary and the fast step at every position of `ids`."""
    steps = ids.shape[1]
    with _no_grad():
        fast = model.fast_decoding_step()
        assert fast is not None
        results = []
        for step in (model.decoding_step, fast):
            given, context, cache = model.start_decoding(source, steps, START)
            logits = []
            for t in range(steps):
                previous = keras.ops.convert_to_tensor(ids[:, t : t + 1])
                out, cache = step(previous, t, context, cache)
                logits.append(keras.ops.convert_to_numpy(out))
            results.append(np.stack(logits, axis=1))
    return results


@torch_only
@pytest.mark.parametrize("overrides", TRANSLATORS.values(), ids=TRANSLATORS.keys())
def test_translator_fast_step_equals_ordinary_step(overrides):
    model = _translator(**overrides)
    ids = np.random.default_rng(1).integers(4, 50, (3, 6)).astype("int32")
    ids[:, 0] = START
    ids[0, 3] = 0  # A padding query, as a finished beam feeds.
    ordinary, fast = _step_both_ways(model, _source(), ids)
    assert np.ptp(ordinary) > 1.0  # The logits are not degenerate.
    assert_all_close(fast, ordinary, atol=1e-5)


@torch_only
@pytest.mark.parametrize("tie", [True, False])
def test_language_model_fast_step_equals_ordinary_step(tie):
    model = _language_model(tie_embeddings=tie)
    ids = np.random.default_rng(2).integers(4, 50, (2, 9)).astype("int32")
    ids[1, 5] = 0
    ordinary, fast = _step_both_ways(model, ids[:, :2], ids)
    assert_all_close(fast, ordinary, atol=1e-5)


def _without_fast_step(model):
    """`model` decoding through its ordinary path, with fresh loops."""
    model.fast_decoding_step = lambda: None
    model.fast_start_decoding = lambda: None
    model.__dict__.pop("_generate_functions", None)
    return model


@torch_only
@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_fast_and_ordinary_steps_generate_the_same_ids(strategy):
    options = {"strategy": strategy, "max_new_tokens": 10, "end_token_id": 7}
    translator, language_model = _translator(), _language_model(tie_embeddings=False)
    source, prompt = _source(), _source()[:2, :3]
    fast = [translator.generate(source, **options)]
    fast.append(language_model.generate(prompt, **options))
    ordinary = [_without_fast_step(translator).generate(source, **options)]
    ordinary.append(_without_fast_step(language_model).generate(prompt, **options))
    for got, expected in zip(fast, ordinary):
        expected = keras.ops.convert_to_numpy(expected)
        assert len(np.unique(expected)) > 2  # The paths are not degenerate.
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got), expected)


@torch_only
def test_fast_step_reads_the_current_weights():
    model = _translator()
    source = _source()
    before = keras.ops.convert_to_numpy(model.generate(source, max_new_tokens=6))
    for variable in model.decoder_blocks[0].trainable_variables:
        variable.assign(variable * 3.0)
    after = keras.ops.convert_to_numpy(model.generate(source, max_new_tokens=6))
    expected = _without_fast_step(model).generate(source, max_new_tokens=6)
    assert not np.array_equal(after, before)
    np.testing.assert_array_equal(after, keras.ops.convert_to_numpy(expected))


def test_no_fast_step_where_it_would_not_mirror_the_layers():
    model = _translator()
    if not ON_TORCH:
        # TensorFlow and JAX compile the ordinary path; it still generates.
        assert model.fast_decoding_step() is None
        assert model.fast_start_decoding() is None
        ids = keras.ops.convert_to_numpy(model.generate(_source(), max_new_tokens=4))
        assert ids.shape == (3, 4)
        return
    # Outside `torch.no_grad()` the step could not write the caches.
    assert model.fast_decoding_step() is None
    assert model.fast_start_decoding() is None
    with _no_grad():
        assert torch_decoder_step(model.decoder_stack()) is not None
        keras.config.set_dtype_policy("mixed_bfloat16")
        try:
            mixed = _translator()
        finally:
            keras.config.set_dtype_policy("float32")
        assert mixed.fast_decoding_step() is None
        assert mixed.fast_start_decoding() is None


@torch_only
@pytest.mark.parametrize("overrides", TRANSLATORS.values(), ids=TRANSLATORS.keys())
def test_fast_start_equals_the_layers_encoder_and_caches(overrides):
    model = _translator(**overrides)
    source = _source()
    with _no_grad():
        fast = model.fast_start_decoding()
        assert fast is not None
        results = [
            start(keras.ops.convert_to_tensor(source), 5, START)
            for start in (model.start_decoding, fast)
        ]
    (given, context, cache), (fast_given, fast_context, fast_cache) = [
        keras.tree.map_structure(keras.ops.convert_to_numpy, r) for r in results
    ]
    encoded, mask, cross = context
    fast_encoded, fast_mask, fast_cross = fast_context
    assert np.ptp(encoded[0]) > 1.0  # Not degenerate.
    # Every position, padding included: the layers' output there is defined.
    assert_all_close(fast_encoded, encoded, atol=1e-5)
    np.testing.assert_array_equal(fast_mask, mask)
    for got, expected in zip(fast_cross, cross, strict=True):
        assert got.shape == expected.shape  # (B, 2, N, S, H)
        assert_all_close(got, expected, atol=1e-5)
    np.testing.assert_array_equal(fast_given, given)
    for got, expected in zip(fast_cache, cache, strict=True):
        np.testing.assert_array_equal(got, expected)


@torch_only
def test_fast_path_is_invariant_to_trailing_source_padding():
    model = _translator()
    source = _source()[:2]
    padded = np.pad(source, [[0, 0], [0, 4]])
    options = {"max_new_tokens": 8, "end_token_id": None}
    with _no_grad():
        encoder = torch_encoder(model.encoder_stack())
        short, _ = encoder(source)
        long, _ = encoder(padded)
    assert_all_close(
        keras.ops.convert_to_numpy(long)[:, : source.shape[1]],
        keras.ops.convert_to_numpy(short),
        atol=1e-5,
    )
    for strategy in ("greedy", "beam"):
        ids = [
            keras.ops.convert_to_numpy(model.generate(x, strategy=strategy, **options))
            for x in (source, padded)
        ]
        np.testing.assert_array_equal(ids[1], ids[0])


@torch_only
def test_eager_beam_step_chooses_as_the_keras_ops_step(monkeypatch):
    """Beam search's PyTorch bookkeeping against its `keras.ops` loop, which
    runs on PyTorch too when told that the backend compiles with XLA."""
    model = _translator()
    options = {"max_new_tokens": 9, "beam_width": 3, "num_return": 3}
    source = _source()
    # An end token that the best hypothesis of the first row produces third,
    # so some beams end early and wait while others go on.
    best = model.beam_search(source, end_token_id=None, **options)[0]
    options["end_token_id"] = int(keras.ops.convert_to_numpy(best)[0, 0, 2])
    eager = model.beam_search(source, **options)
    eager = [keras.ops.convert_to_numpy(x) for x in eager]
    model.__dict__.pop("_generate_functions", None)
    steps_per_check = beam.default_steps_per_check()  # PyTorch's
    monkeypatch.setattr(beam, "current_policy", lambda: LoopPolicy(compiled=True))
    monkeypatch.setattr(beam, "default_steps_per_check", lambda: steps_per_check)
    ops_loop = [
        keras.ops.convert_to_numpy(x) for x in model.beam_search(source, **options)
    ]
    assert len(np.unique(eager[0])) > 3  # Not degenerate.
    ended = eager[0] == options["end_token_id"]
    assert ended.any() and not ended.any(axis=-1).all()
    np.testing.assert_array_equal(eager[0], ops_loop[0])
    assert_all_close(eager[1], ops_loop[1], atol=1e-5)


@torch_only
def test_token_masker_equals_mask_token_logits():
    logits = keras.ops.convert_to_tensor(
        np.random.default_rng(4).normal(size=(3, 9)).astype("float32")
    )
    for ids in [(), (0, 1), (0, 8, 12)]:  # 12 is outside the vocabulary.
        allowed = token_logits_mask(ids, 9)
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(sampling.token_masker(allowed)(logits)),
            keras.ops.convert_to_numpy(mask_token_logits(logits, allowed)),
        )


@torch_only
def test_small_batches_decode_on_one_thread_and_restore_the_count():
    import torch  # The PyTorch backend only.

    model = _translator()
    threads = []
    step = model.fast_decoding_step

    def counting_step():
        threads.append(torch.get_num_threads())
        return step()

    model.fast_decoding_step = counting_step
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        source = _source()
        model.generate(source[:1], max_new_tokens=3)
        model.generate(np.tile(source, (2, 1)), max_new_tokens=3)  # 6 rows
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert sampling.ONE_THREAD_BATCH < 6
    assert threads == [1, 2]


@torch_only
def test_calls_from_other_python_threads_keep_the_thread_count():
    # A count set from another Python thread holds for the main thread too,
    # but one set back from there does not: such calls leave it alone.
    import threading

    import torch  # The PyTorch backend only.

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    seen = []

    def decode():
        with sampling.one_thread():
            seen.append(torch.get_num_threads())

    try:
        worker = threading.Thread(target=decode)
        worker.start()
        worker.join(10)
        decode()
        seen.append(torch.get_num_threads())
    finally:
        torch.set_num_threads(before)
    assert seen == [2, 1, 2]


@torch_only
def test_built_path_is_reused_until_a_weight_changes():
    model = _translator()
    with _no_grad():
        first = torch_decoder_step(model.decoder_stack())
        assert torch_decoder_step(model.decoder_stack()) is first
        model.output_dense.bias.assign(model.output_dense.bias + 1.0)
        assert torch_decoder_step(model.decoder_stack()) is not first

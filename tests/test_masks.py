import keras
import numpy as np
import pytest
from keras import ops

from keras_seq import masks


def test_padding_mask():
    ids = np.array([[5, 3, 0, 0], [1, 0, 0, 0]], "int32")
    np.testing.assert_array_equal(
        np.asarray(masks.padding_mask(ids)),
        [[True, True, False, False], [True, False, False, False]],
    )


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_padding_mask_refuses_float_ids(dtype):
    with pytest.raises(ValueError, match="`token_ids` must hold integer.*float"):
        masks.padding_mask(np.zeros((2, 3), dtype))


def test_padding_mask_refuses_wrong_rank():
    with pytest.raises(ValueError, match=r"`token_ids` must have rank 2.*\(3,\)"):
        masks.padding_mask(np.zeros((3,), "int32"))


def test_check_token_ids_range():
    with pytest.raises(ValueError, match=r"\[0, 10\).*\[1, 12\]"):
        masks.check_token_ids(np.array([[1, 12]]), vocabulary_size=10)


def test_check_id_range_message_names_the_bound():
    with pytest.raises(ValueError) as info:
        masks.check_id_range(np.array([0, 1, 5]), "y", 2, "num_classes")
    assert str(info.value) == (
        "`y` must lie in [0, 2) (num_classes=2); received values in [0, 5]."
    )
    with pytest.raises(ValueError) as info:
        masks.check_token_ids(np.array([[-3, 4]]), "decoder_token_ids", 10)
    assert str(info.value) == (
        "`decoder_token_ids` must lie in [0, 10) (vocabulary_size=10); "
        "received values in [-3, 4]."
    )
    # The ends of the range and empty batches pass.
    masks.check_id_range(np.array([[0, 9]]), "token_ids", 10)
    masks.check_id_range(np.zeros((0, 4), "int32"), "token_ids", 10)


def test_check_id_range_leaves_symbolic_ids_unread():
    # A symbolic tensor has no values to check: the graph it builds is the
    # same for every batch.
    symbolic = keras.KerasTensor((None, 4), dtype="int32")
    masks.check_id_range(symbolic, "token_ids", 10)
    masks.check_token_ids(symbolic, vocabulary_size=10)


def test_causal_mask_square_is_lower_triangular():
    np.testing.assert_array_equal(
        np.asarray(masks.causal_mask(4, 4)), np.tril(np.ones((4, 4), bool))
    )


def test_causal_mask_offsets():
    # One query at cache index 2 sees keys 0..2 of a 5-long cache.
    np.testing.assert_array_equal(
        np.asarray(masks.causal_mask(1, 5, offset=2)),
        [[True, True, True, False, False]],
    )
    # A tensor offset works too (it is the decoding loop's counter).
    offset = ops.convert_to_tensor(3)
    np.testing.assert_array_equal(
        np.asarray(masks.causal_mask(2, 5, offset=offset)),
        [[True, True, True, True, False], [True, True, True, True, True]],
    )
    # Without an offset, queries align with the last keys (bottom-right).
    np.testing.assert_array_equal(
        np.asarray(masks.causal_mask(2, 3, batch_size=2))[1],
        [[True, True, False], [True, True, True]],
    )


def test_merge_masks_is_logical_and_and_broadcasts():
    key = np.array([[True, True, False]])[:, None, :]  # (1, 1, 3)
    causal = masks.causal_mask(3, 3)  # (3, 3)
    merged = np.asarray(masks.merge_masks(None, key, causal))
    np.testing.assert_array_equal(
        merged[0], [[True, False, False], [True, True, False], [True, True, False]]
    )
    assert masks.merge_masks(None, None) is None


def test_attention_mask_from_padding():
    query = np.array([[True, False]])
    key = np.array([[True, True, False]])
    merged = np.asarray(masks.attention_mask_from_padding(query, key))
    np.testing.assert_array_equal(
        merged, [[[True, True, False], [False, False, False]]]
    )


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_masked_value_is_finite_and_safe_in_dtype(dtype):
    value = masks.masked_value(dtype)
    as_dtype = ops.cast(ops.convert_to_tensor([value, value - 10.0]), dtype)
    values = np.asarray(ops.cast(as_dtype, "float32"))
    assert np.all(np.isfinite(values))
    assert value < -1e4
    # A whole row of masked logits still gives a finite (uniform) softmax.
    row = ops.cast(ops.full((4,), value), dtype)
    probs = np.asarray(ops.cast(ops.softmax(row), "float32"))
    np.testing.assert_allclose(probs, 0.25, atol=1e-2)


def test_check_mask_shape():
    masks.check_mask_shape(np.ones((2, 3)), "m", (None, 3))
    with pytest.raises(ValueError, match=r"`m` must have shape \(\?, 4\)"):
        masks.check_mask_shape(np.ones((2, 3)), "m", (None, 4))
    symbolic = keras.Input((3,))
    masks.check_mask_shape(symbolic, "m", (2, 3))


def test_the_pipeline_check_states_the_eager_rule():
    """One wording for the id range, in process and inside `tf.data`."""
    tf = pytest.importorskip("tensorflow")
    rule = masks.id_range_rule("y", 2, "num_classes", where=" in the `x` dataset")
    assert rule == "`y` in the `x` dataset must lie in [0, 2) (num_classes=2)"

    def checked(ids):
        with tf.control_dependencies(
            [masks.assert_id_range(ids, "y", 2, "num_classes", " in the `x` dataset")]
        ):
            return tf.identity(ids)

    good = tf.data.Dataset.from_tensor_slices(np.array([[0, 1], [1, 1]])).batch(2)
    assert next(iter(good.map(checked))).numpy().tolist() == [[0, 1], [1, 1]]
    empty = tf.data.Dataset.from_tensors(np.zeros((0,), "int64"))
    assert next(iter(empty.map(checked))).numpy().size == 0
    bad = tf.data.Dataset.from_tensor_slices(np.array([[0, 1], [5, -1]])).batch(2)
    with pytest.raises(tf.errors.InvalidArgumentError) as refused:
        next(iter(bad.map(checked)))
    after = str(refused.value).split(f"{rule}; a batch holds values in [min, max] =")
    # TensorFlow prints the two values after the message, each in brackets.
    assert len(after) == 2 and after[1].split()[:3] == ["]", "[-1]", "[5]"]


@pytest.mark.parametrize(
    "shape, per_head_shape",
    [((3, 4), (1, 1, 3, 4)), ((1, 3, 4), (1, 1, 3, 4)), ((2, 3, 4), (2, 1, 3, 4)),
     ((2, 5, 3, 4), (2, 5, 3, 4)), ((1, 1, 3, 4), (1, 1, 3, 4))],
)  # fmt: skip
def test_attention_masks_of_every_keras_shape_get_batch_and_head_axes(
    shape, per_head_shape
):
    mask = np.random.default_rng(0).random(shape) > 0.5
    per_head = masks.attention_mask_per_head(mask, 2, 5, 3, 4)
    assert tuple(per_head.shape) == per_head_shape
    np.testing.assert_array_equal(
        np.broadcast_to(ops.convert_to_numpy(per_head), (2, 5, 3, 4)),
        np.broadcast_to(mask.reshape(per_head_shape), (2, 5, 3, 4)),
    )
    assert masks.attention_mask_per_head(None, 2, 5, 3, 4) is None


@pytest.mark.parametrize("shape", [(4,), (3, 5), (2, 4, 4), (3, 3, 4), (2, 2, 3, 4)])
def test_attention_masks_of_other_shapes_are_refused(shape):
    with pytest.raises(ValueError, match=r"`attention_mask` must have shape .*"):
        masks.attention_mask_per_head(np.ones(shape, bool), 2, 5, 3, 4)


def test_token_logits_mask_rules_out_the_ids_below_the_size():
    allowed = masks.token_logits_mask((0, 3, 99), 5)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(allowed), [[False, True, True, False, True]]
    )
    assert masks.token_logits_mask((7, -1), 5) is None
    logits = np.arange(10, dtype="float32").reshape(2, 5)
    masked = ops.convert_to_numpy(masks.mask_token_logits(logits, allowed))
    sentinel = np.float32(masks.masked_value("float32"))
    np.testing.assert_array_equal(
        masked, [[sentinel, 1, 2, sentinel, 4], [sentinel, 6, 7, sentinel, 9]]
    )
    assert masks.mask_token_logits(logits, None) is logits

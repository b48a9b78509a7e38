"""The base shared by the encoder and decoder blocks: checks, sizes, config."""

import keras
import numpy as np
import pytest

from keras_seq.layers import TransformerDecoderBlock, TransformerEncoderBlock

BLOCKS = [TransformerEncoderBlock, TransformerDecoderBlock]


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0}, r"`num_heads` must be a positive integer; received 0"),
        ({"ff_dim": 0}, r"`ff_dim` must be a positive integer; received 0"),
        ({"key_dim": 0}, r"`key_dim` must be a positive integer or None"),
        ({"value_dim": 2.5}, r"`value_dim` must be a positive integer or None"),
        ({"dropout": 1.0}, r"`dropout` must be in \[0, 1\); received 1.0"),
        (
            {"attention_dropout": -0.1},
            r"`attention_dropout` must be in \[0, 1\); received -0.1",
        ),
    ],
)
def test_hyperparameters_are_checked(block, kwargs, message):
    arguments = {"num_heads": 2, "ff_dim": 8, **kwargs}
    with pytest.raises(ValueError, match=message):
        block(**arguments)


@pytest.mark.parametrize("block", BLOCKS)
def test_head_widths_default_to_an_even_split(block):
    layer = block(num_heads=4, ff_dim=8)
    assert layer._head_dims(16) == (4, 4)
    assert block(num_heads=4, ff_dim=8, key_dim=3)._head_dims(16) == (3, 3)
    assert block(num_heads=4, ff_dim=8, value_dim=5)._head_dims(16) == (4, 5)
    with pytest.raises(ValueError, match="`num_heads` must divide"):
        layer._head_dims(10)


@pytest.mark.parametrize("block", BLOCKS)
def test_config_round_trip(block):
    layer = block(
        num_heads=2,
        ff_dim=8,
        key_dim=3,
        dropout=0.1,
        activation="gelu",
        norm_first=True,
        attention_bias=False,
        attention_implementation="explicit",
    )
    config = layer.get_config()
    assert block.from_config(config).get_config() == config


@pytest.mark.parametrize("block", BLOCKS)
def test_attention_dropout_is_its_own_rate(block):
    # None keeps what configs saved before the setting meant: `dropout`.
    assert block(num_heads=2, ff_dim=8, dropout=0.2)._attention(8, "a").dropout == 0.2
    layer = block(num_heads=2, ff_dim=8, dropout=0.2, attention_dropout=0.0)
    assert layer._attention(8, "a").dropout == 0.0
    assert layer.get_config()["attention_dropout"] == 0.0
    old = block(num_heads=2, ff_dim=8, dropout=0.2).get_config()
    del old["attention_dropout"]
    assert block.from_config(old)._attention(8, "a").dropout == 0.2


def test_attention_weights_are_dropped_only_at_the_attention_rate():
    # With the sublayers' dropout at 0, a training call equals inference
    # exactly when the attention dropout is 0 too.
    x = keras.random.normal((2, 5, 8), seed=0)
    outputs = {}
    for rate in (0.0, 0.5):
        layer = TransformerEncoderBlock(
            num_heads=2, ff_dim=8, dropout=0.0, attention_dropout=rate
        )
        layer(x)
        outputs[rate] = [
            keras.ops.convert_to_numpy(layer(x, training=t)) for t in (True, False)
        ]
    np.testing.assert_allclose(*outputs[0.0], atol=1e-6)
    assert np.abs(outputs[0.5][0] - outputs[0.5][1]).max() > 1e-3

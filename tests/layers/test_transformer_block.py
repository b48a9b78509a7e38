"""The base shared by the encoder and decoder blocks: checks, sizes, config."""

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

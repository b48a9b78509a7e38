"""Dropout whose mask costs a third of the random numbers.

`keras.layers.Dropout` draws one 32-bit random number per element it may
drop (Philox on TensorFlow, Threefry on JAX). Under XLA on a CPU those
draws were a large part of a Transformer's training step: the
TensorFlow profiler put the generator's fusions at about a quarter of the
step's processor time for the `small` translator. A keep-or-drop decision
needs far fewer bits than 32, so this layer splits each 30-bit draw into
three 10-bit numbers, one per element, and keeps an element when its
number is at least `round(rate * 1024)`. On TensorFlow with XLA this made
the `small` translator's training step 5-10% faster; without XLA, and on
JAX, it was as fast as Keras's (see benchmarks/README.md).

The rate is realised to a multiple of 1/1024 (0.1 becomes 102/1024 =
0.0996), and kept elements are scaled by the inverse of the realised keep
probability, so the output's expectation is exactly the input. A rate
that 1/1024 steps cannot match within 1% (0.01 -> 0.0098) is left to
`keras.random.dropout`, which draws a number per element.
"""

import math

import keras
from keras import ops

# Bits of one random draw spent on each element, and elements per draw:
# `keras.random.randint` draws int32 numbers below 2**30, three fields of
# 10 bits, each uniform and independent because 2**30 is a power of two.
_FIELD_BITS = 10
_FIELDS = 3
_LEVELS = 1 << _FIELD_BITS
# Largest relative error of the realised rate for which the packed mask is
# used.
_RATE_TOLERANCE = 0.01


def packed_rate(rate):
    """The rate the packed mask realises, or `None` if it cannot within 1%.

    >>> packed_rate(0.1)
    0.099609375
    >>> packed_rate(0.01) is None
    True
    """
    threshold = round(rate * _LEVELS)
    realised = threshold / _LEVELS
    if threshold <= 0 or threshold >= _LEVELS:
        return None
    if abs(realised - rate) > _RATE_TOLERANCE * rate:
        return None
    return realised


def _noise_shape(inputs, noise_shape):
    """The mask's shape: `noise_shape` with `None` read from `inputs`.

    Entries are Python ints where the shape is static and scalar tensors
    where it is only known at run time (a TensorFlow graph without XLA).
    """
    shape = ops.shape(inputs)
    if noise_shape is None:
        return tuple(shape)
    return tuple(shape[i] if d is None else d for i, d in enumerate(noise_shape))


def packed_dropout(inputs, rate, noise_shape=None, seed=None):
    """`keras.random.dropout` with 10 random bits per element, not 32.

    Args:
        inputs: a float tensor.
        rate: float in [0, 1), the probability of dropping an element.
        noise_shape: optional shape of the mask, broadcast against
            `inputs`; `None` entries take the input's size.
        seed: a `keras.random.SeedGenerator` (or an int), as for
            `keras.random.dropout`.

    Returns:
        `inputs` with elements set to zero with probability
        `packed_rate(rate)` and the others divided by one minus it; for a
        rate `packed_rate` cannot realise, `keras.random.dropout(...)`.
    """
    if rate == 0:
        return inputs
    realised = packed_rate(rate)
    if realised is None:
        return keras.random.dropout(inputs, rate, noise_shape=noise_shape, seed=seed)
    shape = _noise_shape(inputs, noise_shape)
    size = math.prod(shape)
    draws = (size + _FIELDS - 1) // _FIELDS
    bits = keras.random.randint(
        (draws, 1), 0, 1 << (_FIELD_BITS * _FIELDS), dtype="int32", seed=seed
    )
    shifts = ops.arange(0, _FIELD_BITS * _FIELDS, _FIELD_BITS, dtype="int32")
    fields = ops.bitwise_and(ops.right_shift(bits, shifts), _LEVELS - 1)  # (draws, 3)
    fields = ops.reshape(ops.reshape(fields, (-1,))[:size], shape)  # noise shape
    keep = ops.greater_equal(fields, round(realised * _LEVELS))
    scale = ops.cast(1.0 / (1.0 - realised), inputs.dtype)
    return ops.where(keep, inputs * scale, ops.zeros_like(inputs))


@keras.saving.register_keras_serializable(package="keras_seq")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` drawing 10 random bits per element, not 32.

    The same arguments, configuration and behaviour as
    `keras.layers.Dropout`, except that the mask comes from
    `packed_dropout`: a rate is realised to a multiple of 1/1024 (0.1
    becomes 0.0996; a rate no multiple matches within 1% gets Keras's
    mask) and the kept elements are scaled so the expectation is
    unchanged. Every
    dropout of keras-seq's Transformer layers and builders is this one.

    Example:

    >>> layer = Dropout(0.1)
    >>> x = keras.ops.ones((2, 3))
    >>> bool(keras.ops.all(layer(x, training=False) == x))
    True
    """

    def call(self, inputs, training=False):
        if training and self.rate > 0:
            return packed_dropout(
                inputs,
                self.rate,
                noise_shape=self.noise_shape,
                seed=self.seed_generator,
            )
        return inputs

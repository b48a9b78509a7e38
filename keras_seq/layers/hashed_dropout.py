"""Dropout whose mask is a hash of each element's position.

`keras.layers.Dropout` draws one random number per element it may drop;
under XLA the generator runs as a call of its own whose output must be
stored and reshaped before the multiply. `hashed_dropout` draws only a key,
two numbers per call, and derives each element's keep-or-drop number from
the key and the element's position in the mask:

    h(i) = mix32(mix32(i * G + key[0]) ^ key[1]),   keep i iff h(i) >= r

with `G = 2**32 / golden ratio` (Knuth's multiplicative hashing: an odd
multiplier that sends consecutive positions far apart), `mix32` the
`lowbias32` mixer of C. Wellons' "Hash function prospector" (a bijection
of 32-bit integers whose output bits each flip with probability close to
1/2 when one input bit flips) and `r = round(rate * 2**32)`. Every step is
a bijection of uint32, so distinct positions get distinct numbers and, over
all 2**32 positions, every number occurs exactly once: the share of numbers
below `r` is `r / 2**32`, which is `rate` to within 2**-32 (the rounding of
`r`). The mixer makes the numbers of a mask's positions behave as draws
from that range, so each element is dropped with probability `rate`.
These are elementwise integer operations on the positions, which XLA fuses
into the loop that applies the mask, so no random numbers are stored
(measurements: benchmarks/history.md, "Dropout masks, hashed").

A hash is not a cryptographic generator, and dropout does not need one:
the tests check the drop rate, the expectation, that neighbouring positions
and successive calls are independent, seeds and noise shapes. The hash
needs wrap-around unsigned 32-bit arithmetic. TensorFlow and JAX have
uint32 tensors; PyTorch promotes uint32 arithmetic to int64, so there the
32-bit words are held in int64 and each multiply is split into 16-bit
halves that cannot overflow (`_multiply32`): every backend computes the
same numbers, so a mask or a draw hashed from a seed is the same on all
three.
"""

import math

import keras
import numpy as np
from keras import ops

from keras_seq.validation import check_rate

# Multiplies a position before mixing: 2**32 over the golden ratio, odd,
# so that consecutive positions land far apart (Knuth's multiplicative
# hashing).
_GOLDEN = 0x9E3779B9
# The two multipliers of lowbias32 (shifts 16, 15, 16).
_MIX_1, _MIX_2 = 0x7FEB352D, 0x846CA68B
_LOW_32 = 0xFFFFFFFF
# Backends whose `HashedDropout` draws its mask with `keras.random.dropout`:
# the hash pays where XLA fuses it into the multiply, but eager PyTorch
# launches each of its two dozen integer operations over the whole mask.
NATIVE_MASK_BACKENDS = ("torch",)


def word_dtype():
    """The dtype holding the hash's 32-bit words on the active backend.

    uint32 where the backend wraps uint32 arithmetic (TensorFlow, JAX);
    int64 on PyTorch, whose uint32 arithmetic is promoted to int64.
    """
    return "int64" if keras.backend.backend() == "torch" else "uint32"


def to_words(value):
    """`value` (ints in [0, 2**32) or a tensor of them) as hash words."""
    if isinstance(value, (int, np.integer, list, tuple, np.ndarray)):
        value = np.asarray(value, dtype="uint32")
    return ops.cast(value, word_dtype())


def _multiply32(x, multiplier):
    """`x * multiplier` modulo 2**32, for words and a Python int multiplier."""
    if word_dtype() == "uint32":
        return ops.multiply(x, to_words(multiplier))
    # int64 words below 2**32: times a 16-bit half each product stays below
    # 2**48, so nothing overflows and the low 32 bits are exact.
    low = ops.multiply(x, multiplier & 0xFFFF)
    high = ops.bitwise_and(ops.multiply(x, multiplier >> 16), 0xFFFF)
    return ops.bitwise_and(ops.add(low, ops.left_shift(high, 16)), _LOW_32)


def add32(x, y):
    """`x + y` modulo 2**32, for words."""
    if word_dtype() == "uint32":
        return ops.add(x, y)
    return ops.bitwise_and(ops.add(x, y), _LOW_32)


def mix32(x):
    """The `lowbias32` mixer of 32-bit words, elementwise.

    A bijection of 32-bit integers (xor-shift, multiply, xor-shift,
    multiply, xor-shift), with wrap-around multiplies.

    >>> int(mix32(to_words(1)))
    1753845952
    """
    x = to_words(x)
    x = ops.bitwise_xor(x, ops.right_shift(x, to_words(16)))
    x = _multiply32(x, _MIX_1)
    x = ops.bitwise_xor(x, ops.right_shift(x, to_words(15)))
    x = _multiply32(x, _MIX_2)
    return ops.bitwise_xor(x, ops.right_shift(x, to_words(16)))


def counter_hashes(counters, key_0, key_1):
    """`mix32(mix32(counter * golden + key_0) ^ key_1)`, broadcasting.

    Args:
        counters: int tensor of counters (positions), below 2**31.
        key_0, key_1: words broadcast against `counters`.

    Returns:
        Words, distinct for distinct counters under the same keys.
    """
    x = add32(_multiply32(to_words(counters), _GOLDEN), to_words(key_0))
    return mix32(ops.bitwise_xor(mix32(x), to_words(key_1)))


def _noise_shape(inputs, noise_shape):
    """The mask's shape: `noise_shape` with `None` read from `inputs`.

    Entries are Python ints where the shape is static and scalar tensors
    where it is only known at run time (a TensorFlow graph without XLA).
    """
    shape = ops.shape(inputs)
    if noise_shape is None:
        return tuple(shape)
    return tuple(shape[i] if d is None else d for i, d in enumerate(noise_shape))


def position_hashes(shape, key):
    """32-bit words, one per position of `shape`, from a (2,) word key.

    `mix32(mix32(position * golden + key[0]) ^ key[1])`, positions counted
    in row-major order (as int32, so up to 2**31 of them). Distinct
    positions give distinct numbers: every step is a bijection.
    """
    size = math.prod(shape)
    position = ops.reshape(ops.arange(size, dtype="int32"), shape)
    key = to_words(key)
    return counter_hashes(position, key[0], key[1])


def hashed_dropout(inputs, rate, noise_shape=None, seed=None):
    """`keras.random.dropout` with a hashed mask (see the module docstring).

    Args:
        inputs: a float tensor.
        rate: float in [0, 1), the probability of dropping an element.
        noise_shape: optional shape of the mask, broadcast against
            `inputs`; `None` entries take the input's size.
        seed: a `keras.random.SeedGenerator` (advanced once per call), an
            int or `None`, as for `keras.random.dropout`.

    Returns:
        `inputs` with elements set to zero with probability `rate` (to
        within 2**-32) and the others divided by `1 - rate`.
    """
    check_rate(rate, "rate")
    if rate == 0:
        return inputs
    key = to_words(keras.random.randint((2,), 0, 2**31 - 1, dtype="int32", seed=seed))
    hashes = position_hashes(_noise_shape(inputs, noise_shape), key)
    keep = ops.greater_equal(hashes, to_words(min(round(rate * 2**32), 2**32 - 1)))
    scale = ops.cast(1.0 / (1.0 - rate), inputs.dtype)
    return ops.where(keep, inputs * scale, ops.zeros_like(inputs))


@keras.saving.register_keras_serializable(package="keras_seq")
class HashedDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` whose mask hashes positions with a drawn key.

    The same arguments, configuration and behaviour as
    `keras.layers.Dropout`; the mask comes from `hashed_dropout`, which
    draws two random numbers per call instead of one per element and is
    fused into the multiply under XLA. Every dropout of keras-seq's
    Transformer layers and builders is this one. On the backends of
    `NATIVE_MASK_BACKENDS` (PyTorch, which runs eagerly and fuses nothing)
    the mask is `keras.random.dropout`'s instead, with the same seeds.

    Args:
        rate: float in [0, 1), the probability of dropping an element.
        noise_shape: optional shape of the mask, broadcast against the
            inputs; `None` entries take the input's size.
        seed: int or None, the seed of the key's generator.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: a float tensor of any shape.
        training: bool, whether to drop; without it the inputs pass as is.

    Returns:
        A tensor of the inputs' shape and dtype.

    Example:

    >>> layer = HashedDropout(0.1)
    >>> x = keras.ops.ones((2, 3))
    >>> bool(keras.ops.all(layer(x, training=False) == x))
    True

    References:
        Srivastava et al., "Dropout: A Simple Way to Prevent Neural
        Networks from Overfitting", JMLR 2014.
    """

    def call(self, inputs, training=False):
        if (
            training
            and self.rate > 0
            and keras.backend.backend() in NATIVE_MASK_BACKENDS
        ):
            return keras.random.dropout(
                inputs,
                self.rate,
                noise_shape=self.noise_shape,
                seed=self.seed_generator,
            )
        if training and self.rate > 0:
            return hashed_dropout(
                inputs,
                self.rate,
                noise_shape=self.noise_shape,
                seed=self.seed_generator,
            )
        return inputs


# The name this layer was saved under before it was named for its mask:
# `.keras` files written then still load.
keras.saving.get_custom_objects().setdefault("keras_seq>Dropout", HashedDropout)

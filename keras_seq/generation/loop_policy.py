"""How the decoding loops run on this backend, decided in one place.

TensorFlow and JAX run `generate` and `beam_search` as one compiled loop
per setting and shape (XLA); PyTorch runs them eagerly, step by step,
under `torch.no_grad()`. Several forms follow from that choice, and each
loop reads them from the `LoopPolicy` of `current()` instead of asking
the backend itself:

- `fast_step`: the eager loop calls the model's plain-PyTorch decoding
  step and encoder pass (`fast_step`) where the model gives them; a
  compiled loop traces the layers' own `decoding_step`, which XLA fuses.
- `argmax`: `"reductions"` under XLA, a max and a min over the vocabulary
  (XLA on the CPU runs argmax's paired reduction element by element, two
  plain reductions in vector registers); `"argmax"`, PyTorch's own
  vectorized one.
- `masker`: `"where"` under XLA, one select against a (1, V) mask, which
  fuses into the step; `"index_fill"` on PyTorch, which writes only the
  ruled-out columns.
- `top_k`: `"blocks"` under XLA (XLA on the CPU sorts whole rows for
  `top_k`; `beam.top_k_by_blocks` sorts only k blocks); `"plain"` on
  PyTorch, whose `topk` selects.
- `gather`: `"take"` (`keras.ops`) or `"index_select"` (PyTorch's, without
  `keras.ops`' per-call conversions) for beam search's reordering.
- `steps_per_check`: how many steps run between two reads of "has every
  row ended?"; eagerly a read waits for the device, so every 8 steps.

`compiles_with_xla` (`keras_seq.layers.attention_kernels`, which picks the
attention kernels by it) is called here and nowhere else in the loops
(`tests/test_private_reads.py`).
"""

import dataclasses

import keras

from keras_seq.layers.attention_kernels import compiles_with_xla

EAGER_STEPS_PER_CHECK = 8


@dataclasses.dataclass(frozen=True)
class LoopPolicy:
    """The forms of a decoding loop; see the module docstring.

    Attributes:
        compiled: True for one compiled loop (TensorFlow, JAX), False for
            PyTorch's eager loop.
    """

    compiled: bool

    @property
    def fast_step(self):
        return not self.compiled

    @property
    def argmax(self):
        return "reductions" if self.compiled else "argmax"

    @property
    def masker(self):
        return "where" if self.compiled else "index_fill"

    @property
    def top_k(self):
        return "blocks" if self.compiled else "plain"

    @property
    def gather(self):
        return "take" if self.compiled else "index_select"

    def steps_per_check(self):
        """Steps between two reads of the stop predicate.

        A compiled loop on the CPU alone checks every step (the predicate
        stays on the host); on an accelerator, as eagerly, the read waits
        for the device, so it runs every `EAGER_STEPS_PER_CHECK` steps.
        """
        if not self.compiled:
            return EAGER_STEPS_PER_CHECK
        devices = keras.distribution.list_devices()
        if all(str(device).lower().startswith("cpu") for device in devices):
            return 1
        return EAGER_STEPS_PER_CHECK


def current():
    """The `LoopPolicy` of the running backend."""
    return LoopPolicy(compiled=compiles_with_xla())

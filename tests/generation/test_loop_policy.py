"""The one place the decoding loops ask how to run on this backend."""

import keras

from keras_seq.generation import loop_policy
from keras_seq.generation.loop_policy import LoopPolicy


def test_the_running_backend_compiles_unless_it_is_pytorch():
    policy = loop_policy.current()
    assert policy.compiled == (keras.backend.backend() != "torch")
    assert policy.fast_step == (keras.backend.backend() == "torch")


def test_each_form_follows_from_the_loop():
    compiled, eager = LoopPolicy(compiled=True), LoopPolicy(compiled=False)
    assert (compiled.argmax, eager.argmax) == ("reductions", "argmax")
    assert (compiled.masker, eager.masker) == ("where", "index_fill")
    assert (compiled.top_k, eager.top_k) == ("blocks", "plain")
    assert (compiled.gather, eager.gather) == ("take", "index_select")
    assert eager.steps_per_check() == loop_policy.EAGER_STEPS_PER_CHECK
    if keras.backend.backend() != "torch":  # Devices of a compiling backend.
        assert compiled.steps_per_check() in (1, loop_policy.EAGER_STEPS_PER_CHECK)

"""Token choice for generation, built on `keras_hub.samplers`.

keras-hub's samplers run a compiled `ops.while_loop` over a token buffer
and a cache, calling `next(buffer, cache, index) -> (logits, hidden, cache)`
once per position and stopping when every row has produced an end token.
That contract fits our translator and language models directly, so the
greedy loop is theirs and the models supply `next` over their own caches.
Sampling runs the same greedy loop over Gumbel-perturbed logits drawn from
a hash of the seed (`keras_seq.generation.draws` says why the draw is not
keras-hub's). On PyTorch, which runs loops eagerly, `run_sampler` runs its
own loop (`eager_sampler_loop` says why).

Shape legend:
    B: batch size
    L: buffer length (prompt plus new tokens)
"""

import contextlib
import functools
import threading

import keras
import numpy as np
from keras import ops

from keras_seq.generation.loop_policy import EAGER_STEPS_PER_CHECK
from keras_seq.generation.loop_policy import current as current_policy
from keras_seq.masks import mask_token_logits, masked_value, unread_ids

STRATEGIES = ("greedy", "sample", "beam")
# The largest batch that `generate` and `beam_search` run on one PyTorch
# thread (`one_thread`).
ONE_THREAD_BATCH = 4


def check_sampling_options(strategy, temperature=1.0, top_k=None, top_p=None):
    """Refuses a strategy name or sampling option out of range."""
    if strategy not in STRATEGIES:
        raise ValueError(
            f"`strategy` must be one of {STRATEGIES}; received {strategy!r}."
        )
    if temperature <= 0:
        raise ValueError(f"`temperature` must be > 0; received {temperature}.")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"`top_p` must be in (0, 1]; received {top_p}.")
    if top_k is not None and int(top_k) < 1:
        raise ValueError(f"`top_k` must be >= 1; received {top_k}.")


def make_sampler(strategy="greedy", temperature=1.0, top_k=None, top_p=None, seed=None):
    """The keras-hub loop that chooses each token: a greedy sampler.

    Greedy decoding takes the argmax of the logits; sampling takes the
    argmax of the Gumbel-perturbed logits that the model's `next` returns
    (`keras_seq.generation.draws.gumbel_scores`), so both run this loop;
    the options are checked here, once.
    """
    check_sampling_options(strategy, temperature, top_k, top_p)
    if strategy == "beam":
        raise NotImplementedError("Beam search is provided by the models' generate().")
    if strategy == "greedy":
        return _greedy_sampler_class()(temperature=temperature)
    return _greedy_sampler_class()()


def first_argmax(logits):
    """Index of the largest logit of each row (the first, on ties): (B,).

    The same as `ops.argmax(logits, axis=-1)`, as a max and a min over the
    vocabulary: XLA on the CPU runs argmax's paired (value, index)
    reduction element by element, and two plain reductions in vector
    registers. On PyTorch it is `ops.argmax` (`LoopPolicy.argmax`).
    """
    if current_policy().argmax == "argmax":
        return ops.cast(ops.argmax(logits, axis=-1), "int32")
    size = logits.shape[-1]
    largest = ops.max(logits, axis=-1, keepdims=True)  # (B, 1)
    positions = ops.arange(size, dtype="int32")  # (V,)
    return ops.min(ops.where(ops.equal(logits, largest), positions, size), axis=-1)


def token_masker(allowed):
    """`keras_seq.masks.mask_token_logits(logits, allowed)` as a function of
    the logits alone, for a decoding loop's every step.

    On PyTorch, whose loop runs eagerly, the ruled-out ids become an index
    tensor once and each step fills them with the sentinel in one
    `index_fill`, in place of a `where` over the whole (B, V) logits.

    Args:
        allowed: the (1, V) mask of `keras_seq.masks.token_logits_mask`,
            or None for all ids.
    """
    if allowed is None:
        return lambda logits: logits
    if current_policy().masker == "where":
        return lambda logits: mask_token_logits(logits, allowed)
    import torch  # The PyTorch backend only.

    ruled_out = torch.nonzero(~allowed[0]).flatten()

    def mask(logits):
        return logits.index_fill(-1, ruled_out, masked_value(logits.dtype))

    return mask


@functools.cache
def _greedy_sampler_class():
    import keras_hub  # It imports TensorFlow: only once a model generates.

    class GreedySampler(keras_hub.samplers.GreedySampler):
        """keras-hub's greedy loop, choosing from the logits directly.

        The most likely token is the largest logit, so the softmax that
        keras-hub's sampler computes first (over the whole vocabulary, at
        every step) is skipped, and the argmax is `first_argmax`.
        """

        def compute_probabilities(self, logits):
            return logits

        def get_next_token(self, probabilities):
            return first_argmax(probabilities)

        def run_loop(self, *args, **kwargs):
            # keras-hub returns the buffer alone; the loop's last cache is
            # kept for a caller that carries more than the model's cache
            # in it (the per-token scores of `generate`).
            loop_vars = super().run_loop(*args, **kwargs)
            self.final_cache = loop_vars[1]
            return loop_vars

    return GreedySampler


def compile_for_backend(fn, variables=(), state_variables=(), one_step=False):
    """Compile a pure-inference function once: XLA on TF, jit on JAX.

    Inputs of a new shape trigger one new compilation, so callers bucket
    their lengths. `one_step=True` (a stream's step over the context and
    cache) traces TensorFlow's function for the inputs' own shapes and
    runs it as a graph without XLA: XLA's compilation of a step took
    seconds before a stream's first token, and saved little per step.

    On JAX, `jax.jit` would bake the values of the variables `fn` reads
    into the compiled program as constants, so a model trained or
    reloaded after its first call would go on generating with its old
    weights. The values of `variables` (the model's weights) and of
    `state_variables` (a sampler's seed states) are therefore arguments
    of the compiled function, read through a `keras.StatelessScope` as
    keras-hub's samplers do, and the new values of `state_variables` are
    assigned back after each call, so a sampler without a fixed seed
    draws afresh every call. TensorFlow reads its variables when the
    graph runs and needs none of this.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow" and one_step:
        import tensorflow as tf  # The TensorFlow backend only.

        return tf.function(fn, autograph=False)
    if backend == "tensorflow":
        return _shape_free_xla_function(fn)
    if backend == "jax":
        return _stateless_jit(fn, list(variables), list(state_variables))
    if backend == "torch":
        return _without_gradients(fn)
    return fn


def _without_gradients(fn):
    """`fn` under `inference_scope`, as keras-hub generates on PyTorch."""

    def call(*inputs):
        with inference_scope(inputs[0].shape[0]):
            return fn(*inputs)

    return call


@contextlib.contextmanager
def inference_scope(batch_size):
    """What a PyTorch decoding runs under; nothing on the other backends.

    Without `torch.no_grad()` autograd records every op of every decoding
    step, and the key/value caches cannot be written in place
    (`update_cache`). The embeddings do not read each step's ids on the
    host (`unread_ids`): `check_generate_input` checked the given ids, and
    the rest are the model's own choices. A batch of at most
    `ONE_THREAD_BATCH` rows runs on one thread (`one_thread`).
    """
    if keras.backend.backend() != "torch":
        yield
        return
    import torch  # The PyTorch backend only.

    with torch.no_grad(), unread_ids(), one_thread(batch_size <= ONE_THREAD_BATCH):
        yield


@contextlib.contextmanager
def one_thread(active=True):
    """Within this context PyTorch runs its operations on one thread.

    A decoding step of a few rows is many operations of a few microseconds
    each; split over OpenMP threads, each waits for the slowest thread to
    wake, and on a CPU shared with other work that wait dominates (the
    figures are in benchmarks/history.md, "Decoding on PyTorch"). The
    thread count is PyTorch's for the whole process, so it is restored on
    leaving; a larger batch keeps it. Only calls from the main Python
    thread change it: a count set to 1 from another thread holds for the
    main thread too, while setting it back from there does not, so
    overlapping calls from several threads could not restore it.
    """
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return
    import torch  # The PyTorch backend only.

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def run_sampler(
    sampler,
    next_logits,
    buffer,
    cache,
    index,
    kept,
    stop_ids,
    model,
    return_cache=False,
):
    """`sampler`'s loop filling `buffer` from `index` on: (B, L) ids.

    keras-hub's `ops.while_loop` on XLA; `eager_sampler_loop` on PyTorch.
    With `return_cache`, `(buffer, cache)`: the cache as the last step
    returned it.
    """
    if current_policy().compiled:
        buffer = sampler(
            next_logits,
            buffer,
            cache=cache,
            index=index,
            mask=kept,
            stop_token_ids=stop_ids,
            model=model,  # on JAX, its weights are read through the loop
        )
        return (buffer, sampler.final_cache) if return_cache else buffer
    args = (buffer, cache, index, kept, stop_ids)
    buffer, cache = eager_sampler_loop(sampler, next_logits, *args)
    return (buffer, cache) if return_cache else buffer


def eager_sampler_loop(sampler, next_logits, buffer, cache, index, kept, stop_ids):
    """keras-hub's sampler loop, written for eager PyTorch.

    Keras' `while_loop` on PyTorch reads its condition back to the host at
    every step, and its `slice_update` copies the buffer at every step.
    Here the step index is a Python int, the chosen token is written into
    the buffer in place, and whether every row has ended is read only
    every `EAGER_STEPS_PER_CHECK` steps: the steps run after the last row
    ended change nothing that `zero_after_end` keeps. The loop's own
    operations are PyTorch's, without `keras.ops`' per-call conversions,
    and the greedy choice is `torch.argmax` (the first largest logit, as
    `first_argmax`). Returns the buffer and the last cache.
    """
    steps = sampler_steps(sampler, next_logits, buffer.clone(), cache, index, kept)
    found = buffer, cache
    for position, *found in steps:
        if stop_ids is None or (position - index + 1) % EAGER_STEPS_PER_CHECK:
            continue
        if bool(_all_ended(found[0], kept, stop_ids)):
            break
    return tuple(found)


def sampler_steps(sampler, next_logits, buffer, cache, index, kept):
    """keras-hub's sampler loop from Python, one position per item.

    Yields `(position, buffer, cache)` once `position` is written, from
    `index` to the buffer's end; the caller stops it (at its end tokens).
    The body of PyTorch's eager loop (`eager_sampler_loop`, which writes
    into `buffer` in place) and of `GenerativeModel.stream` on every
    backend: a compiled loop answers only once it has ended.
    """
    for position in range(index, buffer.shape[1]):
        step = sampler_step(sampler, next_logits, buffer, cache, position, kept)
        buffer, cache = step
        yield position, buffer, cache


def sampler_step(sampler, next_logits, buffer, cache, index, kept):
    """One step of keras-hub's sampler loop: `(buffer, cache)` with the
    sampler's choice written at `index` (a Python int, or a scalar tensor
    inside a compiled step), where the buffer's id is not kept."""
    write = _write_in_place if keras.backend.backend() == "torch" else _write_into
    greedy = isinstance(sampler, _greedy_sampler_class())
    logits, _, cache = next_logits(buffer, cache, index)
    return write(sampler, greedy, logits, buffer, index, kept), cache


def _write_into(sampler, greedy, logits, buffer, position, kept):
    """The buffer with the sampler's choice at `position`, where not kept."""
    if greedy:
        token = first_argmax(logits)
    else:
        token = sampler.get_next_token(sampler.compute_probabilities(logits))
    token = ops.cast(token, buffer.dtype)
    column = ops.where(kept[:, position], buffer[:, position], token)  # (B,)
    return ops.slice_update(buffer, [0, position], column[:, None])


def _write_in_place(sampler, greedy, logits, buffer, position, kept):
    """`_write_into` in PyTorch's own operations, into `buffer` itself."""
    import torch  # The PyTorch backend only.

    if greedy:
        token = torch.argmax(logits, dim=-1)
    else:
        token = sampler.get_next_token(sampler.compute_probabilities(logits))
    token = token.to(buffer.dtype)
    buffer[:, position] = torch.where(kept[:, position], buffer[:, position], token)
    return buffer


def _all_ended(buffer, kept, stop_ids):
    ended = ops.zeros(buffer.shape[:1], "bool")
    for stop_id in stop_ids:
        is_end = ops.logical_and(ops.equal(buffer, stop_id), ops.logical_not(kept))
        ended = ops.logical_or(ended, ops.any(is_end, axis=1))
    return ops.all(ended)


def _shape_free_xla_function(fn):
    """`fn` under `tf.function` with XLA, traced once per input rank.

    The graph is traced for inputs of unknown sizes and called as a
    concrete function: XLA still compiles one executable per input shape,
    but each call skips `tf.function`'s matching of its arguments against
    its traces, Python work that is a large share of a short decode at
    batch 1.
    """
    import tensorflow as tf  # The TensorFlow backend only.

    # The loops are written in `keras.ops` control flow, as JAX needs them:
    # AutoGraph would only rewrite the source of every function they call,
    # which costs most of a first call's tracing.
    function = tf.function(fn, jit_compile=True, reduce_retracing=True, autograph=False)
    concrete = {}

    def call(*inputs):
        inputs = [tf.convert_to_tensor(x) for x in inputs]
        key = tuple((x.dtype, x.shape.rank) for x in inputs)
        if key not in concrete:
            specs = [tf.TensorSpec([None] * rank, dtype) for dtype, rank in key]
            concrete[key] = function.get_concrete_function(*specs)
        return concrete[key](*inputs)

    call.experimental_get_tracing_count = function.experimental_get_tracing_count
    return call


def _stateless_jit(fn, variables, state_variables):
    import jax  # The JAX backend only.

    every = variables + state_variables

    def pure(values, *inputs):
        with keras.StatelessScope(state_mapping=list(zip(every, values))) as scope:
            outputs = fn(*inputs)
        updated = []
        for variable, value in zip(state_variables, values[len(variables) :]):
            new = scope.get_current_value(variable)
            updated.append(value if new is None else new)
        return outputs, updated

    compiled = jax.jit(pure)

    def call(*inputs):
        outputs, updated = compiled([v.value for v in every], *inputs)
        for variable, value in zip(state_variables, updated):
            variable.assign(value)
        return outputs

    return call


def run_compiled(model, key, make_fn, *inputs, one_step=False):
    """Call `make_fn()`'s compiled function for `key`, compiling it once.

    `make_fn` returns the function of `inputs`, or `(function,
    state_variables)` where the function updates variables of its own (a
    sampler's seed state). The compiled functions live on the model, one
    per decoding setting, so repeated calls with the same setting and
    shapes reuse one graph.

    `one_step`: of `compile_for_backend`.

    Called while TensorFlow traces a function of its own (a SavedModel
    signature), the function is traced into that graph instead of being
    compiled apart: the exported graph then holds plain TensorFlow ops,
    with no XLA cluster, which TF Serving does not compile on the CPU
    unless told to (`--xla_cpu_compilation_enabled`).
    """
    if tracing_tensorflow_function():
        made = make_fn()
        fn = made[0] if isinstance(made, tuple) else made
        return fn(*inputs)
    functions = model.__dict__.setdefault("_generate_functions", {})
    if key not in functions:
        made = make_fn()
        fn, state_variables = made if isinstance(made, tuple) else (made, ())
        functions[key] = compile_for_backend(
            fn, model.variables, state_variables, one_step=one_step
        )
    return functions[key](*inputs)


def tracing_tensorflow_function():
    """Whether TensorFlow is tracing a function (a SavedModel signature)."""
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf  # The TensorFlow backend only.

    return tf.inside_function()


def given_buffer(given, max_new_tokens):
    """The token buffer a sampler fills, and which of its entries are given.

    Args:
        given: (B, P) int32 ids the output follows (a start token, a
            prompt).
        max_new_tokens: M, the number of entries to fill.

    Returns:
        `(buffer, kept)`: (B, P + M) int32 ids holding `given` then zeros,
        and a boolean mask that is True on the given ids, which the sampler
        keeps instead of choosing.
    """
    batch_size, given_length = ops.shape(given)
    buffer = ops.concatenate(
        [given, ops.zeros((batch_size, max_new_tokens), dtype="int32")], axis=1
    )
    kept = ops.concatenate(
        [
            ops.ones((batch_size, given_length), "bool"),
            ops.zeros((batch_size, max_new_tokens), "bool"),
        ],
        axis=1,
    )
    return buffer, kept


def start_buffer(batch_size, max_new_tokens, start_token_id):
    """`given_buffer` for outputs that follow one start token.

    Returns:
        `(buffer, given)`: (B, 1 + max_new_tokens) int32 ids holding the
        start token then zeros, and a boolean mask that is True on the
        start token only.
    """
    start = ops.full((batch_size, 1), start_token_id, dtype="int32")
    return given_buffer(start, max_new_tokens)


def zero_after_end(token_ids, end_token_id):
    """Keep each row up to and including its first end token; zero the rest."""
    is_end = ops.cast(ops.equal(token_ids, end_token_id), "int32")
    ends_before = ops.cumsum(is_end, axis=1) - is_end  # ends strictly earlier
    return ops.where(ops.equal(ends_before, 0), token_ids, 0)


def strip_after_end(token_ids, end_token_id):
    """NumPy rows cut before their first end token, as lists of ids."""
    rows = []
    for row in np.asarray(ops.convert_to_numpy(token_ids)):
        row = row.tolist()
        if end_token_id is not None and end_token_id in row:
            row = row[: row.index(end_token_id)]
        rows.append([t for t in row if t != 0])
    return rows

"""The fast kernels of `MultiHeadAttention`, in one place.

`MultiHeadAttention.call` reads as Eq. (7.25)-(7.27); the functions here
compute the same numbers in the shapes that the compilers run fastest. Each
is tested equal to the plain einsum formulation in
`tests/layers/test_attention_kernels.py`; measurements are in
`benchmarks/README.md`.

- `project_heads`: a (D, N, H) projection as one (D, N*H) matmul, because
  XLA on the CPU compiles a 2-D matmul of one row (a decoding step at
  batch 1) into its vectorized matrix-vector kernel, which it does not do
  for the equivalent einsum.
- `fused_attention`: `keras.ops.dot_product_attention`, the backend's own
  attention kernel, where the backend has one for the compute dtype.
- The cache layout (B, 2, N, L, H), keys and values stacked, heads before
  positions, because the batched matmuls then read the cache in place:
  `cached_scores` and `cached_context` run over the whole stack with
  (B, 2, N) as batch axes instead of slicing the keys or the values out
  (a strided copy of every cache at every step).
- `update_cache`: one `slice_update` of the stacked cache, which a compiled
  decoding loop does in place; updating keys and values apart and stacking
  them again would copy the whole cache at every step.
- `tied_logits`: the token table as it is stored, (V, D), as the einsum's
  first operand, because XLA on the CPU fuses the one-row product and the
  bias add that follows it (Marian's logits bias) into a loop many times
  slower than the dot when the table is transposed first or is the second
  operand (TensorFlow's XLA in either case, JAX's in the first); and the
  hidden states flattened to (rows, D), because TensorFlow's XLA ran the
  3-D product slower at a beam search's 128 rows.

TensorFlow and JAX decode under XLA, PyTorch eagerly, and some of these
shapes only pay under XLA; `compiles_with_xla` is the one place where a
kernel is chosen by backend (its docstring lists each choice).

Shape legend:
    B: batch size
    T: query length
    S: key/value length
    L: cache length
    D: input width
    N: number of heads
    H: head width of queries and keys (`key_dim`)
    V: head width of values (`value_dim`; equal to H in a cache)
"""

import keras
from keras import ops


def compiles_with_xla():
    """Whether the backend decodes under XLA (TensorFlow, JAX) or eagerly.

    Each kernel choice that follows from it, with its reason:

    - `cached_scores`, `cached_context`: on XLA both halves of the stacked
      cache are multiplied (a slice of the stack would be a copy); on
      PyTorch a slice is a view, so only the keys' or values' half is.
    - `update_cache`: on PyTorch, while no gradient is recorded, the new
      keys and values are written into the cache itself, because Keras'
      `slice_update` there clones the whole cache first (XLA updates a
      loop's buffer in place by itself).
    - `keras_seq.generation.beam.top_k_by_blocks` (XLA:CPU sorts whole
      rows for `top_k`; PyTorch's `topk` selects) and
      `keras_seq.generation.sampling.first_argmax` (XLA:CPU reduces
      argmax element by element; PyTorch's `argmax` is vectorized): the
      plain op on PyTorch.
    """
    return keras.backend.backend() in ("tensorflow", "jax")


def _writes_in_place(cache):
    if keras.backend.backend() != "torch":
        return False
    import torch  # Backend-specific: only reached with the PyTorch backend.

    # Autograd keeps the old cache of a recorded step, so an in-place write
    # is only safe while none is recorded (generation runs under no_grad).
    return not torch.is_grad_enabled()


def project_heads(dense, x):
    """`dense(x)` for an `EinsumDense` (D, N, H) projection, as one matmul.

    The same weights and values as calling the layer. The bias is joined
    from its heads' rows by a concatenation, not flattened by a reshape:
    XLA moves a reshape past the add (`reshape(dot) + bias`) and then
    compiles the lone matrix-vector product as an elementwise loop.
    Quantized and LoRA projections keep their own call.

    Args:
        dense: a built `keras.layers.EinsumDense` with equation
            `"...d,dnh->...nh"` and an (N, H) bias or none.
        x: (B, T, D) tensor.

    Returns:
        (B, T, N, H) tensor, equal to `dense(x)`.
    """
    if getattr(dense, "quantization_mode", None) or getattr(
        dense, "lora_enabled", False
    ):
        return dense(x)
    d, n, h = dense.kernel.shape
    y = ops.matmul(x, ops.reshape(dense.kernel, (d, n * h)))  # (B, T, N*H)
    if dense.bias is not None:
        bias = dense.bias  # (N, H)
        y = y + ops.concatenate([bias[i] for i in range(n)], axis=0)  # (N*H,)
    batch, length = ops.shape(x)[0], ops.shape(x)[1]
    return ops.reshape(y, (batch, length, n, h))  # (B, T, N, H)


def fused_attention_available(compute_dtype, key_dim=None, value_dim=None):
    """Whether the backend's fused attention runs in `compute_dtype` for
    heads of widths `key_dim` (queries, keys) and `value_dim` (values).

    XLA on the CPU has no float16 dot with float32 accumulation, which
    JAX's fused attention asks for; on a GPU it has. JAX's kernel takes
    values only as wide as the keys.
    """
    if keras.backend.backend() != "jax":
        return True
    if key_dim != value_dim:
        return False
    if compute_dtype == "float16":
        return _jax_on_gpu()
    return True


def fused_attention(query, key, value, mask, scale):
    """Eq. (7.25) by `keras.ops.dot_product_attention`.

    Args:
        query: (B, T, N, H) tensor.
        key: (B, S, N, H) tensor.
        value: (B, S, N, V) tensor (V == H on JAX,
            `fused_attention_available`).
        mask: (B, T, S) or (B, N, T, S) boolean, True where a query may
            attend, a batch or head axis possibly of size 1; or None.
        scale: float, the score scale `1 / sqrt(H)`.

    Returns:
        (B, T, N, V) per-head context. A row without keys is not zero
        here; the caller zeroes it.
    """
    if mask is not None and len(mask.shape) == 3:
        mask = mask[:, None, :, :]  # (B, 1, T, S), broadcast over heads
    return ops.dot_product_attention(query, key, value, mask=mask, scale=scale)


def stack_heads_first(keys, values):
    """Keys (B, S, N, H) and values (B, S, N, H) as a (B, 2, N, S, H) cache."""
    return ops.stack(
        [
            ops.transpose(keys, (0, 2, 1, 3)),  # (B, N, S, H)
            ops.transpose(values, (0, 2, 1, 3)),  # (B, N, S, H)
        ],
        axis=1,
    )  # (B, 2, N, S, H)


def update_cache(cache, new, index):
    """Write the (B, 2, N, T, H) `new` into the cache at position `index`.

    On PyTorch while no gradient is recorded (`torch.no_grad()`, as
    `generate` runs), the cache passed in is written in place and
    returned; elsewhere a new cache is returned.
    """
    if _writes_in_place(cache):
        cache[:, :, :, index : index + new.shape[3]] = new
        return cache
    return ops.slice_update(cache, [0, 0, 0, index, 0], new)  # (B, 2, N, L, H)


def cached_scores(query, cache):
    """Raw scores `q . k` of (B, T, N, H) queries against a stacked cache.

    Both halves of the (B, 2, N, L, H) cache are multiplied and the keys'
    half is kept: twice the arithmetic of one product, against copying the
    keys out of the stack.

    Returns:
        (B, N, T, L) scores, unscaled, equal to
        `einsum("btnh,bnlh->bntl", query, cache[:, 0])`.
    """
    if not compiles_with_xla():
        # (B, T, N, H) x (B, N, L, H) -> (B, N, T, L), the keys read as a view.
        return ops.einsum("btnh,bnlh->bntl", query, cache[:, 0])
    query = ops.transpose(query, (0, 2, 1, 3))[:, None]  # (B, 1, N, T, H)
    both = ops.concatenate([query, query], axis=1)  # (B, 2, N, T, H)
    return ops.einsum("bcnth,bcnsh->bcnts", both, cache)[:, 0]  # (B, N, T, L)


def cached_context(weights, cache):
    """Weighted sum of the cached values, `sum_l weights_l v_l`.

    As in `cached_scores`, the product runs over the whole stack and the
    values' half is kept.

    Args:
        weights: (B, N, T, L) attention weights.
        cache: (B, 2, N, L, V) stacked keys and values.

    Returns:
        (B, T, N, V) per-head context, equal to
        `einsum("bntl,bnlv->btnv", weights, cache[:, 1])`.
    """
    if not compiles_with_xla():
        # (B, N, T, L) x (B, N, L, V) -> (B, T, N, V), the values read as a view.
        return ops.einsum("bntl,bnlv->btnv", weights, cache[:, 1])
    weights = weights[:, None]  # (B, 1, N, T, L)
    both = ops.concatenate([weights, weights], axis=1)  # (B, 2, N, T, L)
    context = ops.einsum("bcnts,bcnsv->bcntv", both, cache)[:, 1]  # (B, N, T, V)
    return ops.transpose(context, (0, 2, 1, 3))  # (B, T, N, V)


def _jax_on_gpu():
    import jax  # Backend-specific: only reached with the JAX backend.

    return jax.default_backend() == "gpu"


def tied_logits(hidden, embedding):
    """(..., D) hidden states -> (..., V) logits of a tied output layer:
    `embedding`'s (V, D) table contracted as stored. A quantized table goes
    through Keras' own reverse call, which reads its scales.

    Args:
        hidden: (..., D) tensor.
        embedding: the `keras.layers.ReversibleEmbedding` the output is
            tied to.
    """
    if getattr(embedding, "quantization_mode", None):
        return embedding(hidden, reverse=True)
    table = ops.cast(embedding.embeddings, hidden.dtype)
    rows = ops.reshape(hidden, (-1, ops.shape(hidden)[-1]))
    logits = ops.einsum("vd,nd->nv", table, rows)
    return ops.reshape(logits, (*ops.shape(hidden)[:-1], ops.shape(table)[0]))

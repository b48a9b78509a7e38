"""Beam search over a model's cache, with a length penalty and n-best lists.

Why not `keras_hub.samplers.BeamSampler`: it scores beams by their summed
log-probabilities only (no length penalty, so short outputs win), keeps
finished beams competing with live ones, and expects the caller's cache
to be already tiled per beam. Here the model supplies one decoding step and
a function that reorders its state by beam, and this module tiles, keeps
finished hypotheses frozen and normalises scores with the GNMT length
penalty of Wu et al. (2016): `lp(n) = ((5 + n) / 6) ** alpha`.

Shape legend:
    B: batch size
    K: beam width
    V: vocabulary size
    M: max_new_tokens
"""

from keras import ops

from keras_seq import defaults
from keras_seq.generation.loop_policy import current as current_policy
from keras_seq.masks import masked_value
from keras_seq.validation import check_positive_int

# Scores are float32 (logits are cast before the log-softmax). A dead
# beam's score and a finished beam's non-padding continuations get this
# value: half the masks' sentinel, so that the sum of two stays finite.
_NO_SCORE = masked_value("float32") / 2


def tile_beams(tensor, beam_width, axis=0):
    """Repeat each batch row `beam_width` times along `axis` (b0 b0 b1 b1).

    Tiled, not `ops.repeat`: Keras' torch `repeat` expands and reshapes,
    which for a single row is a view whose rows share memory, and the
    cache written in place on PyTorch (`update_cache`) cannot be.
    """
    axis = axis % len(tensor.shape)
    tensor = ops.expand_dims(tensor, axis + 1)  # (..., B, 1, ...)
    repeats = [1] * len(tensor.shape)
    repeats[axis + 1] = beam_width
    tiled = ops.tile(tensor, repeats)  # (..., B, K, ...)
    shape = list(ops.shape(tiled))
    shape[axis : axis + 2] = [shape[axis] * beam_width]
    return ops.reshape(tiled, shape)


def top_k_by_blocks(values, k, block_size=64):
    """`ops.top_k(values, k)` over the last axis of a (rows, n) tensor.

    The same values and indices (ties to the lower index), found by taking
    the maximum of every block of `block_size` entries, the top k of those
    maxima, and the top k inside the k blocks they name: any of the k
    largest entries lies in one of the k blocks with the largest maxima.
    XLA on the CPU sorts the whole row for `top_k`; here the full row is
    only read once, by a max reduction, and only k blocks are sorted. On
    PyTorch it is `ops.top_k` (`LoopPolicy.top_k`), whose order
    among equal values is not fixed.
    """
    size = values.shape[-1]
    if size < k:  # Fewer entries than asked for: the rest are -inf.
        values = ops.pad(values, [[0, 0], [0, k - size]], constant_values=-float("inf"))
        size = k
    if current_policy().top_k == "plain":
        return ops.top_k(values, k)
    if size <= k * block_size:
        return ops.top_k(values, k)
    padding = (-size) % block_size
    if padding:
        values = ops.pad(values, [[0, 0], [0, padding]], constant_values=-float("inf"))
    num_blocks = (size + padding) // block_size
    blocks = ops.reshape(values, (-1, num_blocks, block_size))
    _, chosen = ops.top_k(ops.max(blocks, axis=-1), k)
    chosen = ops.sort(ops.cast(chosen, "int32"), axis=-1)  # keeps ties in order
    gathered = ops.take_along_axis(blocks, chosen[..., None], axis=1)
    best, inner = ops.top_k(ops.reshape(gathered, (-1, k * block_size)), k)
    inner = ops.cast(inner, "int32")
    block = ops.take_along_axis(chosen, inner // block_size, axis=1)
    return best, block * block_size + inner % block_size


def length_penalty_factor(lengths, alpha):
    """GNMT's `((5 + n) / 6) ** alpha`; 1 when alpha is 0."""
    lengths = ops.cast(lengths, "float32")
    return ops.power((5.0 + lengths) / 6.0, alpha)


def default_steps_per_check():
    """How many beam steps run between two checks of the end condition.

    Whether every beam has ended is a predicate on device data. XLA:CPU
    reads it where it lies, so the CPU checks after every step and stops
    as soon as it can. XLA:GPU copies a loop's predicate to the host and
    waits for it at every iteration, which keeps the host busy for the
    whole call and the device idle between steps; there the check runs
    every 8 steps, at the cost of at most 7 steps run after the last beam
    has ended (they change nothing, see `beam_search`). PyTorch runs the
    loop eagerly and reads the predicate on the host on every device, so
    there too the check runs every 8 steps.
    """
    return current_policy().steps_per_check()


def check_num_return(num_return, beam_width):
    """Refuses a `num_return` outside [1, beam_width].

    Called before a compiled search is traced too, so that the message is
    not wrapped in the trace of a `tf.function`.

    Raises:
        ValueError: naming `num_return` and the range.
    """
    if not 1 <= num_return <= beam_width:
        raise ValueError(
            f"`num_return` must be in [1, beam_width={beam_width}]; "
            f"received {num_return}."
        )


def beam_search(
    step_fn,
    reorder_fn,
    state,
    batch_size,
    max_new_tokens,
    start_token_id,
    end_token_id,
    beam_width=defaults.BEAM_WIDTH,
    length_penalty=defaults.LENGTH_PENALTY,
    num_return=1,
    steps_per_check=None,
    log_probs_fn=None,
    return_token_scores=False,
):
    """Run beam search as one compiled loop.

    Without an end token (`end_token_id` None or negative) the loop runs
    exactly `max_new_tokens` steps and its trip count is static: XLA runs
    it without reading anything back to the host. With one, it stops once
    every beam has ended, checked every `steps_per_check` steps. Steps run
    after every beam has ended leave the result unchanged: an ended beam
    continues only with padding at no cost, so every beam keeps its score,
    length and place.

    Args:
        step_fn: `(previous_ids (B*K, 1), index, state) -> (logits (B*K,
            V), state)`, one decoding step over the model's cache; `index`
            is the position of `previous_ids` among the outputs (0 for the
            start token).
        reorder_fn: `(state, indices (B*K,)) -> state`, gathering the
            state's beam rows.
        state: the initial state, already tiled to B*K rows (`tile_beams`).
        batch_size: B.
        max_new_tokens: M.
        start_token_id: an int, or (B,) ids, one per row.
        end_token_id: int, or None (or a negative id, which no token has)
            to decode exactly M tokens.
        beam_width: K.
        length_penalty: alpha; 0 ranks by summed log-probabilities.
        num_return: how many hypotheses to return per row, <= K.
        steps_per_check: int >= 1, steps between two checks of whether
            every beam has ended; None: `default_steps_per_check()`.
        log_probs_fn: None, or `(logits (B*K, V), tokens (B*K, M + 1),
            index) -> (B*K, V)` log-probabilities of the next ids given
            each beam's tokens so far (those up to `index` written): the
            decoding controls. Ids it rules out score at most the masks'
            sentinel and are never chosen while another id is left.
        return_token_scores: bool, also return each hypothesis's
            per-token log-probabilities.

    Returns:
        `(ids, scores)`: (B, num_return, M) int32 ids, best first, each
        ending with its end token and zeros, and their (B, num_return)
        length-normalised log-probabilities. With `return_token_scores`,
        `(ids, scores, token_scores)`: the (B, num_return, M) float32
        log-probabilities each hypothesis added up, 0 after its end.
    """
    check_num_return(num_return, beam_width)
    check_positive_int(steps_per_check, "steps_per_check", allow_none=True)
    stops = end_token_id is not None and end_token_id >= 0
    if not stops:
        end_token_id = -1  # No token id equals it, so no beam ends early.
    k = beam_width
    rows = batch_size * k
    start = ops.convert_to_tensor(start_token_id, "int32")
    if len(start.shape) == 0:
        start = ops.full((rows, 1), start, "int32")
    else:  # One start token per row, e.g. the last token of a prompt.
        start = tile_beams(ops.reshape(start, (batch_size, 1)), k)
    tokens = ops.zeros((rows, max_new_tokens + 1), "int32")
    tokens = ops.slice_update(tokens, [0, 0], start)
    # Only the first beam of each row is live at the start, so the first
    # step expands one hypothesis, not K copies of it.
    first = ops.concatenate([ops.zeros((1,)), ops.full((k - 1,), _NO_SCORE)])
    scores = ops.tile(first[None, :], (batch_size, 1))  # (B, K)
    finished = ops.zeros((batch_size, k), "bool")
    lengths = ops.zeros((batch_size, k), "int32")
    offsets = ops.arange(batch_size, dtype="int32")[:, None] * k  # (B, 1)
    carry = (tokens, scores, finished, lengths, state)
    general = log_probs_fn is not None or return_token_scores
    if general:
        # The controls' and the scores' loop, in `keras.ops` on every
        # backend; the plain steps (`_plain_advance`, `_eager_advance`)
        # stay as they were.
        advance = _scoring_advance(
            step_fn, reorder_fn, log_probs_fn, batch_size, k, end_token_id
        )
        carry = carry + (ops.zeros((rows, max_new_tokens + 1), "float32"),)
    elif current_policy().compiled:
        advance = _plain_advance(step_fn, reorder_fn, batch_size, k, end_token_id)
    else:
        advance = _eager_advance(step_fn, reorder_fn, batch_size, k, end_token_id)
    if not current_policy().compiled:
        carry = _run_eagerly(advance, carry, max_new_tokens, stops, steps_per_check)
    elif stops:
        carry = _run_until_finished(
            advance,
            carry,
            max_new_tokens,
            steps_per_check or default_steps_per_check(),
        )
    else:
        carry = ops.fori_loop(0, max_new_tokens, advance, carry)
    tokens, scores, finished, lengths = carry[:4]
    normalised = scores / length_penalty_factor(ops.maximum(lengths, 1), length_penalty)
    best, order = ops.top_k(normalised, num_return)  # (B, num_return)
    order = ops.reshape(ops.cast(order, "int32") + offsets, (-1,))
    ids = ops.take(tokens[:, 1:], order, axis=0)
    ids = ops.reshape(ids, (batch_size, num_return, max_new_tokens))
    if not return_token_scores:
        return ids, best
    token_scores = ops.take(carry[5][:, 1:], order, axis=0)
    shape = (batch_size, num_return, max_new_tokens)
    return ids, best, ops.reshape(token_scores, shape)


def _plain_advance(step_fn, reorder_fn, batch_size, k, end_token_id):
    """`beam_search`'s step: `(index, carry) -> carry` over (tokens, scores,
    finished, lengths, state), choosing the K best of the beams' K * K
    continuations."""
    rows = batch_size * k
    offsets = ops.arange(batch_size, dtype="int32")[:, None] * k  # (B, 1)

    def advance(index, carry):
        tokens, scores, finished, lengths, state = carry
        previous = ops.slice(tokens, [0, index], [rows, 1])  # (B*K, 1)
        logits, state = step_fn(previous, index, state)
        logits = ops.cast(logits, "float32")  # (B*K, V)
        # A beam's best continuations are its K largest logits whatever its
        # score, so each beam proposes K candidates and the new beams are
        # the best K of those K * K: the same choice as the top K of all
        # K * V scores, without adding the score to every log-probability
        # or sorting K * V candidates per row at every step.
        values, token_ids = top_k_by_blocks(logits, k)  # (B*K, K)
        log_probs = values - ops.logsumexp(logits, axis=-1, keepdims=True)
        # A finished hypothesis continues only with padding, at no cost.
        padding_only = ops.where(ops.arange(k) == 0, 0.0, _NO_SCORE)  # (K,)
        finished_rows = ops.reshape(finished, (rows, 1))
        log_probs = ops.where(finished_rows, padding_only, log_probs)
        token_ids = ops.where(finished_rows, 0, ops.cast(token_ids, "int32"))
        candidates = scores[..., None] + ops.reshape(log_probs, (batch_size, k, k))
        scores, flat = ops.top_k(ops.reshape(candidates, (batch_size, k * k)), k)
        flat = ops.cast(flat, "int32")  # (B, K) among the K * K candidates
        beams = flat // k
        new_tokens = ops.take_along_axis(
            ops.reshape(token_ids, (batch_size, k * k)), flat, axis=1
        )
        source_rows = ops.reshape(beams + offsets, (rows,))
        tokens = ops.take(tokens, source_rows, axis=0)
        state = reorder_fn(state, source_rows)
        was_finished = ops.take_along_axis(finished, beams, axis=1)
        lengths = ops.take_along_axis(lengths, beams, axis=1)
        lengths = lengths + ops.cast(ops.logical_not(was_finished), "int32")
        finished = ops.logical_or(was_finished, ops.equal(new_tokens, end_token_id))
        tokens = ops.slice_update(
            tokens, [0, index + 1], ops.reshape(new_tokens, (rows, 1))
        )
        return tokens, scores, finished, lengths, state

    return advance


def _scoring_advance(step_fn, reorder_fn, log_probs_fn, batch_size, k, end_token_id):
    """`beam_search`'s step with the decoding controls and per-token scores.

    The same search as the plain step, over the log-probabilities of
    `log_probs_fn` (the plain log-softmax without it); the carry gains
    the (B*K, M + 1) log-probabilities of the tokens, reordered with
    them, so that a hypothesis's are the ones its score added up.
    """
    rows = batch_size * k
    offsets = ops.arange(batch_size, dtype="int32")[:, None] * k  # (B, 1)

    def advance(index, carry):
        tokens, scores, finished, lengths, state, token_scores = carry
        previous = ops.slice(tokens, [0, index], [rows, 1])  # (B*K, 1)
        logits, state = step_fn(previous, index, state)
        logits = ops.cast(logits, "float32")  # (B*K, V)
        if log_probs_fn is None:
            log_probs = logits - ops.logsumexp(logits, axis=-1, keepdims=True)
        else:
            log_probs = log_probs_fn(logits, tokens, index)
        # Ruled-out ids score as dead beams do: a sum of two stays finite.
        log_probs = ops.maximum(log_probs, _NO_SCORE)
        # As the plain step: each beam proposes its K best continuations.
        log_probs, token_ids = top_k_by_blocks(log_probs, k)  # (B*K, K)
        padding_only = ops.where(ops.arange(k) == 0, 0.0, _NO_SCORE)  # (K,)
        finished_rows = ops.reshape(finished, (rows, 1))
        log_probs = ops.where(finished_rows, padding_only, log_probs)
        token_ids = ops.where(finished_rows, 0, ops.cast(token_ids, "int32"))
        candidates = scores[..., None] + ops.reshape(log_probs, (batch_size, k, k))
        log_probs = ops.reshape(log_probs, (batch_size, k * k))
        scores, flat = ops.top_k(ops.reshape(candidates, (batch_size, k * k)), k)
        flat = ops.cast(flat, "int32")  # (B, K) among the K * K candidates
        beams = flat // k
        new_tokens = ops.take_along_axis(
            ops.reshape(token_ids, (batch_size, k * k)), flat, axis=1
        )
        chosen = ops.take_along_axis(log_probs, flat, axis=1)  # (B, K)
        source_rows = ops.reshape(beams + offsets, (rows,))
        tokens = ops.take(tokens, source_rows, axis=0)
        token_scores = ops.take(token_scores, source_rows, axis=0)
        state = reorder_fn(state, source_rows)
        was_finished = ops.take_along_axis(finished, beams, axis=1)
        lengths = ops.take_along_axis(lengths, beams, axis=1)
        lengths = lengths + ops.cast(ops.logical_not(was_finished), "int32")
        finished = ops.logical_or(was_finished, ops.equal(new_tokens, end_token_id))
        tokens = ops.slice_update(
            tokens, [0, index + 1], ops.reshape(new_tokens, (rows, 1))
        )
        token_scores = ops.slice_update(
            token_scores, [0, index + 1], ops.reshape(chosen, (rows, 1))
        )
        return tokens, scores, finished, lengths, state, token_scores

    return advance


def _run_until_finished(advance, carry, max_new_tokens, steps_per_check):
    """`advance` for up to M steps, stopping once every beam has ended.

    Runs chunks of `steps_per_check` steps, each a loop of static trip
    count, and checks the end condition between chunks; the M % chunk
    steps left over after the last whole chunk run unchecked.
    """
    chunk = min(steps_per_check, max_new_tokens)
    chunks, rest = divmod(max_new_tokens, chunk)

    def cond(carry, chunk_index):
        finished = carry[2]
        return ops.logical_and(
            ops.less(chunk_index, chunks), ops.logical_not(ops.all(finished))
        )

    def body(carry, chunk_index):
        if chunk == 1:
            return advance(chunk_index, carry), chunk_index + 1
        first = chunk_index * chunk
        carry = ops.fori_loop(
            0, chunk, lambda step, carry: advance(first + step, carry), carry
        )
        return carry, chunk_index + 1

    carry, _ = ops.while_loop(
        cond, body, (carry, ops.convert_to_tensor(0)), maximum_iterations=chunks
    )
    if rest:
        carry = ops.fori_loop(chunks * chunk, max_new_tokens, advance, carry)
    return carry


def take_rows(tensor, rows):
    """`ops.take(tensor, rows, axis=0)`: the rows of a beam's state.

    On PyTorch, which runs the loop eagerly, `index_select` without
    `keras.ops`' per-call conversions and index checks: `rows` are the
    search's own, always in range.
    """
    if current_policy().gather == "take":
        return ops.take(tensor, rows, axis=0)
    return tensor.index_select(0, rows)


def _eager_advance(step_fn, reorder_fn, batch_size, k, end_token_id):
    """`beam_search`'s step in PyTorch operations, for PyTorch's eager loop.

    The same choices and numbers as its `keras.ops` step (`top_k` is
    `torch.topk` and `logsumexp` `torch.logsumexp` there too), without
    about twenty `keras.ops` calls a step, each of which converts and
    checks its arguments in Python for longer than its arithmetic takes
    at a few rows. `index` is a Python int.
    """
    import torch  # The PyTorch backend only.

    rows = batch_size * k
    offsets = torch.arange(batch_size, dtype=torch.int64)[:, None] * k  # (B, 1)
    padding_only = torch.full((k,), _NO_SCORE, dtype=torch.float32)  # (K,)
    padding_only[0] = 0.0

    def advance(index, carry):
        tokens, scores, finished, lengths, state = carry
        previous = tokens[:, index : index + 1]  # (B*K, 1)
        logits, state = step_fn(previous, index, state)
        logits = logits.float()  # (B*K, V)
        # As `beam_search`: each beam proposes its K best continuations.
        values, token_ids = torch.topk(logits, k)  # (B*K, K)
        log_probs = values - torch.logsumexp(logits, dim=-1, keepdim=True)
        finished_rows = finished.reshape(rows, 1)
        log_probs = torch.where(finished_rows, padding_only, log_probs)
        token_ids = torch.where(finished_rows, 0, token_ids)
        candidates = scores[..., None] + log_probs.reshape(batch_size, k, k)
        scores, flat = torch.topk(candidates.reshape(batch_size, k * k), k)
        beams = flat // k  # (B, K)
        new_tokens = torch.gather(token_ids.reshape(batch_size, k * k), 1, flat)
        source_rows = (beams + offsets).reshape(rows)
        tokens = tokens.index_select(0, source_rows)
        state = reorder_fn(state, source_rows)
        was_finished = torch.gather(finished, 1, beams)
        lengths = torch.gather(lengths, 1, beams) + (~was_finished).int()
        finished = was_finished | (new_tokens == end_token_id)
        tokens[:, index + 1] = new_tokens.reshape(rows).int()
        return tokens, scores, finished, lengths, state

    return advance


def _run_eagerly(advance, carry, max_new_tokens, stops, steps_per_check):
    """`advance` for M steps in a Python loop, stopping once every beam
    has ended, checked every `steps_per_check` steps (as on XLA)."""
    check_every = steps_per_check or default_steps_per_check()
    for index in range(max_new_tokens):
        carry = advance(index, carry)
        if stops and (index + 1) % check_every == 0 and bool(carry[2].all()):
            break
    return carry

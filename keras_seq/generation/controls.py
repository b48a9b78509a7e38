"""Decoding controls: a forced prefix, a minimum length, no-repeat n-grams,
a repetition penalty and suppressed ids, applied to each step's logits.

`GenerativeModel.generate` and `beam_search` gather the controls of a call
into one `DecodingControls`. What a control is (which ones are set, the
n-gram size) is fixed when a loop is compiled; the values a user tunes
(the penalty, the minimum length, the prefix, the suppressed ids) are
tensors passed into the compiled loop, so changing them compiles nothing
new. A call without a control builds no `DecodingControls`, and its loop
has none of the operations below.

Every control reads the output so far, `history`: the (R, L) ids of the
decoding buffer, of which the positions before `position` are written.
For a translator they are the start token, then the forced prefix and the
chosen ids; for a language model the prompt comes first, so the prompt
counts for the repetition penalty and the n-gram blocking, as in
transformers' `generate` (CTranslate2's translator reads the target side
only, as here; see docs/generation-and-serving.md for the differences).

Shape legend:
    R: rows decoded together (B, or B * K beams)
    L: positions of the history (given ids plus new tokens)
    M: max_new_tokens
    V: vocabulary size
"""

from keras import ops

from keras_seq.masks import masked_value

# The order of the tensors a compiled loop receives.
_TENSORS = ("prefix_ids", "min_new_tokens", "repetition_penalty", "suppressed")


class DecodingControls:
    """The controls of one decoding call, as loop inputs.

    Args:
        prefix_ids: None, or (B, M) int32 ids forced at the first new
            positions of each row, 0 where a row's prefix has ended.
        min_new_tokens: None, or an int32 scalar, or (B,) int32 per row
            (a SavedModel signature's input): the end token is ruled out
            while fewer new tokens are written.
        no_repeat_ngram_size: int n >= 1, or 0 for none: an id that would
            complete an n-gram already in the history is ruled out.
        repetition_penalty: None, or a float32 scalar p > 0, or (B,) per
            row: the logit of every id in the history is divided by p
            where it is positive and multiplied by p where it is not
            (Keskar et al., 2019); p = 1 changes nothing.
        suppressed: None, or a (1, V) boolean mask of ids never written.
    """

    def __init__(
        self,
        prefix_ids=None,
        min_new_tokens=None,
        no_repeat_ngram_size=0,
        repetition_penalty=None,
        suppressed=None,
    ):
        self.prefix_ids = prefix_ids
        self.min_new_tokens = min_new_tokens
        self.no_repeat_ngram_size = int(no_repeat_ngram_size or 0)
        self.repetition_penalty = repetition_penalty
        self.suppressed = suppressed

    @property
    def key(self):
        """What a compiled loop depends on: which controls are set, and n."""
        present = tuple(getattr(self, name) is not None for name in _TENSORS)
        return ("controls", self.no_repeat_ngram_size) + present

    def tensors(self):
        """The values the compiled loop receives, in a fixed order."""
        values = (getattr(self, name) for name in _TENSORS)
        return [value for value in values if value is not None]

    def with_tensors(self, tensors):
        """The same controls over `tensors` (the compiled loop's inputs)."""
        tensors = list(tensors)
        values = {}
        for name in _TENSORS:
            values[name] = None if getattr(self, name) is None else tensors.pop(0)
        return DecodingControls(
            no_repeat_ngram_size=self.no_repeat_ngram_size, **values
        )

    def tiled(self, tile):
        """The controls with `tile` (per-row to per-beam) applied to the
        per-row tensors: the prefix, and a minimum length or penalty given
        per row."""
        values = {}
        for name in _TENSORS:
            value = getattr(self, name)
            per_row = name == "prefix_ids" or (
                name != "suppressed" and value is not None and len(value.shape) == 1
            )
            values[name] = tile(value) if per_row and value is not None else value
        return DecodingControls(
            no_repeat_ngram_size=self.no_repeat_ngram_size, **values
        )

    def apply(self, logits, history, position, new_index, allowed, end_token_id):
        """One step's logits under the controls: `(logits, forcing)`.

        Args:
            logits: (R, V) logits of the id at `position`.
            history: (R, L) int32 ids; those before `position` are written.
            position: int or int scalar tensor, the position being chosen.
            new_index: its index among the new tokens (negative inside a
                language model's prompt).
            allowed: the model's (1, V) mask of the ids it may write, or
                None for all.
            end_token_id: int, or None or a negative id for no end token.

        Returns:
            `logits`: (R, V) float32, the repetition penalty applied and
            every ruled-out id at the masks' sentinel; the log-softmax of
            these (over the temperature, when sampling) is the
            distribution decoded from and scored. `forcing`: None, or an
            (R, V) boolean mask that is True on every id but the forced
            one in rows whose prefix has not ended; a loop rules those out
            of its choice only, so that a forced id is scored by what the
            model gives it. A forced id is never ruled out by the other
            controls.
        """
        logits = ops.cast(logits, "float32")
        size = logits.shape[-1]
        if self.repetition_penalty is not None:
            seen = seen_ids(history, position, size)
            # (1, 1) for one penalty, (R, 1) for one a row.
            penalty = ops.reshape(ops.cast(self.repetition_penalty, "float32"), (-1, 1))
            penalised = ops.where(logits > 0, logits / penalty, logits * penalty)
            logits = ops.where(seen, penalised, logits)
        ruled_out = None if allowed is None else ops.logical_not(allowed)

        def rule_out(mask):
            return mask if ruled_out is None else ops.logical_or(ruled_out, mask)

        if self.suppressed is not None:
            ruled_out = rule_out(self.suppressed)
        if self.no_repeat_ngram_size:
            banned = repeated_ngram_ids(
                history, position, self.no_repeat_ngram_size, size
            )
            ruled_out = rule_out(banned)
        stops = end_token_id is not None and end_token_id >= 0
        if self.min_new_tokens is not None and stops:
            minimum = ops.reshape(self.min_new_tokens, (-1, 1))  # (1 or R, 1)
            early = ops.less(new_index, minimum)
            is_end = (ops.arange(size) == end_token_id)[None]  # (1, V)
            ruled_out = rule_out(ops.logical_and(early, is_end))
        forcing = None
        if self.prefix_ids is not None:
            forced = forced_ids(self.prefix_ids, new_index)  # (R,)
            forces = ops.greater(forced, 0)[:, None]  # (R, 1)
            is_forced = ops.equal(ops.arange(size)[None], forced[:, None])  # (R, V)
            is_forced = ops.logical_and(forces, is_forced)
            forcing = ops.logical_and(forces, ops.logical_not(is_forced))
            if ruled_out is not None:
                ruled_out = ops.logical_and(ruled_out, ops.logical_not(is_forced))
        if ruled_out is not None:
            logits = ops.where(ruled_out, masked_value("float32"), logits)
        return logits, forcing


def forced_ids(prefix_ids, new_index):
    """The (R,) ids forced at new position `new_index`, 0 for none.

    A sum against a one-hot of the index rather than a gather, so that an
    index outside [0, M) (a language model's prompt positions) forces
    nothing instead of failing.
    """
    length = ops.shape(prefix_ids)[1]
    at = ops.cast(ops.equal(ops.arange(length), new_index), "int32")  # (M,)
    return ops.sum(prefix_ids * at[None], axis=1)


def marked_ids(ids, marks, size):
    """(R, V) boolean: True at `ids[r, j]` for every j where `marks[r, j]`.

    One scatter of the (R, J) marks into (R, V) zeros, so the work grows
    with the history's length, not with J * V.
    """
    rows = ops.zeros_like(ids) + ops.arange(ops.shape(ids)[0], dtype="int32")[:, None]
    indices = ops.reshape(ops.stack([rows, ids], axis=-1), (-1, 2))
    updates = ops.reshape(ops.cast(marks, "float32"), (-1,))
    zeros = ops.zeros((ops.shape(ids)[0], size), "float32")
    return ops.greater(ops.scatter_update(zeros, indices, updates, "add"), 0.0)


def seen_ids(history, position, size):
    """(R, V) boolean: the ids written before `position` in each row."""
    written = ops.less(ops.arange(ops.shape(history)[1]), position)[None]  # (1, L)
    written = ops.logical_and(written, ops.ones_like(history, dtype="bool"))
    return marked_ids(history, written, size)  # (R, L) marks


def repeated_ngram_ids(history, position, n, size):
    """(R, V) boolean: the ids that would repeat an n-gram of the history.

    The n-gram ending at `position` starts with the n - 1 ids before it;
    every earlier place j where those n - 1 ids occur bans the id that
    followed them there, `history[j + n - 1]` (transformers' and
    CTranslate2's `no_repeat_ngram_size`). n = 1 bans every id written.
    """
    if n == 1:
        return seen_ids(history, position, size)
    length = ops.shape(history)[1]
    width = length - n + 1  # n-gram starts in the history
    if isinstance(width, int):
        if width <= 0:  # Too short a history for any n-gram.
            return ops.zeros((ops.shape(history)[0], size), "bool")
    else:  # A length known only when the loop runs (TensorFlow's trace).
        width = ops.maximum(width, 0)
    # The n - 1 ids before `position`, gathered at clipped places: before
    # n - 1 ids are written no n-gram can complete (`valid` below).
    places = ops.clip(position - (n - 1) + ops.arange(n - 1), 0, length - 1)
    last = ops.take(history, places, axis=1)  # (R, n - 1)
    match = None
    for i in range(n - 1):
        window = ops.slice(history, [0, i], [ops.shape(history)[0], width])
        equal = ops.equal(window, last[:, i : i + 1])  # (R, W)
        match = equal if match is None else ops.logical_and(match, equal)
    starts = ops.arange(width)
    # The n-gram at j must be written whole, its last id included.
    valid = ops.less(starts + n - 1, position)[None]  # (1, W)
    following = ops.slice(history, [0, n - 1], [ops.shape(history)[0], width])
    return marked_ids(following, ops.logical_and(match, valid), size)

"""The attention decoder of Fig. 7.10, a recurrent loop over target steps.

Shape legend:
    B: batch size
    S: source length
    T: target length
    E: target embedding width
    H: decoder width (`units`)
    C: encoder output width (2 x encoder units for a bidirectional encoder)
"""

import keras
from keras import ops

from keras_seq.layers.score_attention import SCORES, ScoreAttention
from keras_seq.validation import check_choice, check_positive_int

DECODER_CELLS = ("gru", "lstm")
_CELLS = {"gru": keras.layers.GRUCell, "lstm": keras.layers.LSTMCell}


@keras.saving.register_keras_serializable(package="keras_seq")
class AttentionDecoder(keras.layers.Layer):
    """A GRU or LSTM decoder that attends to the encoder at every step.

    One step is Eq. (7.22) with the attention of Eq. (7.20)–(7.21), as in
    Bahdanau et al. (2015):

        alpha(t) = softmax_s score(s(t-1), v(s))        (query z_q = s(t-1))
        u(t)     = sum_s alpha_s(t) v(s)
        s(t)     = cell(s(t-1), [y(t-1); u(t)])
        o(t)     = [s(t); u(t)]

    where `v(s)` are the encoder outputs (the concatenated forward and
    reverse states of a bidirectional encoder), `y(t-1)` the embedding of
    the previous target token (teacher forcing feeds the reference) and
    `o(t)` the input of the output layer, so the logits read both the state
    and the context. For an LSTM the state is `(h, c)` and the query is `h`.

    Keras 3 RNN layers take no per-step `constants`, so the loop is written
    here with `keras.ops.scan`, which is differentiable and runs on every
    backend. The same `step` method is the body of that loop and the entry
    point of step-by-step generation, where the carried state plays the
    role a key/value cache plays for a Transformer. Dropout belongs to the
    caller (on the embeddings and on `o(t)`): random ops inside the scan
    body would need a seed carried through the loop.

    Args:
        units: int, decoder width H.
        cell: `"gru"` or `"lstm"`.
        score: the attention score, one of `"dot"`, `"scaled_dot"`,
            `"general"`, `"additive"`, `"concat"` (see `ScoreAttention`);
            `"dot"` and `"scaled_dot"` need H == C.
        attention_units: int, hidden width of the `"additive"` and
            `"concat"` scores; defaults to `units`.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: (B, T, E) embeddings of the previous target tokens.
        encoder_outputs: (B, S, C) encoder outputs (keys and values).
        initial_state: (B, H) initial hidden state, or the full state list
            (`[h]` for a GRU, `[h, c]` for an LSTM; a lone `h` gets `c = 0`).
        encoder_outputs_mask: (B, S) boolean source padding mask; filled in
            from the implicit mask of `encoder_outputs` when omitted.
        return_attention_weights: bool, also return the weights.
        training: bool, passed to the sublayers.

    Returns:
        (B, T, H + C) outputs `o(t)`, and with `return_attention_weights`
        also the (B, T, S) weights `alpha(t)`, zero on padded source
        positions, for alignment plots like Fig. 7.11.

    Example:
    >>> decoder = AttentionDecoder(units=16, cell="gru", score="additive")
    >>> targets = keras.ops.ones((2, 4, 8))  # (B, T, E)
    >>> encoder_outputs = keras.ops.ones((2, 5, 12))  # (B, S, C)
    >>> mask = keras.ops.array([[True] * 5, [True] * 3 + [False] * 2])
    >>> outputs, weights = decoder(
    ...     targets,
    ...     encoder_outputs,
    ...     keras.ops.zeros((2, 16)),
    ...     encoder_outputs_mask=mask,
    ...     return_attention_weights=True,
    ... )
    >>> tuple(outputs.shape), tuple(weights.shape)
    ((2, 4, 28), (2, 4, 5))
    >>> [round(float(w), 3) for w in weights[1, 0]]  # Equal keys, 3 real.
    [0.333, 0.333, 0.333, 0.0, 0.0]

    References:
        Bahdanau, Cho and Bengio, "Neural Machine Translation by Jointly
        Learning to Align and Translate", ICLR 2015.
    """

    def __init__(
        self, units, cell="gru", score="additive", attention_units=None, **kwargs
    ):
        super().__init__(**kwargs)
        check_positive_int(units, "units")
        check_choice(cell, "cell", DECODER_CELLS)
        check_choice(score, "score", SCORES)
        check_positive_int(attention_units, "attention_units", allow_none=True)
        self.units = units
        self.cell = cell
        self.score = score
        self.attention_units = attention_units
        self.supports_masking = True

    def build(self, inputs_shape, encoder_outputs_shape):
        embedding_dim, encoder_dim = inputs_shape[-1], encoder_outputs_shape[-1]
        if self.score in ("dot", "scaled_dot") and encoder_dim != self.units:
            raise ValueError(
                f"`score={self.score!r}` compares the decoder state with the "
                f"encoder outputs, so `units` ({self.units}) must equal their "
                f"width ({encoder_dim}, shape {tuple(encoder_outputs_shape)})."
            )
        self.attention = ScoreAttention(
            score=self.score,
            units=self.attention_units or self.units,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.attention.build((None, self.units), encoder_outputs_shape)
        self.recurrent_cell = _CELLS[self.cell](
            self.units, dtype=self.dtype_policy, name=f"{self.cell}_cell"
        )
        self.recurrent_cell.build((None, embedding_dim + encoder_dim))
        self.built = True

    def get_initial_state(self, hidden):
        """The full state list from an initial hidden state (B, H)."""
        if self.cell == "lstm":
            return [hidden, ops.zeros_like(hidden)]
        return [hidden]

    def step(self, state, inputs, encoder_outputs, encoder_mask=None, training=None):
        """One decoder step, Eq. (7.22).

        Args:
            state: list of (B, H) tensors, `s(t-1)`.
            inputs: (B, E) embedding of the previous token `y(t-1)`.
            encoder_outputs: (B, S, C).
            encoder_mask: (B, S) boolean source padding mask, or None.
            training: bool.

        Returns:
            `(new_state, output, weights)`: the state list `s(t)`, the
            (B, H + C) output `[s(t); u(t)]` and the (B, S) weights.
        """
        state = list(state)
        # Query z_q(t) = s(t-1), keys and values v(1..S): Eq. (7.20)-(7.21).
        context, weights = self.attention(
            state[0], encoder_outputs, value_mask=encoder_mask, training=training
        )  # (B, C), (B, S)
        cell_inputs = ops.concatenate([inputs, context], axis=-1)  # (B, E + C)
        hidden, new_state = self.recurrent_cell(cell_inputs, state, training=training)
        output = ops.concatenate([hidden, context], axis=-1)  # (B, H + C)
        return list(new_state), output, weights

    def call(
        self,
        inputs,
        encoder_outputs,
        initial_state,
        encoder_outputs_mask=None,
        return_attention_weights=False,
        training=None,
    ):
        if not isinstance(initial_state, (list, tuple)):
            initial_state = self.get_initial_state(initial_state)
        batch = ops.shape(inputs)[0]
        output_width = self.units + encoder_outputs.shape[-1]
        # The carry holds the last output and weights too: the TensorFlow
        # `scan` stacks per-step outputs shaped like the carry.
        carry = (
            [ops.cast(s, self.compute_dtype) for s in initial_state],
            ops.zeros((batch, output_width), dtype=self.compute_dtype),
            ops.zeros((batch, ops.shape(encoder_outputs)[1]), dtype=self.compute_dtype),
        )

        def body(carry, previous_embedding):
            state, _, _ = carry
            carry = self.step(
                state,
                previous_embedding,
                encoder_outputs,
                encoder_outputs_mask,
                training=training,
            )
            return carry, carry

        steps = ops.transpose(inputs, (1, 0, 2))  # (T, B, E)
        _, (_, outputs, weights) = ops.scan(body, carry, steps)
        outputs = ops.transpose(outputs, (1, 0, 2))  # (B, T, H + C)
        if return_attention_weights:
            return outputs, ops.transpose(weights, (1, 0, 2))  # (B, T, S)
        return outputs

    def compute_output_spec(
        self,
        inputs,
        encoder_outputs,
        initial_state,
        encoder_outputs_mask=None,
        return_attention_weights=False,
        training=None,
    ):
        batch, steps = inputs.shape[0], inputs.shape[1]
        outputs = keras.KerasTensor(
            (batch, steps, self.units + encoder_outputs.shape[-1]),
            dtype=self.compute_dtype,
        )
        if return_attention_weights:
            weights = keras.KerasTensor(
                (batch, steps, encoder_outputs.shape[1]), dtype=self.compute_dtype
            )
            return outputs, weights
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "cell": self.cell,
                "score": self.score,
                "attention_units": self.attention_units,
            }
        )
        return config

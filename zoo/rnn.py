"""Recurrent builders: a language model and a context-vector seq2seq model.

The RNN side of the book's Chapter 7: the recursion of Eq. (7.1)–(7.2)
with SimpleRNN, LSTM (Eq. 7.16–7.17) or GRU (Eq. 7.18–7.19) cells, stacked
(Eq. 7.15) or bidirectional (Eq. 7.14), and the basic encoder-decoder of
Fig. 7.9 (a) and (b). The attention translator of Fig. 7.10 is in
`zoo.rnn_translator`.

Shape legend:
    B: batch size
    S: source length
    T: target (or text) length
    E: embedding width (`embedding_dim`)
    H: recurrent width (`units`)
    V: vocabulary size
"""

import keras
from keras import ops

from keras_seq import defaults
from keras_seq.generation import GenerativeModel, resolve_max_new_tokens
from keras_seq.masks import PADDING_ID, check_token_ids, padding_mask
from keras_seq.text import RESERVED_TOKENS, UNSAMPLABLE_IDS
from keras_seq.validation import (
    check_bool,
    check_choice,
    check_positive_int,
    check_rate,
)
from zoo import presets as presets_lib
from zoo.common import (
    TokenIdsModel,
    check_model_kwargs,
    hyperparameters,
    init_defaults,
    resolve_config,
)

CELLS = ("simple", "lstm", "gru")
_RECURRENT_LAYERS = {
    "simple": keras.layers.SimpleRNN,
    "lstm": keras.layers.LSTM,
    "gru": keras.layers.GRU,
}


def recurrent_layer(cell, units, name, **kwargs):
    """A Keras SimpleRNN, LSTM or GRU layer; GRU keeps `reset_after=True`."""
    return _RECURRENT_LAYERS[cell](units, name=name, **kwargs)


def reverse_real_tokens(token_ids, padding_id=PADDING_ID):
    """Reverse the real tokens of each row, keeping padding at the end.

    The input-reversal trick of Sutskever et al. (2014): `[a, b, c, 0, 0]`
    becomes `[c, b, a, 0, 0]`. A row's length is one past its last non-pad
    token, so a pad inside a row is reversed with the tokens around it and
    trailing padding stays put; the function is its own inverse.

    Args:
        token_ids: (B, S) integer tensor, post-padded with `padding_id`.

    Returns:
        (B, S) integer tensor of the same dtype.
    """
    positions = ops.arange(ops.shape(token_ids)[1], dtype="int32")[None, :]  # (1, S)
    real = padding_mask(token_ids, padding_id)  # (B, S)
    lengths = ops.max(
        ops.where(real, positions + 1, ops.zeros_like(positions)),
        axis=1,
        keepdims=True,
    )  # (B, 1)
    source = ops.where(positions < lengths, lengths - 1 - positions, positions)
    return ops.take_along_axis(token_ids, source, axis=1)  # (B, S)


@keras.saving.register_keras_serializable(package="zoo")
class ReverseTokens(keras.layers.Layer):
    """Layer form of `reverse_real_tokens`: (B, S) ids -> (B, S) ids."""

    def call(self, token_ids):
        return reverse_real_tokens(token_ids)

    def compute_output_spec(self, token_ids):
        return keras.KerasTensor(token_ids.shape, dtype=token_ids.dtype)


@keras.saving.register_keras_serializable(package="zoo")
class ConcatenateContext(keras.layers.Layer):
    """Append one vector per sequence to every step: Fig. 7.9 (b).

    (B, T, E) and (B, C) -> (B, T, E + C). The sequence's padding mask is
    passed on unchanged.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, context):
        steps = ops.shape(inputs)[1]
        context = ops.cast(context, inputs.dtype)[:, None, :]  # (B, 1, C)
        context = ops.repeat(context, steps, axis=1)  # (B, T, C)
        return ops.concatenate([inputs, context], axis=-1)

    def compute_output_shape(self, inputs_shape, context_shape):
        return (*inputs_shape[:-1], inputs_shape[-1] + context_shape[-1])


@keras.saving.register_keras_serializable(package="zoo")
class LogitsDense(keras.layers.Dense):
    """The output layer: a `Dense` whose logits carry no Keras mask.

    Padding is the loss's business (`MaskedSparseCategoricalCrossentropy`
    ignores target id 0). A mask left on the logits would make Keras weight
    that already averaged, scalar loss by the mask a second time, which
    rescales it and, on JAX, turns it into a (B, T) tensor that cannot be
    differentiated.
    """

    def compute_mask(self, inputs, mask=None):
        return None

    def quantize(self, mode=None, type_check=True, config=None):
        # Keras quantizes only exact `Dense`s; this one changes nothing but
        # the mask, so `Dense`'s quantization applies as it is.
        super().quantize(mode, type_check=False, config=config)


@keras.saving.register_keras_serializable(package="zoo")
class RNNLanguageModel(GenerativeModel, TokenIdsModel):
    """A recurrent language model: embedding, stacked RNN layers, logits.

    The recursion of Eq. (7.2), `h(t) = S_h(W_hh h(t-1) + W_hx x(t) + b_h)`
    and `y(t) = S_y(W_yh h(t) + b_y)`, with `x(t)` the embedding of token
    t and `y(t)` the logits of token t + 1. `cell` swaps the plain update
    for an LSTM (Eq. 7.16–7.17) or a GRU (Eq. 7.18–7.19); `num_layers`
    stacks them, the hidden sequence of layer l being the input of layer
    l + 1 (Eq. 7.15, Fig. 7.7 (b)). Dropout sits on the non-recurrent
    connections only (embedding and between layers, Zaremba et al. 2014).

    `bidirectional=True` runs a forward and a reverse recursion per layer
    and concatenates them (Eq. 7.14, Fig. 7.7 (a)). It is allowed, but the
    model is then *not* a next-token predictor: the reverse recursion reads
    tokens after t, including token t + 1 itself, so the logits at t see the
    answer. Use it for per-token representations (tagging, fill-in
    objectives), not for next-token training or generation; `is_causal`
    tells which kind a model is.

    Args:
        vocabulary_size: int, number of token ids V (0 is padding).
        cell: `"simple"`, `"lstm"` or `"gru"` (GRU with `reset_after=True`,
            the Keras and cuDNN default).
        units: int, recurrent width H (per direction).
        num_layers: int, number of stacked recurrent layers L.
        embedding_dim: int, token embedding width E.
        dropout: float in [0, 1), on the embeddings and after every
            recurrent layer.
        bidirectional: bool, see above.
        **kwargs: `name` and `trainable`, passed to `keras.Model`.

    Inputs:
        token_ids: (B, T) int, 0 = padding (post-padded).

    Outputs:
        (B, T, V) logits; for a causal model, of the next token.

    Example:
    >>> model = build_rnn_language_model("tiny")
    >>> tuple(model(keras.ops.ones((2, 5), "int32")).shape)
    (2, 5, 100)

    References:
        Zaremba, Sutskever and Vinyals, "Recurrent Neural Network
        Regularization", 2014.
    """

    label_bound = "vocabulary_size"
    # Texts are sampled from it: no padding, [UNK], [START] or [MASK] in them.
    unsamplable_token_ids = UNSAMPLABLE_IDS

    def __init__(
        self,
        vocabulary_size=8000,
        cell="lstm",
        units=256,
        num_layers=2,
        embedding_dim=128,
        dropout=0.2,
        bidirectional=False,
        **kwargs,
    ):
        check_model_kwargs(kwargs, RNNLanguageModel, "RNN language model")
        for key in ("vocabulary_size", "units", "num_layers", "embedding_dim"):
            check_positive_int(locals()[key], key)
        check_choice(cell, "cell", CELLS)
        check_rate(dropout, "dropout")
        check_bool(bidirectional, "bidirectional")

        # Layers.
        embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, mask_zero=True, name="token_embedding"
        )
        recurrent = []
        for i in range(num_layers):
            layer = recurrent_layer(cell, units, f"rnn_{i}", return_sequences=True)
            if bidirectional:
                layer = keras.layers.Bidirectional(layer, name=f"bidirectional_{i}")
            recurrent.append(layer)
        logits_dense = LogitsDense(vocabulary_size, name="logits")

        # Functional graph.
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        x = embedding(token_ids)  # (B, T, E), carries the padding mask
        x = keras.layers.Dropout(dropout, name="embedding_dropout")(x)
        for i, layer in enumerate(recurrent):
            x = layer(x)  # (B, T, H), or (B, T, 2H) bidirectional
            x = keras.layers.Dropout(dropout, name=f"rnn_dropout_{i}")(x)
        logits = logits_dense(x)  # (B, T, V)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # Config and handles.
        self.vocabulary_size = vocabulary_size
        self.cell = cell
        self.units = units
        self.num_layers = num_layers
        self.embedding_dim = embedding_dim
        self.dropout = dropout
        self.bidirectional = bidirectional
        self.token_embedding = embedding
        self.recurrent_layers = recurrent
        self.logits_dense = logits_dense

    @property
    def is_causal(self):
        """Whether the logits at t depend only on tokens up to t."""
        return not self.bidirectional

    def check_generate_input(self, token_ids, max_new_tokens=None):
        """Validate prompts; returns `max_new_tokens` or its default.

        A recurrent model has no length limit: the default continuation is
        `keras_seq.generation.DEFAULT_MAX_NEW_TOKENS` long.
        """
        if not self.is_causal:
            raise ValueError(
                "`generate` needs a causal model; this RNN language model is "
                "bidirectional (its logits at t read token t + 1). Build it "
                "with `bidirectional=False` to generate."
            )
        check_token_ids(token_ids, "token_ids", self.vocabulary_size)
        if token_ids.shape[1] == 0:
            raise ValueError(
                "`token_ids` must hold at least one token; received a prompt "
                "of length 0."
            )
        return resolve_max_new_tokens(max_new_tokens)

    def start_decoding(self, token_ids, max_new_tokens, start_token_id):
        """The prompt and zero states: `(token_ids, (), states)`.

        See `GenerativeModel.start_decoding`. The cache is the recurrent
        state h(t) (and an LSTM's memory c(t)) of every layer, read through
        the prompt before the first new token, as the full pass starts from
        zeros.
        """
        batch_size = ops.shape(token_ids)[0]
        dtype = self.token_embedding.compute_dtype
        states = tuple(
            tuple(
                ops.zeros((batch_size, size), dtype)
                for size in keras.tree.flatten(layer.cell.state_size)
            )
            for layer in self.recurrent_layers
        )
        return token_ids, (), states

    def decoding_step(self, token_ids, index, context, cache):
        """One step of Eq. (7.2) per layer: (B, 1) ids at `index` -> (B, V)
        logits of the next id and the layers' new states.

        The layers' cells run one step each (the recurrence the full pass
        unrolls), with the previous step's states; dropout is off.
        """
        x = self.token_embedding(token_ids)[:, 0, :]  # (B, E)
        updated = []
        for layer, states in zip(self.recurrent_layers, cache):
            x, new_states = layer.cell(x, list(states), training=False)  # (B, H)
            updated.append(tuple(keras.tree.flatten(new_states)))
        return self.logits_dense(x), tuple(updated)  # (B, V)

    # `score(token_ids)` reads the first id as given, the rest as output.
    continues_input = True


def _run_encoder(layers, x):
    """Stacked encoder; returns the final state list of every layer."""
    states = []
    for i, layer in enumerate(layers["encoder_layers"]):
        outputs = layer(x)  # [(B, S, H) or (B, H), then (B, H) per state]
        x, layer_states = outputs[0], list(outputs[1:])
        states.append(layer_states)
        if i + 1 < len(layers["encoder_layers"]):
            x = layers["encoder_dropout"][i](x)
    return states


def _seq2seq_graph(layers, reverse_source, feed_context):
    """Wire Fig. 7.9 (a) or (b); returns (named inputs, (B, T, V) logits)."""
    encoder_ids = keras.Input((None,), dtype="int32", name="encoder_token_ids")
    decoder_ids = keras.Input((None,), dtype="int32", name="decoder_token_ids")
    source_ids = encoder_ids
    if reverse_source:
        source_ids = layers["source_reversal"](encoder_ids)  # (B, S)
    x = layers["source_embedding"](source_ids)  # (B, S, E), carries the mask
    x = layers["source_dropout"](x)
    states = _run_encoder(layers, x)
    context = states[-1][0]  # z*: (B, H)
    y = layers["target_embedding"](decoder_ids)  # (B, T, E)
    y = layers["target_dropout"](y)
    if feed_context:
        y = layers["context_input"](y, context)  # (B, T, E + H)
    for i, layer in enumerate(layers["decoder_layers"]):
        # With an initial state Keras does not forward the implicit
        # mask; the targets are post-padded, so the steps before any
        # padding, the ones the loss reads, are unaffected.
        y = layer(y, initial_state=states[i])  # (B, T, H)
        y = layers["decoder_dropout"][i](y)
    if feed_context:
        y = layers["context_output"](y, context)  # (B, T, 2H)
    logits = layers["logits_dense"](y)  # (B, T, V)
    inputs = {"encoder_token_ids": encoder_ids, "decoder_token_ids": decoder_ids}
    return inputs, logits


@keras.saving.register_keras_serializable(package="zoo")
class RNNSeq2Seq(GenerativeModel, TokenIdsModel):
    """The basic RNN encoder-decoder with a context vector, Fig. 7.9.

    The encoder runs over the source and keeps only its final state, the
    context vector (the code `z*`); its padding mask makes that the state
    after the last real token. The decoder is initialised with it (Fig. 7.9
    (a)); when stacked, decoder layer l starts from the final state of
    encoder layer l, as in Sutskever et al. (2014), and `z*` is the final
    hidden state of the top encoder layer. With `feed_context=True`
    (Fig. 7.9 (b)) `z*` is also concatenated to the target embedding at
    every step and to the top decoder output before the logits, which keeps
    the code from fading as t grows.

    `reverse_source=True` feeds the encoder the real source tokens in
    reverse order (padding stays at the end), the trick of Sutskever et al.
    that brings the first source words close to the first target words.
    The reversal happens inside the model, so callers pass sources in
    normal order, at training and at inference.

    Trained with teacher forcing: `decoder_token_ids` is the target shifted
    right (start token first), and the logits at t predict target token t.

    For generation (`generate` and `beam_search`, from `GenerativeModel`),
    `encode` runs the encoder once; `z*` is the constant context and the
    decoder layers' states are the cache, advanced one cell step per token.

    Args:
        source_vocabulary_size, target_vocabulary_size: vocabulary sizes.
        cell: `"simple"`, `"lstm"` or `"gru"`, for encoder and decoder.
        units: int, recurrent width H of every layer (encoder and decoder
            states must match to be handed over).
        embedding_dim: int, width E of the source and target embeddings.
        num_layers: int, stacked layers in the encoder and in the decoder.
        dropout: float in [0, 1), on embeddings and between layers.
        feed_context: bool, Fig. 7.9 (b) instead of (a).
        reverse_source: bool, reverse the source's real tokens.
        **kwargs: `name` and `trainable`, passed to `keras.Model`.

    Inputs:
        encoder_token_ids: (B, S) int, 0 = padding (post-padded).
        decoder_token_ids: (B, T) int, 0 = padding.

    Outputs:
        (B, T, V) logits of the next target token.

    References:
        Sutskever, Vinyals and Le, "Sequence to Sequence Learning with
        Neural Networks", NeurIPS 2014.
        Cho et al., "Learning Phrase Representations using RNN
        Encoder-Decoder for Statistical Machine Translation", EMNLP 2014.
    """

    label_bound = "target_vocabulary_size"
    # Never written into a translation (`keras_seq.defaults` says why).
    unsamplable_token_ids = tuple(
        RESERVED_TOKENS.index(token)
        for token in defaults.TRANSLATION_UNSAMPLABLE_TOKENS
    )

    def __init__(
        self,
        source_vocabulary_size=8000,
        target_vocabulary_size=8000,
        cell="lstm",
        units=256,
        embedding_dim=128,
        num_layers=2,
        dropout=0.2,
        feed_context=False,
        reverse_source=False,
        **kwargs,
    ):
        check_model_kwargs(kwargs, RNNSeq2Seq, "RNN seq2seq")
        arguments = locals()
        config = {name: arguments[name] for name in hyperparameters(RNNSeq2Seq)}
        for key in (
            "source_vocabulary_size",
            "target_vocabulary_size",
            "units",
            "embedding_dim",
            "num_layers",
        ):
            check_positive_int(config[key], key)
        check_choice(cell, "cell", CELLS)
        check_rate(dropout, "dropout")
        check_bool(feed_context, "feed_context")
        check_bool(reverse_source, "reverse_source")
        layers = self._make_layers(config)

        # Functional graph.
        inputs, logits = _seq2seq_graph(layers, reverse_source, feed_context)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # Config and handles.
        for name, value in config.items():
            setattr(self, name, value)
        for name, layer in layers.items():
            setattr(self, name, layer)

    @staticmethod
    def _make_layers(config):
        """The model's layers by handle name, from its hyperparameters."""
        cell, units, dropout = config["cell"], config["units"], config["dropout"]
        count = config["num_layers"]
        layers = {
            "source_embedding": keras.layers.Embedding(
                config["source_vocabulary_size"],
                config["embedding_dim"],
                mask_zero=True,
                name="source_embedding",
            ),
            "target_embedding": keras.layers.Embedding(
                config["target_vocabulary_size"],
                config["embedding_dim"],
                mask_zero=True,
                name="target_embedding",
            ),
            "source_dropout": keras.layers.Dropout(dropout, name="source_dropout"),
            "target_dropout": keras.layers.Dropout(dropout, name="target_dropout"),
            "encoder_layers": [
                recurrent_layer(
                    cell,
                    units,
                    f"encoder_{i}",
                    return_sequences=i + 1 < count,
                    return_state=True,
                )
                for i in range(count)
            ],
            "encoder_dropout": [
                keras.layers.Dropout(dropout, name=f"encoder_dropout_{i}")
                for i in range(count - 1)
            ],
            "decoder_layers": [
                recurrent_layer(cell, units, f"decoder_{i}", return_sequences=True)
                for i in range(count)
            ],
            "decoder_dropout": [
                keras.layers.Dropout(dropout, name=f"decoder_dropout_{i}")
                for i in range(count)
            ],
            "logits_dense": LogitsDense(
                config["target_vocabulary_size"], name="logits"
            ),
        }
        if config["reverse_source"]:
            layers["source_reversal"] = ReverseTokens(name="source_reversal")
        if config["feed_context"]:
            layers["context_input"] = ConcatenateContext(name="context_input")
            layers["context_output"] = ConcatenateContext(name="context_output")
        return layers

    def encode(self, encoder_token_ids):
        """Run the encoder once per source (no dropout).

        Args:
            encoder_token_ids: (B, S) int source ids in normal order, 0 =
                padding.

        Returns:
            `(context, states)`: `z*` (B, H) and, per encoder layer, its
            final state tuple (`(h,)`, or `(h, c)` for an LSTM), the
            decoder layers' initial states.
        """
        ids = ops.convert_to_tensor(encoder_token_ids, dtype="int32")
        if self.reverse_source:
            ids = self.source_reversal(ids)  # (B, S)
        # The explicit mask is the one the embedding carries in the graph.
        mask = padding_mask(ids)  # (B, S)
        x = self.source_embedding(ids)  # (B, S, E)
        states = []
        for layer in self.encoder_layers:
            outputs = layer(x, mask=mask, training=False)
            x = outputs[0]  # (B, S, H) below the top layer
            states.append(tuple(outputs[1:]))
        return states[-1][0], tuple(states)

    # `generate` and `beam_search` come from `GenerativeModel`; its hooks:

    def check_generate_input(self, token_ids, max_new_tokens=None):
        """Validate source ids; returns `max_new_tokens` or its default.

        A recurrent decoder has no length limit: the default is
        `keras_seq.generation.DEFAULT_MAX_NEW_TOKENS`.
        """
        check_token_ids(token_ids, "token_ids", self.source_vocabulary_size)
        return resolve_max_new_tokens(max_new_tokens)

    def start_decoding(self, token_ids, max_new_tokens, start_token_id):
        """Encode the source once: `(start, context, states)`.

        See `GenerativeModel.start_decoding`. `context` is `z*`, the cache
        the decoder layers' states, those of the encoder layers at first
        (Fig. 7.9); a recurrent state needs no room per position, so
        `max_new_tokens` sizes nothing.
        """
        context, states = self.encode(token_ids)
        batch_size = ops.shape(token_ids)[0]
        start = ops.full((batch_size, 1), start_token_id, dtype="int32")
        return start, context, states

    def decoding_step(self, token_ids, index, context, cache):
        """One cell step per decoder layer (no dropout).

        See `GenerativeModel.decoding_step`: (B, 1) target ids `y(t-1)`
        and the layers' states -> (B, V) logits of `y(t)` and the new
        states. `index` is not read: the states carry the position.
        """
        y = self.target_embedding(token_ids)[:, 0, :]  # (B, E)
        if self.feed_context:
            y = ops.concatenate([y, ops.cast(context, y.dtype)], axis=-1)
        updated = []
        for layer, states in zip(self.decoder_layers, cache):
            y, new_states = layer.cell(y, list(states), training=False)  # (B, H)
            updated.append(tuple(keras.tree.flatten(new_states)))
        if self.feed_context:
            y = ops.concatenate([y, ops.cast(context, y.dtype)], axis=-1)
        return self.logits_dense(y), tuple(updated)  # (B, V)


def _split_vocabulary(config):
    """`vocabulary_size` is shorthand for equal source and target sizes."""
    if "vocabulary_size" in config:
        size = config.pop("vocabulary_size")
        config["source_vocabulary_size"] = size
        config["target_vocabulary_size"] = size
    return config


def build_rnn_language_model(preset=None, **overrides):
    """Build a SimpleRNN / LSTM / GRU language model (Eq. 7.2, 7.14–7.19).

    Args:
        preset: a name in `zoo.presets.RNN_LANGUAGE_MODEL_PRESETS`
            (`"tiny"`, `"small"`), or None for the defaults.
        **overrides: any `RNNLanguageModel` argument.

    Returns:
        An `RNNLanguageModel`, a functional `keras.Model`.
    """
    config = resolve_config(
        init_defaults(RNNLanguageModel),
        presets_lib.RNN_LANGUAGE_MODEL_PRESETS,
        preset,
        overrides,
        "RNN language model",
    )
    return RNNLanguageModel(**config)


def build_rnn_seq2seq(preset=None, **overrides):
    """Build the context-vector encoder-decoder of Fig. 7.9 (a) or (b).

    Args:
        preset: a name in `zoo.presets.RNN_SEQ2SEQ_PRESETS` (`"tiny"`,
            `"small"`), or None for the defaults.
        **overrides: any `RNNSeq2Seq` argument; `vocabulary_size` sets both
            vocabularies.

    Returns:
        An `RNNSeq2Seq`, a functional `keras.Model`.

    Example:
    >>> model = build_rnn_seq2seq("tiny")
    >>> ids = {
    ...     "encoder_token_ids": keras.ops.ones((2, 7), "int32"),
    ...     "decoder_token_ids": keras.ops.ones((2, 5), "int32"),
    ... }
    >>> tuple(model(ids).shape)
    (2, 5, 100)
    """
    config = resolve_config(
        init_defaults(RNNSeq2Seq),
        presets_lib.RNN_SEQ2SEQ_PRESETS,
        preset,
        overrides,
        "RNN seq2seq",
    )
    return RNNSeq2Seq(**_split_vocabulary(config))

"""The RNN encoder-decoder with attention, Fig. 7.10 and Eq. (7.20)–(7.22).

Shape legend:
    B: batch size
    S: source length
    T: target length
    E: embedding width (`embedding_dim`)
    K: encoder width per direction (`encoder_units`); outputs are 2K wide
    H: decoder width (`units`)
    V: target vocabulary size
"""

import keras
from keras import ops

from keras_seq import defaults
from keras_seq.generation import GenerativeModel, resolve_max_new_tokens
from keras_seq.layers.attention_decoder import DECODER_CELLS, AttentionDecoder
from keras_seq.layers.score_attention import SCORES
from keras_seq.masks import check_token_ids, padding_mask
from keras_seq.text import RESERVED_TOKENS
from keras_seq.validation import check_choice, check_positive_int, check_rate
from zoo import presets as presets_lib
from zoo.common import (
    TokenIdsModel,
    hyperparameters,
    init_defaults,
    resolve_config,
)
from zoo.rnn import LogitsDense, recurrent_layer


def _check_config(config):
    for key in (
        "source_vocabulary_size",
        "target_vocabulary_size",
        "units",
        "encoder_units",
        "embedding_dim",
    ):
        check_positive_int(config[key], key)
    check_choice(config["cell"], "cell", DECODER_CELLS)
    check_rate(config["dropout"], "dropout")
    score = config["score"]
    check_choice(score, "score", SCORES)
    if (
        score in ("dot", "scaled_dot")
        and config["units"] != 2 * config["encoder_units"]
    ):
        raise ValueError(
            f"`score={score!r}` compares the decoder state with the "
            "concatenated encoder states, so `units` must equal "
            f"2 * `encoder_units`; received units={config['units']} and "
            f"encoder_units={config['encoder_units']}."
        )


def _make_layers(config):
    """The named layers of Fig. 7.10, before they are wired."""
    dropout = config["dropout"]
    return {
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
        "encoder": keras.layers.Bidirectional(
            recurrent_layer(
                config["cell"],
                config["encoder_units"],
                f"encoder_{config['cell']}",
                return_sequences=True,
                return_state=True,
            ),
            name="encoder",
        ),
        "final_states": keras.layers.Concatenate(name="encoder_final_states"),
        "bridge": keras.layers.Dense(config["units"], activation="tanh", name="bridge"),
        "decoder": AttentionDecoder(
            config["units"],
            cell=config["cell"],
            score=config["score"],
            name="decoder",
        ),
        "output_dropout": keras.layers.Dropout(dropout, name="output_dropout"),
        "logits_dense": LogitsDense(config["target_vocabulary_size"], name="logits"),
    }


@keras.saving.register_keras_serializable(package="zoo")
class RNNTranslator(GenerativeModel, TokenIdsModel):
    """A bidirectional RNN encoder and an attention decoder, Fig. 7.10.

    Encoder: the source embeddings go through a bidirectional GRU or LSTM
    (Eq. 7.14, Fig. 7.7 (a)); its output `v(s) = [h_f(s); h_r(s)]` (B, S,
    2K) is the sequence the decoder attends to, keys and values at once.
    The final forward state `h_f(S)` and the final reverse state `h_r(1)`
    are mapped by a tanh layer (`bridge`) to the first decoder state
    `s(0)`, as Bahdanau et al. do with `h_r(1)`; an LSTM decoder starts its
    memory cell at zero.

    Decoder (`AttentionDecoder`): at step t the previous state `s(t-1)` is
    the query (Sec. 7.4: `z_q(t) = s(t-1)`, `z_k(s) = v(s)`), the attention
    with the chosen score over the real source positions gives the context
    `u(t)` (Eq. 7.20–7.21), the cell reads `[y(t-1); u(t)]` and returns
    `s(t)` (Eq. 7.22), and a linear layer maps `[s(t); u(t)]` to logits.
    Training uses teacher forcing: `y(t-1)` is the reference token.

    For generation (`generate` and `beam_search`, from
    `GenerativeModel`), `encode` runs the encoder once and `decoding_step`
    advances one token from the carried state `s(t-1)` (Eq. 7.22): a step
    costs one cell update and one attention over the source, not a rerun
    of the decoder. For alignment plots (Fig. 7.11), `attention_weights`
    returns the weights of a teacher-forced pass.

    Args:
        source_vocabulary_size, target_vocabulary_size: vocabulary sizes.
        cell: `"gru"` or `"lstm"`, for the encoder and the decoder.
        units: int, decoder width H.
        encoder_units: int, encoder width K per direction.
        embedding_dim: int, width E of the source and target embeddings.
        score: `"dot"`, `"scaled_dot"` (both need units == 2 *
            encoder_units), `"general"`, `"additive"` (Bahdanau) or
            `"concat"`; the additive and concat scores have H hidden units.
        dropout: float in [0, 1), on the embeddings and on `[s(t); u(t)]`.
        **kwargs: `keras.Model` arguments (`name`, `trainable`).

    Inputs:
        encoder_token_ids: (B, S) int, 0 = padding (post-padded).
        decoder_token_ids: (B, T) int, starting with the start token.

    Outputs:
        (B, T, V) logits of the next target token.

    References:
        Bahdanau, Cho and Bengio, "Neural Machine Translation by Jointly
        Learning to Align and Translate", ICLR 2015.
        Luong, Pham and Manning, "Effective Approaches to Attention-based
        Neural Machine Translation", EMNLP 2015.
    """

    label_bound = "target_vocabulary_size"
    renamed_hyperparameters = {"score": "attention_score"}
    # Never written into a translation (`keras_seq.defaults` says why).
    unsamplable_token_ids = tuple(
        RESERVED_TOKENS.index(token)
        for token in defaults.TRANSLATION_UNSAMPLABLE_TOKENS
    )

    def __init__(
        self,
        source_vocabulary_size=8000,
        target_vocabulary_size=8000,
        cell="gru",
        units=256,
        encoder_units=128,
        embedding_dim=128,
        score="additive",
        dropout=0.2,
        **kwargs,
    ):
        arguments = locals()
        config = {name: arguments[name] for name in hyperparameters(RNNTranslator)}
        _check_config(config)
        layers = _make_layers(config)

        # Functional graph.
        encoder_ids = keras.Input((None,), dtype="int32", name="encoder_token_ids")
        decoder_ids = keras.Input((None,), dtype="int32", name="decoder_token_ids")
        encoded, hidden = _encode(layers, encoder_ids)
        y = layers["target_embedding"](decoder_ids)  # (B, T, E)
        y = layers["target_dropout"](y)
        # The source mask rides on `encoded` into `encoder_outputs_mask`.
        z = layers["decoder"](y, encoded, hidden)  # (B, T, H + 2K)
        z = layers["output_dropout"](z)
        logits = layers["logits_dense"](z)  # (B, T, V)
        super().__init__(
            inputs={"encoder_token_ids": encoder_ids, "decoder_token_ids": decoder_ids},
            outputs=logits,
            **kwargs,
        )

        # Config and handles for generation.
        for name, value in {**config, **layers}.items():
            setattr(self, self.renamed_hyperparameters.get(name, name), value)

    def encode(self, encoder_token_ids, training=False):
        """Run the encoder once per source.

        Args:
            encoder_token_ids: (B, S) int source ids, 0 = padding.

        Returns:
            `(encoder_outputs, encoder_mask, state)`: (B, S, 2K) outputs,
            the (B, S) boolean padding mask and the initial decoder state
            list `s(0)` (`[h]` for a GRU, `[h, c]` for an LSTM).
        """
        ids = ops.convert_to_tensor(encoder_token_ids, dtype="int32")
        mask = padding_mask(ids)  # (B, S)
        layers = {key: getattr(self, key) for key in _ENCODER_LAYERS}
        encoded, hidden = _encode(layers, ids, mask=mask, training=training)
        return encoded, mask, self.decoder.get_initial_state(hidden)

    # `generate` and `beam_search` come from `GenerativeModel`; its hooks:

    def check_generate_input(self, token_ids, max_new_tokens=None):
        """Validate source ids; returns `max_new_tokens` or its default.

        A recurrent decoder has no length limit: the default is
        `keras_seq.generation.DEFAULT_MAX_NEW_TOKENS`.
        """
        check_token_ids(token_ids, "token_ids", self.source_vocabulary_size)
        return resolve_max_new_tokens(max_new_tokens)

    def start_decoding(self, token_ids, max_new_tokens, start_token_id):
        """Encode the source once: `(start, context, state)`.

        See `GenerativeModel.start_decoding`. `context` is `(encoded,
        mask)` and the cache is the decoder state list `s(0)`, all from
        `encode`; a recurrent state needs no room per position, so
        `max_new_tokens` sizes nothing.
        """
        encoded, mask, state = self.encode(token_ids)
        batch_size = ops.shape(token_ids)[0]
        start = ops.full((batch_size, 1), start_token_id, dtype="int32")
        return start, (encoded, mask), state

    def decoding_step(self, token_ids, index, context, cache):
        """Advance the decoder by one token, Eq. (7.22) (no dropout).

        See `GenerativeModel.decoding_step`: (B, 1) target ids `y(t-1)`
        and the state list `s(t-1)` -> (B, V) logits of `y(t)` and `s(t)`.
        `index` is not read: the state carries the position. The step's
        (B, S) attention weights are those of the decoder layer's own step,
        `model.decoder.step`, which returns them; for a whole target,
        `attention_weights`.
        """
        encoded, mask = context
        embedded = self.target_embedding(token_ids[:, 0])  # (B, E)
        state, output, _ = self.decoder.step(cache, embedded, encoded, mask)
        return self.logits_dense(output), state

    def attention_weights(self, encoder_token_ids, decoder_token_ids):
        """(B, T, S) attention weights of a teacher-forced pass (Fig. 7.11).

        Rows sum to 1 over the real source tokens and are 0 on padding.
        """
        encoded, mask, state = self.encode(encoder_token_ids)
        ids = ops.convert_to_tensor(decoder_token_ids, dtype="int32")
        embedded = self.target_embedding(ids)  # (B, T, E)
        _, weights = self.decoder(
            embedded,
            encoded,
            state,
            encoder_outputs_mask=mask,
            return_attention_weights=True,
        )
        return weights


_ENCODER_LAYERS = (
    "source_embedding",
    "source_dropout",
    "encoder",
    "final_states",
    "bridge",
)


def _encode(layers, token_ids, mask=None, training=None):
    """Source ids -> (B, S, 2K) encoder outputs and the (B, H) state s(0).

    Shared by the functional graph (implicit mask) and `encode` (explicit
    mask), so both paths run the same layers in the same order.
    """
    x = layers["source_embedding"](token_ids)  # (B, S, E)
    x = layers["source_dropout"](x, training=training)
    mask_kwargs = {} if mask is None else {"mask": mask}
    # [v, h_f(S), h_r(1)] for a GRU; [v, h_f, c_f, h_r, c_r] for an LSTM.
    encoded, *states = layers["encoder"](x, training=training, **mask_kwargs)
    forward_hidden, reverse_hidden = states[0], states[len(states) // 2]
    final = layers["final_states"]([forward_hidden, reverse_hidden])  # (B, 2K)
    return encoded, layers["bridge"](final)  # (B, S, 2K), (B, H)


def build_rnn_translator(preset=None, **overrides):
    """Build the attention-based RNN translator of Fig. 7.10.

    Args:
        preset: a name in `zoo.presets.RNN_TRANSLATOR_PRESETS` (`"tiny"`,
            `"small"`), or None for the defaults.
        **overrides: any `RNNTranslator` argument; `vocabulary_size` sets
            both vocabularies.

    Returns:
        An `RNNTranslator`, a functional `keras.Model`.

    Example:
    >>> model = build_rnn_translator("tiny")
    >>> source = keras.ops.array([[5, 6, 7, 0]], "int32")  # 0 = padding.
    >>> ids = model.generate(source, max_new_tokens=4, end_token_id=None)
    >>> tuple(ids.shape)
    (1, 4)
    """
    config = resolve_config(
        init_defaults(RNNTranslator),
        presets_lib.RNN_TRANSLATOR_PRESETS,
        preset,
        overrides,
        "RNN translator",
    )
    if "vocabulary_size" in config:
        size = config.pop("vocabulary_size")
        config["source_vocabulary_size"] = size
        config["target_vocabulary_size"] = size
    return RNNTranslator(**config)

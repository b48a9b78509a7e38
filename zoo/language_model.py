"""The decoder-only causal Transformer language model.

Shape legend:
    B: batch size
    T: sequence length
    P: prompt length
    D: model width
    V: vocabulary size
"""

import keras
from keras import ops

from keras_seq.generation import (
    GenerativeModel,
    empty_self_attention_caches,
    resolve_max_new_tokens,
)
from keras_seq.generation.fast_step import torch_decoder_step
from keras_seq.generation.stack_spec import Stack
from keras_seq.layers import TokenAndPositionEmbedding, TransformerDecoderBlock
from keras_seq.layers.hashed_dropout import HashedDropout
from keras_seq.masks import check_token_ids
from keras_seq.text import UNSAMPLABLE_IDS
from keras_seq.validation import check_int_in, check_positive_int
from zoo import presets as presets_lib
from zoo.common import (
    TokenIdsModel,
    final_norm,
    hyperparameters,
    init_defaults,
    resolve_config,
)


@keras.saving.register_keras_serializable(package="zoo")
class LanguageModel(GenerativeModel, TokenIdsModel):
    """Causal decoder blocks (no cross attention) and next-token logits.

    The decoder-style use of a Transformer: position t attends only to
    positions up to t (masking, Eq. 7.27), so one forward pass predicts
    every next token of a text at once. `generate` and `beam_search` (from
    `GenerativeModel`) continue prompts one `decoding_step` at a time over
    preallocated self-attention caches; the prompt goes through the same
    cached step.

    Args:
        vocabulary_size: int, the number of token ids.
        num_layers: int, the number of decoder blocks.
        model_dim: int, width of every block.
        num_heads, key_dim, value_dim, ff_dim, dropout, attention_dropout,
            norm_first, attention_bias, layer_norm_epsilon: see
            `TransformerDecoderBlock`.
        max_length: int, the longest text, prompt and continuation
            together.
        positional: `"learned"` (Eq. 7.28) or `"sinusoidal"` (Eq. 7.29).
        tie_embeddings: bool, the output layer reuses the token table
            (Press & Wolf, 2017).
        **kwargs: `keras.Model` arguments (`name`, `trainable`).

    Inputs:
        token_ids: (B, T) int, 0 = padding.

    Outputs:
        (B, T, V) logits of the next token.
    """

    label_bound = "vocabulary_size"
    # Texts are sampled from it: no padding, [UNK], [START] or [MASK] in them.
    unsamplable_token_ids = UNSAMPLABLE_IDS

    def __init__(
        self,
        vocabulary_size=8000,
        num_layers=2,
        model_dim=128,
        num_heads=4,
        key_dim=None,
        value_dim=None,
        ff_dim=512,
        dropout=0.1,
        attention_dropout=None,
        max_length=128,
        positional="learned",
        norm_first=True,
        tie_embeddings=True,
        attention_bias=True,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        arguments = locals()
        config = {name: arguments[name] for name in hyperparameters(LanguageModel)}
        for name in ("vocabulary_size", "num_layers", "model_dim"):
            check_positive_int(config[name], name)
        # A start token (or a prompt's first) and one token after it.
        check_int_in(max_length, "max_length", 2, None, "", allow_none=False)

        # Layers.
        embedding = TokenAndPositionEmbedding(
            vocabulary_size,
            max_length,
            model_dim,
            positional=positional,
            scale_embeddings=True,
            name="token_embedding",
        )
        blocks = [
            TransformerDecoderBlock(
                num_heads=num_heads,
                ff_dim=ff_dim,
                key_dim=key_dim,
                value_dim=value_dim,
                dropout=dropout,
                attention_dropout=attention_dropout,
                norm_first=norm_first,
                attention_bias=attention_bias,
                layer_norm_epsilon=layer_norm_epsilon,
                name=f"decoder_block_{i}",
            )
            for i in range(num_layers)
        ]
        norm = final_norm(norm_first, layer_norm_epsilon, "decoder_norm")
        output_dense = None
        if not tie_embeddings:
            output_dense = keras.layers.Dense(vocabulary_size, name="logits")

        # Functional graph.
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        x = embedding(token_ids)  # (B, T, D)
        x = HashedDropout(dropout, name="embedding_dropout")(x)
        for block in blocks:
            x = block(x)
        x = norm(x)
        if tie_embeddings:
            logits = embedding(x, reverse=True)  # (B, T, V)
        else:
            logits = output_dense(x)  # (B, T, V)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # Config and handles for generation.
        for name, value in config.items():
            setattr(self, name, value)
        self.token_embedding = embedding
        self.decoder_blocks = blocks
        self.decoder_norm = norm
        self.output_dense = output_dense

    # Generation: the same layers on a second path, over caches.

    def empty_self_attention_caches(self, batch_size, length):
        """Zeroed self-attention caches, one (B, 2, N, L, H) per block.

        See `keras_seq.generation.empty_self_attention_caches`.
        """
        return empty_self_attention_caches(
            self.decoder_blocks, batch_size, length, self.compute_dtype
        )

    # `generate` and `beam_search` come from `GenerativeModel`; its hooks:

    def check_generate_input(self, token_ids, max_new_tokens=None):
        """Validate prompts; returns `max_new_tokens` or its default.

        A prompt and its continuation fit in `max_length` together; the
        default continuation fills it.
        """
        check_token_ids(token_ids, "token_ids", self.vocabulary_size)
        prompt_length = token_ids.shape[1]
        if prompt_length is None:  # Traced: the prompt has at least one token.
            limit = self.max_length - 1
        else:
            limit = self.max_length - prompt_length
        max_new_tokens = resolve_max_new_tokens(max_new_tokens, limit)
        if prompt_length == 0 or max_new_tokens > limit:
            raise ValueError(
                "`token_ids` must hold at least one token and the prompt "
                f"length plus `max_new_tokens` at most max_length="
                f"{self.max_length}; received {prompt_length} + "
                f"{max_new_tokens}."
            )
        return max_new_tokens

    def start_decoding(self, token_ids, max_new_tokens, start_token_id):
        """The prompt and zeroed caches: `(token_ids, (), cache)`.

        See `GenerativeModel.start_decoding`. A prompt needs no start
        token (`start_token_id` is ignored): it is the given part of the
        output, read through the cache before the first new token. The
        self-attention caches hold the prompt's P positions and
        `max_new_tokens` more; there is no context.
        """
        batch_size, prompt_length = ops.shape(token_ids)
        cache = self.empty_self_attention_caches(
            batch_size, prompt_length + max_new_tokens
        )
        return token_ids, (), cache

    def decoding_step(self, token_ids, index, context, cache):
        """One position over the self-attention caches.

        See `GenerativeModel.decoding_step`: (B, 1) ids at `index` -> (B,
        V) logits of the id at `index + 1` and the updated caches.
        """
        y = self.token_embedding(token_ids, start_index=index)  # (B, 1, D)
        updated = []
        for i, block in enumerate(self.decoder_blocks):
            y, self_cache, _ = block(
                y,
                self_attention_cache=cache[i],
                self_attention_cache_update_index=index,
            )
            updated.append(self_cache)
        y = self.decoder_norm(y)
        if self.tie_embeddings:
            logits = self.token_embedding(y, reverse=True)  # (B, 1, V)
        else:
            logits = self.output_dense(y)  # (B, 1, V)
        return logits[:, 0, :], tuple(updated)

    def decoder_stack(self):
        """The layers as a `keras_seq.generation.stack_spec.Stack`, what the
        fast paths (PyTorch's step, the CTranslate2 writer) read; no output
        layer when it is tied to the token table."""
        return Stack(
            self.token_embedding,
            tuple(self.decoder_blocks),
            self.decoder_norm,
            None if self.tie_embeddings else self.output_dense,
        )

    def fast_decoding_step(self):
        """`decoding_step` in plain PyTorch (`keras_seq.generation.fast_step`)."""
        step = torch_decoder_step(self.decoder_stack())
        if step is None:
            return None
        return lambda token_ids, index, context, cache: step(token_ids, index, cache)

    # `score(token_ids)` reads the first id as given, the rest as output.
    continues_input = True


def build_language_model(preset=None, **overrides):
    """Build a decoder-only causal Transformer language model.

    Args:
        preset: a name in `zoo.presets.LANGUAGE_MODEL_PRESETS` (`"tiny"`,
            `"small"`), or None for the defaults.
        **overrides: any `LanguageModel` argument, or `name`.

    Returns:
        A `LanguageModel`, a functional `keras.Model`.

    Example:
    >>> model = build_language_model("tiny")
    >>> model.input.name
    'token_ids'
    """
    config = resolve_config(
        init_defaults(LanguageModel),
        presets_lib.LANGUAGE_MODEL_PRESETS,
        preset,
        overrides,
        "language model",
    )
    return LanguageModel(**config)

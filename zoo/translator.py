"""The encoder-decoder Transformer, Fig. 7.16 and Eq. (7.31)–(7.34).

Shape legend:
    B: batch size
    S: source length
    T: target length
    D: model width
    V: target vocabulary size
"""

import keras
from keras import ops

from keras_seq import generation
from keras_seq.layers import (
    TokenAndPositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from keras_seq.layers.hashed_dropout import HashedDropout
from keras_seq.validation import check_positive_int
from zoo import presets as presets_lib
from zoo.common import (
    TokenIdsModel,
    final_norm,
    resolve_config,
)

DEFAULTS = {
    "source_vocabulary_size": 8000,
    "target_vocabulary_size": 8000,
    "num_encoder_layers": 2,
    "num_decoder_layers": 2,
    "model_dim": 128,
    "num_heads": 4,
    "key_dim": None,
    "value_dim": None,
    "ff_dim": 512,
    "dropout": 0.1,
    "max_length": 64,
    "positional": "sinusoidal",
    "norm_first": False,
    "tie_embeddings": False,
    "attention_bias": True,
    "scale_embeddings": True,
    "layer_norm_epsilon": 1e-5,
}


@keras.saving.register_keras_serializable(package="zoo")
class Translator(TokenIdsModel):
    """An encoder-decoder Transformer that maps source ids to target logits.

    The encoder embeds the source (token plus position, Eq. 7.30) and runs
    `num_encoder_layers` blocks of Fig. 7.15 (a); the decoder embeds the
    target shifted right and runs `num_decoder_layers` blocks of Fig. 7.15
    (b), whose cross attention reads the encoder output `z*` with the
    source padding mask; a linear layer gives logits over the target
    vocabulary. Trained with teacher forcing, all target positions at once
    (Sec. 7.5). Cross attention is why this is a functional graph and not a
    `keras.Sequential` stack: the decoder blocks take two inputs.

    Args:
        source_vocabulary_size, target_vocabulary_size: vocabulary sizes.
            With `tie_embeddings` they must be equal (a shared vocabulary).
        num_encoder_layers, num_decoder_layers: block counts.
        model_dim: int, width p of every block.
        num_heads, key_dim, value_dim, ff_dim, dropout, norm_first,
            attention_bias, layer_norm_epsilon: see `TransformerBlock`.
        max_length: int, longest source or target sequence.
        positional: `"sinusoidal"` (Eq. 7.29) or `"learned"` (Eq. 7.28).
        tie_embeddings: bool, share one token table between the source, the
            target and the output layer (Press & Wolf, 2017).
        scale_embeddings: bool, scale token embeddings by sqrt(model_dim).

    Inputs:
        encoder_token_ids: (B, S) int, 0 = padding.
        decoder_token_ids: (B, T) int, starting with the start token.

    Outputs:
        (B, T, V) logits for the next target token at every position.
    """

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        num_encoder_layers,
        num_decoder_layers,
        model_dim,
        num_heads,
        ff_dim,
        key_dim=None,
        value_dim=None,
        dropout=0.1,
        max_length=64,
        positional="sinusoidal",
        norm_first=False,
        tie_embeddings=False,
        attention_bias=True,
        scale_embeddings=True,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        for name in (
            "source_vocabulary_size",
            "target_vocabulary_size",
            "num_encoder_layers",
            "num_decoder_layers",
            "model_dim",
        ):
            check_positive_int(locals()[name], name)
        if tie_embeddings and source_vocabulary_size != target_vocabulary_size:
            raise ValueError(
                "`tie_embeddings=True` shares one vocabulary, so "
                "`source_vocabulary_size` must equal `target_vocabulary_size`; "
                f"received {source_vocabulary_size} and {target_vocabulary_size}."
            )
        block_kwargs = {
            "num_heads": num_heads,
            "ff_dim": ff_dim,
            "key_dim": key_dim,
            "value_dim": value_dim,
            "dropout": dropout,
            "norm_first": norm_first,
            "attention_bias": attention_bias,
            "layer_norm_epsilon": layer_norm_epsilon,
        }

        # Layers.
        def embedding(vocabulary_size, name):
            return TokenAndPositionEmbedding(
                vocabulary_size,
                max_length,
                model_dim,
                positional=positional,
                scale_embeddings=scale_embeddings,
                name=name,
            )

        source_embedding = embedding(source_vocabulary_size, "source_embedding")
        target_embedding = (
            source_embedding
            if tie_embeddings
            else embedding(target_vocabulary_size, "target_embedding")
        )
        encoder_blocks = [
            TransformerEncoderBlock(**block_kwargs, name=f"encoder_block_{i}")
            for i in range(num_encoder_layers)
        ]
        decoder_blocks = [
            TransformerDecoderBlock(**block_kwargs, name=f"decoder_block_{i}")
            for i in range(num_decoder_layers)
        ]
        encoder_norm = final_norm(norm_first, layer_norm_epsilon, "encoder_norm")
        decoder_norm = final_norm(norm_first, layer_norm_epsilon, "decoder_norm")
        output_dense = None
        if not tie_embeddings:
            output_dense = keras.layers.Dense(target_vocabulary_size, name="logits")

        # Functional graph.
        encoder_ids = keras.Input((None,), dtype="int32", name="encoder_token_ids")
        decoder_ids = keras.Input((None,), dtype="int32", name="decoder_token_ids")
        x = source_embedding(encoder_ids)  # (B, S, D), carries the mask
        x = HashedDropout(dropout, name="source_dropout")(x)
        for block in encoder_blocks:
            x = block(x)
        encoded = encoder_norm(x)
        y = target_embedding(decoder_ids)  # (B, T, D)
        y = HashedDropout(dropout, name="target_dropout")(y)
        for block in decoder_blocks:
            y = block(y, encoded)
        y = decoder_norm(y)
        if tie_embeddings:
            logits = target_embedding(y, reverse=True)  # (B, T, V)
        else:
            logits = output_dense(y)  # (B, T, V)
        super().__init__(
            inputs={"encoder_token_ids": encoder_ids, "decoder_token_ids": decoder_ids},
            outputs=logits,
            **kwargs,
        )

        # Config and handles for generation.
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.num_encoder_layers = num_encoder_layers
        self.num_decoder_layers = num_decoder_layers
        self.model_dim = model_dim
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.max_length = max_length
        self.positional = positional
        self.norm_first = norm_first
        self.tie_embeddings = tie_embeddings
        self.attention_bias = attention_bias
        self.scale_embeddings = scale_embeddings
        self.layer_norm_epsilon = layer_norm_epsilon
        self.source_embedding = source_embedding
        self.target_embedding = target_embedding
        self.encoder_blocks = encoder_blocks
        self.decoder_blocks = decoder_blocks
        self.encoder_norm = encoder_norm
        self.decoder_norm = decoder_norm
        self.output_dense = output_dense

    # Generation: the same layers on a second path, over caches.

    def encode(self, encoder_token_ids, training=False):
        """Source ids (B, S) -> encoder output z* (B, S, D) and its mask."""
        source_mask = ops.not_equal(encoder_token_ids, 0)  # (B, S)
        x = self.source_embedding(encoder_token_ids)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=source_mask, training=training)
        return self.encoder_norm(x), source_mask

    def _logits(self, y):
        if self.tie_embeddings:
            return self.target_embedding(y, reverse=True)
        return self.output_dense(y)

    def cross_attention_caches(self, encoded):
        """Keys and values of z* for every decoder block, computed once.

        Returns:
            A tuple with one (B, 2, N, S, H) cache per decoder block.
        """
        return tuple(
            b.compute_cross_attention_cache(encoded) for b in self.decoder_blocks
        )

    def empty_self_attention_caches(self, batch_size, length):
        """Zeroed self-attention caches, one (B, 2, N, L, H) per block.

        A tuple of separate tensors, not one stacked tensor: a compiled
        decoding loop then updates each in place, where slicing a block's
        cache out of a stack and stacking the results again copied every
        cache at every step.
        """
        attention = self.decoder_blocks[0]._self_attention
        shape = attention.cache_shape(batch_size, length)
        return tuple(
            ops.zeros(shape, dtype=self.compute_dtype)
            for _ in range(self.num_decoder_layers)
        )

    def decode_step(
        self, token_ids, index, encoded, source_mask, self_caches, cross_caches
    ):
        """One decoder position over the caches (Eq. 7.34).

        Args:
            token_ids: (B, 1) the previous output token.
            index: its position in the target.
            encoded, source_mask: from `encode`.
            self_caches, cross_caches: tuples of per-block caches.

        Returns:
            (B, V) logits of the next token and the updated self caches.
        """
        y = self.target_embedding(token_ids, start_index=index)  # (B, 1, D)
        updated = []
        for i, block in enumerate(self.decoder_blocks):
            y, cache, _ = block(
                y,
                encoded,
                encoder_padding_mask=source_mask,
                self_attention_cache=self_caches[i],
                self_attention_cache_update_index=index,
                cross_attention_cache=cross_caches[i],
            )
            updated.append(cache)
        logits = self._logits(self.decoder_norm(y))  # (B, 1, V)
        return logits[:, 0, :], tuple(updated)

    def cross_attention_weights(self, encoder_token_ids, decoder_token_ids):
        """Cross-attention weights of the last decoder block, as in Fig. 7.11.

        Returns:
            (B, N, T, S) weights: row t says where output t looked in the
            source.
        """
        encoded, source_mask = self.encode(encoder_token_ids)
        target_mask = ops.not_equal(decoder_token_ids, 0)
        y = self.target_embedding(decoder_token_ids)
        for block in self.decoder_blocks[:-1]:
            y = block(
                y,
                encoded,
                decoder_padding_mask=target_mask,
                encoder_padding_mask=source_mask,
            )
        _, weights = self.decoder_blocks[-1](
            y,
            encoded,
            decoder_padding_mask=target_mask,
            encoder_padding_mask=source_mask,
            return_attention_scores=True,
        )
        return weights

    def generate(
        self,
        token_ids,
        max_new_tokens=None,
        strategy="greedy",
        start_token_id=2,
        end_token_id=3,
        beam_width=4,
        length_penalty=0.6,
        temperature=1.0,
        top_k=None,
        top_p=None,
        seed=None,
    ):
        """Translate source ids with a compiled loop over the KV cache.

        Args:
            token_ids: (B, S) int source ids, 0 = padding.
            max_new_tokens: int, the longest output; defaults to
                `max_length - 1`.
            strategy: `"greedy"`, `"sample"` (temperature, top-k, top-p) or
                `"beam"` (`beam_width`, `length_penalty`; the best of
                `beam_search`).
            start_token_id, end_token_id: the target's special tokens;
                `end_token_id=None` decodes exactly `max_new_tokens` tokens
                (greedy and sampling).

        Returns:
            (B, max_new_tokens) int32 ids; each row ends with its end token
            followed by zeros.
        """
        max_new_tokens = self._check_generate_input(token_ids, max_new_tokens)
        key = (
            strategy,
            max_new_tokens,
            start_token_id,
            end_token_id,
            temperature,
            top_k,
            top_p,
            seed,
        )

        if strategy == "beam":
            ids, _ = self.beam_search(
                token_ids,
                max_new_tokens,
                beam_width,
                length_penalty,
                start_token_id=start_token_id,
                end_token_id=end_token_id,
            )
            return ids[:, 0]

        def make_fn():
            sampler = generation.make_sampler(
                strategy, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed
            )
            return (
                lambda source: self._generate(
                    source, sampler, max_new_tokens, start_token_id, end_token_id
                ),
                sampler.variables,
            )

        source = ops.convert_to_tensor(token_ids, dtype="int32")
        return generation.run_compiled(self, key, make_fn, source)

    def beam_search(
        self,
        token_ids,
        max_new_tokens=None,
        beam_width=4,
        length_penalty=0.6,
        num_return=1,
        start_token_id=2,
        end_token_id=3,
    ):
        """Beam search over the KV cache, returning n-best lists.

        The encoder runs once per source; its output and cross-attention
        caches are tiled per beam and the self-attention caches follow
        their beams at every step (`keras_seq.generation.beam_search`).

        Returns:
            `(ids, scores)`: (B, num_return, max_new_tokens) int32 ids,
            best first, and their (B, num_return) log-probabilities
            divided by the length penalty `((5 + n) / 6) ** alpha`.
        """
        max_new_tokens = self._check_generate_input(token_ids, max_new_tokens)
        check_positive_int(beam_width, "beam_width")
        key = ("beam", max_new_tokens, beam_width, length_penalty, num_return)
        key += (start_token_id, end_token_id)

        def make_fn():
            def search(source):
                return self._beam_search(
                    source,
                    max_new_tokens,
                    beam_width,
                    length_penalty,
                    num_return,
                    start_token_id,
                    end_token_id,
                )

            return search

        source = ops.convert_to_tensor(token_ids, dtype="int32")
        return generation.run_compiled(self, key, make_fn, source)

    def _beam_search(
        self,
        source,
        max_new_tokens,
        beam_width,
        length_penalty,
        num_return,
        start_token_id,
        end_token_id,
    ):
        batch_size = ops.shape(source)[0]
        encoded, source_mask = self.encode(source)
        encoded = generation.tile_beams(encoded, beam_width)
        source_mask = generation.tile_beams(source_mask, beam_width)
        cross_caches = self.cross_attention_caches(encoded)
        self_caches = self.empty_self_attention_caches(
            batch_size * beam_width, max_new_tokens
        )

        def step(previous, index, caches):
            return self.decode_step(
                previous, index, encoded, source_mask, caches, cross_caches
            )

        def reorder(caches, rows):
            # Each (B*K, 2, N, M, H).
            return tuple(ops.take(cache, rows, axis=0) for cache in caches)

        return generation.beam_search(
            step,
            reorder,
            self_caches,
            batch_size,
            max_new_tokens,
            start_token_id,
            end_token_id,
            beam_width=beam_width,
            length_penalty=length_penalty,
            num_return=num_return,
        )

    def _check_generate_input(self, token_ids, max_new_tokens):
        """Validate source ids; returns `max_new_tokens` or its default."""
        from keras_seq.masks import check_token_ids

        check_token_ids(token_ids, "token_ids", self.source_vocabulary_size)
        if token_ids.shape[1] is not None and token_ids.shape[1] > self.max_length:
            raise ValueError(
                f"`token_ids` has length {token_ids.shape[1]}; the model's "
                f"max_length is {self.max_length}."
            )
        if max_new_tokens is None:
            max_new_tokens = self.max_length - 1
        check_positive_int(max_new_tokens, "max_new_tokens")
        if not 0 < max_new_tokens < self.max_length:
            raise ValueError(
                f"`max_new_tokens` must be in [1, {self.max_length - 1}] "
                f"(max_length - 1); received {max_new_tokens}."
            )
        return max_new_tokens

    def _generate(self, source, sampler, max_new_tokens, start_token_id, end_token_id):
        encoded, source_mask = self.encode(source)
        cross_caches = self.cross_attention_caches(encoded)
        batch_size = ops.shape(source)[0]
        self_caches = self.empty_self_attention_caches(batch_size, max_new_tokens)
        buffer, given = generation.start_buffer(
            batch_size, max_new_tokens, start_token_id
        )

        def next_logits(buffer, caches, index):
            previous = ops.slice(buffer, [0, index - 1], [batch_size, 1])  # (B, 1)
            logits, caches = self.decode_step(
                previous, index - 1, encoded, source_mask, caches, cross_caches
            )
            return logits, None, caches

        buffer = sampler(
            next_logits,
            buffer,
            cache=self_caches,
            index=1,
            mask=given,
            # Without an end token the loop runs `max_new_tokens` steps and
            # skips the per-step check of the whole buffer.
            stop_token_ids=None if end_token_id is None else [end_token_id],
            model=self,  # on JAX, its weights are read through the loop
        )
        if end_token_id is None:
            return buffer[:, 1:]
        return generation.zero_after_end(buffer[:, 1:], end_token_id)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "source_vocabulary_size": self.source_vocabulary_size,
            "target_vocabulary_size": self.target_vocabulary_size,
            "num_encoder_layers": self.num_encoder_layers,
            "num_decoder_layers": self.num_decoder_layers,
            "model_dim": self.model_dim,
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "max_length": self.max_length,
            "positional": self.positional,
            "norm_first": self.norm_first,
            "tie_embeddings": self.tie_embeddings,
            "attention_bias": self.attention_bias,
            "scale_embeddings": self.scale_embeddings,
            "layer_norm_epsilon": self.layer_norm_epsilon,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def build_translator(preset=None, **overrides):
    """Build an encoder-decoder Transformer translator.

    Args:
        preset: name of a preset in `zoo.presets.TRANSLATOR_PRESETS`
            (`"tiny"`, `"small"`, `"book"`, `"base"`, `"big"`), or None for
            the defaults.
        **overrides: any `Translator` argument; `vocabulary_size` sets both
            vocabularies.

    Returns:
        A `Translator`, a functional `keras.Model`.

    Example:
    >>> model = build_translator("tiny")
    >>> sorted(model.input)
    ['decoder_token_ids', 'encoder_token_ids']
    """
    config = resolve_config(
        DEFAULTS, presets_lib.TRANSLATOR_PRESETS, preset, overrides, "translator"
    )
    if "vocabulary_size" in config:
        size = config.pop("vocabulary_size")
        config["source_vocabulary_size"] = size
        config["target_vocabulary_size"] = size
    return Translator(**config)

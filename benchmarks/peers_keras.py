"""The Keras peers: keras-hub's blocks and the classic keras.io recipe.

Both are wired into the same translator as ours (Fig. 7.16): token and
position embeddings, `num_encoder_layers` encoder blocks, `num_decoder_layers`
decoder blocks whose cross attention reads the encoder output under the
*source* padding mask, and a dense output layer over the target vocabulary.
Sizes, dropout rate and batches come from `benchmarks/config.py`.

- keras-hub: `keras_hub.layers.TokenAndPositionEmbedding`,
  `TransformerEncoder` and `TransformerDecoder`, as the keras.io KerasHub
  translation example wires them; cached decoding goes through the
  decoder's own self- and cross-attention caches and keras-hub's samplers,
  the way keras-hub's BART generates.
- keras.io recipe: the hand-wired blocks of the classic "sequence-to-sequence
  Transformer" example (`keras.layers.MultiHeadAttention`, a two-layer
  `Sequential` feed-forward network, a learned position table), with two
  changes so that it is the same model: heads of width D / N (the example
  gives every head the full width) and dropout on the attention weights
  and sublayer outputs. It has no cache: it decodes by running the decoder
  again over the whole target at every step.

Shape legend:
    B: batch size
    S: source length
    T: target length
    D: model width
    N: heads
    H: head width
    L: decoder layers
    M: new tokens (cache length)
"""

import keras
from keras import ops

from benchmarks.config import START_ID

# keras-hub.


def build_hub_translator(config):
    """The translator wired from keras-hub's layers; a functional model."""
    import keras_hub  # Lazy: memory.py's baseline leaves out each peer's library.

    d, n, f, rate = (config[k] for k in ("model_dim", "num_heads", "ff_dim", "dropout"))

    def embedding(vocabulary_size, name):
        return keras_hub.layers.TokenAndPositionEmbedding(
            vocabulary_size, config["max_length"], d, mask_zero=True, name=name
        )

    source_embedding = embedding(config["source_vocabulary_size"], "source_embedding")
    target_embedding = embedding(config["target_vocabulary_size"], "target_embedding")
    encoders = [
        keras_hub.layers.TransformerEncoder(f, n, dropout=rate, name=f"encoder_{i}")
        for i in range(config["num_encoder_layers"])
    ]
    decoders = [
        keras_hub.layers.TransformerDecoder(f, n, dropout=rate, name=f"decoder_{i}")
        for i in range(config["num_decoder_layers"])
    ]
    output_dense = keras.layers.Dense(config["target_vocabulary_size"], name="logits")

    source = keras.Input((None,), dtype="int32", name="encoder_token_ids")
    target = keras.Input((None,), dtype="int32", name="decoder_token_ids")
    source_mask = ops.not_equal(source, 0)
    x = source_embedding(source)
    for encoder in encoders:
        x = encoder(x, padding_mask=source_mask)
    y = target_embedding(target)
    for decoder in decoders:
        y = decoder(y, x, encoder_padding_mask=source_mask)
    model = keras.Model(
        {"encoder_token_ids": source, "decoder_token_ids": target},
        output_dense(y),
        name="keras_hub_translator",
    )
    model.parts = {
        "source_embedding": source_embedding,
        "target_embedding": target_embedding,
        "encoders": encoders,
        "decoders": decoders,
        "output_dense": output_dense,
    }
    return model


def hub_encode(model, source):
    """Source ids (B, S) -> encoder output (B, S, D) and its padding mask."""
    parts = model.parts
    mask = ops.not_equal(source, 0)  # (B, S)
    x = parts["source_embedding"](source)
    for encoder in parts["encoders"]:
        x = encoder(x, padding_mask=mask)
    return x, mask


def hub_decode(model, target, encoded, source_mask):
    """Full decoder pass: target ids (B, T) -> logits (B, T, V)."""
    parts = model.parts
    y = parts["target_embedding"](target)
    for decoder in parts["decoders"]:
        y = decoder(y, encoded, encoder_padding_mask=source_mask)
    return parts["output_dense"](y)


def _hub_step(model, token, index, encoded, mask, self_caches, cross_caches, fill):
    """One cached decoder position with keras-hub's caches.

    Caches are stacked batch first, (B, L, 2, M|S, N, H), so that keras-hub's
    beam sampler can tile and reorder them. With `fill` the cross-attention
    caches are computed (keras-hub writes them at index 0).
    """
    parts = model.parts
    y = parts["target_embedding"](token, start_index=index)  # (B, 1, D)
    new_self, new_cross = [], []
    for i, decoder in enumerate(parts["decoders"]):
        y, self_cache, cross_cache = decoder(
            y,
            encoded,
            encoder_padding_mask=mask,
            self_attention_cache=self_caches[:, i],
            self_attention_cache_update_index=index,
            cross_attention_cache=cross_caches[:, i],
            cross_attention_cache_update_index=0 if fill else None,
        )
        new_self.append(self_cache)
        new_cross.append(cross_cache)
    logits = parts["output_dense"](y)[:, 0, :]  # (B, V)
    return logits, ops.stack(new_self, axis=1), ops.stack(new_cross, axis=1)


def _hub_prefill(model, source, new_tokens):
    """Encode, and run the start token to fill the cross-attention caches."""
    encoded, mask = hub_encode(model, source)
    batch = ops.shape(source)[0]
    heads = model.parts["decoders"][0].num_heads
    width = model.parts["output_dense"].kernel.shape[0] // heads  # H = D / N
    layers = len(model.parts["decoders"])
    self_caches = ops.zeros((batch, layers, 2, new_tokens, heads, width))
    cross_caches = ops.zeros((batch, layers, 2, ops.shape(source)[1], heads, width))
    start = ops.full((batch, 1), START_ID, "int32")
    logits, self_caches, cross_caches = _hub_step(
        model, start, 0, encoded, mask, self_caches, cross_caches, fill=True
    )
    return encoded, mask, logits, self_caches, cross_caches


def hub_greedy(model, source, new_tokens):
    """Cached greedy decoding with keras-hub's caches and `GreedySampler`.

    The first position runs outside the sampler to fill the cross-attention
    caches, and its token is handed to the sampler as given, so the decoder
    runs exactly `new_tokens` positions, as ours does.
    """
    import keras_hub  # Lazy: memory.py's baseline leaves out each peer's library.

    encoded, mask, logits, self_caches, cross_caches = _hub_prefill(
        model, source, new_tokens
    )
    batch = ops.shape(source)[0]
    first = ops.cast(ops.argmax(logits, axis=-1), "int32")[:, None]  # (B, 1)
    buffer = ops.concatenate(
        [
            ops.full((batch, 1), START_ID, "int32"),
            first,
            ops.zeros((batch, new_tokens - 1), "int32"),
        ],
        axis=1,
    )  # (B, 1 + M)
    given = ops.arange(new_tokens + 1)[None, :] < 2  # (1, 1 + M)
    given = ops.broadcast_to(given, (batch, new_tokens + 1))

    def next_logits(buffer, caches, index):
        previous = ops.slice(buffer, [0, index - 1], [batch, 1])  # (B, 1)
        logits, caches, _ = _hub_step(
            model, previous, index - 1, encoded, mask, caches, cross_caches, False
        )
        return logits, None, caches

    sampler = keras_hub.samplers.GreedySampler()
    buffer = sampler(
        next_logits, buffer, cache=self_caches, index=2, mask=given, model=model
    )
    return buffer[:, 1:]


def hub_beam(model, source, new_tokens, beam_width=4):
    """Beam search with keras-hub's `BeamSampler` over keras-hub's caches."""
    import keras_hub  # Lazy: memory.py's baseline leaves out each peer's library.

    encoded, mask, _, self_caches, cross_caches = _hub_prefill(
        model, source, new_tokens
    )
    batch = ops.shape(source)[0]
    # The sampler tiles the cache it carries; what the step reads besides
    # is tiled here.
    encoded, mask, cross_caches = (
        ops.repeat(x, beam_width, axis=0) for x in (encoded, mask, cross_caches)
    )
    buffer = ops.concatenate(
        [
            ops.full((batch, 1), START_ID, "int32"),
            ops.zeros((batch, new_tokens), "int32"),
        ],
        axis=1,
    )

    def next_logits(buffer, caches, index):
        rows = ops.shape(buffer)[0]
        previous = ops.slice(buffer, [0, index - 1], [rows, 1])  # (B*K, 1)
        logits, caches, _ = _hub_step(
            model, previous, index - 1, encoded, mask, caches, cross_caches, False
        )
        return logits, None, caches

    sampler = keras_hub.samplers.BeamSampler(num_beams=beam_width)
    buffer = sampler(next_logits, buffer, cache=self_caches, index=1, model=model)
    return buffer[:, 1:]


# The keras.io recipe.


class RecipePositionalEmbedding(keras.layers.Layer):
    """Token embedding plus a learned position table, masking id 0."""

    def __init__(self, sequence_length, vocabulary_size, model_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_embeddings = keras.layers.Embedding(vocabulary_size, model_dim)
        self.position_embeddings = keras.layers.Embedding(sequence_length, model_dim)

    def call(self, inputs):
        positions = ops.arange(ops.shape(inputs)[-1])
        return self.token_embeddings(inputs) + self.position_embeddings(positions)

    def compute_mask(self, inputs, mask=None):
        return ops.not_equal(inputs, 0)


class RecipeEncoder(keras.layers.Layer):
    """The recipe's encoder block: attention, add & norm, dense, add & norm."""

    def __init__(self, model_dim, ff_dim, num_heads, dropout, **kwargs):
        super().__init__(**kwargs)
        self.attention = keras.layers.MultiHeadAttention(
            num_heads, key_dim=model_dim // num_heads, dropout=dropout
        )
        self.dense_proj = keras.Sequential(
            [
                keras.layers.Dense(ff_dim, activation="relu"),
                keras.layers.Dense(model_dim),
            ]
        )
        self.dropout_1 = keras.layers.Dropout(dropout)
        self.dropout_2 = keras.layers.Dropout(dropout)
        self.layernorm_1 = keras.layers.LayerNormalization()
        self.layernorm_2 = keras.layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None, training=None):
        padding = None if mask is None else mask[:, None, :]  # (B, 1, S)
        attended = self.attention(inputs, inputs, attention_mask=padding)
        x = self.layernorm_1(inputs + self.dropout_1(attended, training=training))
        projected = self.dropout_2(self.dense_proj(x), training=training)
        return self.layernorm_2(x + projected)


class RecipeDecoder(keras.layers.Layer):
    """The recipe's decoder block, its cross attention under the source mask."""

    def __init__(self, model_dim, ff_dim, num_heads, dropout, **kwargs):
        super().__init__(**kwargs)

        def attention():
            return keras.layers.MultiHeadAttention(
                num_heads, key_dim=model_dim // num_heads, dropout=dropout
            )

        self.attention_1, self.attention_2 = attention(), attention()
        self.dense_proj = keras.Sequential(
            [
                keras.layers.Dense(ff_dim, activation="relu"),
                keras.layers.Dense(model_dim),
            ]
        )
        self.dropouts = [keras.layers.Dropout(dropout) for _ in range(3)]
        self.norms = [keras.layers.LayerNormalization() for _ in range(3)]
        self.supports_masking = True

    def call(self, inputs, encoder_outputs, source_mask, training=None):
        length = ops.shape(inputs)[1]
        causal = ops.tril(ops.ones((length, length), "bool"))[None]  # (1, T, T)
        attended = self.attention_1(inputs, inputs, attention_mask=causal)
        x = self.norms[0](inputs + self.dropouts[0](attended, training=training))
        cross_mask = source_mask[:, None, :]  # (B, 1, S)
        attended = self.attention_2(
            x, encoder_outputs, attention_mask=cross_mask, training=training
        )
        x = self.norms[1](x + self.dropouts[1](attended, training=training))
        projected = self.dropouts[2](self.dense_proj(x), training=training)
        return self.norms[2](x + projected)


def build_recipe_translator(config):
    """The keras.io recipe's translator; a functional model."""
    d, n, f, rate = (config[k] for k in ("model_dim", "num_heads", "ff_dim", "dropout"))
    source_embedding = RecipePositionalEmbedding(
        config["max_length"], config["source_vocabulary_size"], d
    )
    target_embedding = RecipePositionalEmbedding(
        config["max_length"], config["target_vocabulary_size"], d
    )
    encoders = [
        RecipeEncoder(d, f, n, rate) for _ in range(config["num_encoder_layers"])
    ]
    decoders = [
        RecipeDecoder(d, f, n, rate) for _ in range(config["num_decoder_layers"])
    ]
    output_dense = keras.layers.Dense(config["target_vocabulary_size"])

    source = keras.Input((None,), dtype="int32", name="encoder_token_ids")
    target = keras.Input((None,), dtype="int32", name="decoder_token_ids")
    source_mask = ops.not_equal(source, 0)
    x = source_embedding(source)
    for encoder in encoders:
        x = encoder(x)
    y = target_embedding(target)
    for decoder in decoders:
        y = decoder(y, x, source_mask)
    model = keras.Model(
        {"encoder_token_ids": source, "decoder_token_ids": target},
        output_dense(y),
        name="keras_io_recipe_translator",
    )
    model.parts = {
        "source_embedding": source_embedding,
        "target_embedding": target_embedding,
        "encoders": encoders,
        "decoders": decoders,
        "output_dense": output_dense,
    }
    return model


def recipe_encode(model, source):
    mask = ops.not_equal(source, 0)
    x = model.parts["source_embedding"](source)
    for encoder in model.parts["encoders"]:
        x = encoder(x, mask=mask)
    return x, mask


def recipe_decode(model, target, encoded, source_mask):
    y = model.parts["target_embedding"](target)
    for decoder in model.parts["decoders"]:
        y = decoder(y, encoded, source_mask)
    return model.parts["output_dense"](y)


# Decoding by recomputation, shared by every Keras implementation.


def recompute_greedy(encode, decode, source, new_tokens):
    """Greedy decoding that reruns the whole decoder at every step.

    `encode(source) -> (encoded, mask)` runs once; `decode(target, encoded,
    mask) -> (B, T, V)` runs over the full (B, 1 + M) buffer at each of the
    M steps and the logits of the newest position are read, which is how
    a model without a cache generates (the keras.io recipe's loop), here
    inside one compiled loop.
    """
    import keras_hub  # Lazy: memory.py's baseline leaves out each peer's library.

    from keras_seq import generation  # Lazy, as keras_hub above.

    encoded, mask = encode(source)
    batch = ops.shape(source)[0]
    buffer, given = generation.start_buffer(batch, new_tokens, START_ID)

    def next_logits(buffer, cache, index):
        logits = decode(buffer, encoded, mask)  # (B, 1 + M, V)
        return ops.take(logits, index - 1, axis=1), None, cache

    sampler = keras_hub.samplers.GreedySampler()
    buffer = sampler(next_logits, buffer, index=1, mask=given)
    return buffer[:, 1:]

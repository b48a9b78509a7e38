"""The decoder-only causal Transformer language model.

Shape legend:
    B: batch size
    T: sequence length
    D: model width
    V: vocabulary size
"""

import keras
from keras import ops

from keras_seq import generation
from keras_seq.layers import TokenAndPositionEmbedding, TransformerDecoderBlock
from keras_seq.layers.hashed_dropout import HashedDropout
from keras_seq.validation import check_positive_int
from zoo import presets as presets_lib
from zoo.common import final_norm, resolve_config
from zoo.encoders import _ConfigModel

DEFAULTS = {
    "vocabulary_size": 8000,
    "num_layers": 2,
    "model_dim": 128,
    "num_heads": 4,
    "key_dim": None,
    "value_dim": None,
    "ff_dim": 512,
    "dropout": 0.1,
    "max_length": 128,
    "positional": "learned",
    "norm_first": True,
    "tie_embeddings": True,
    "attention_bias": True,
    "layer_norm_epsilon": 1e-5,
}


@keras.saving.register_keras_serializable(package="zoo")
class LanguageModel(_ConfigModel):
    """Causal decoder blocks (no cross attention) and next-token logits.

    The decoder-style use of a Transformer: position t attends only to
    positions up to t (masking, Eq. 7.27), so one forward pass predicts
    every next token of a text at once.

    Inputs:
        token_ids: (B, T) int, 0 = padding.

    Outputs:
        (B, T, V) logits of the next token.
    """

    def __init__(self, **config):
        config = {**DEFAULTS, **config}
        name = config.pop("name", None)
        for key in ("vocabulary_size", "num_layers", "model_dim"):
            check_positive_int(config[key], key)
        embedding = TokenAndPositionEmbedding(
            config["vocabulary_size"],
            config["max_length"],
            config["model_dim"],
            positional=config["positional"],
            scale_embeddings=True,
            name="token_embedding",
        )
        blocks = [
            TransformerDecoderBlock(
                num_heads=config["num_heads"],
                ff_dim=config["ff_dim"],
                key_dim=config["key_dim"],
                value_dim=config["value_dim"],
                dropout=config["dropout"],
                norm_first=config["norm_first"],
                attention_bias=config["attention_bias"],
                layer_norm_epsilon=config["layer_norm_epsilon"],
                name=f"decoder_block_{i}",
            )
            for i in range(config["num_layers"])
        ]
        norm = final_norm(
            config["norm_first"], config["layer_norm_epsilon"], "decoder_norm"
        )

        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        x = embedding(token_ids)  # (B, T, D)
        x = HashedDropout(config["dropout"], name="embedding_dropout")(x)
        for block in blocks:
            x = block(x)
        x = norm(x)
        if config["tie_embeddings"]:
            logits = embedding(x, reverse=True)  # (B, T, V)
        else:
            logits = keras.layers.Dense(config["vocabulary_size"], name="logits")(x)
        super().__init__(inputs=token_ids, outputs=logits, name=name)
        self._store_config(config)
        self.token_embedding = embedding
        self.decoder_blocks = blocks
        self.decoder_norm = norm

    def decode_step(self, token_ids, index, caches):
        """One position over the self-attention caches.

        Args:
            token_ids: (B, 1) the token at position `index`.
            index: its position.
            caches: (num_layers, B, 2, N, L, H) stacked caches.

        Returns:
            (B, V) logits of the token at `index + 1` and the updated caches.
        """
        y = self.token_embedding(token_ids, start_index=index)  # (B, 1, D)
        updated = []
        for i, block in enumerate(self.decoder_blocks):
            y, cache, _ = block(
                y,
                self_attention_cache=caches[i],
                self_attention_cache_update_index=index,
            )
            updated.append(cache)
        y = self.decoder_norm(y)
        if self.get_config()["tie_embeddings"]:
            logits = self.token_embedding(y, reverse=True)
        else:
            logits = self.get_layer("logits")(y)
        return logits[:, 0, :], ops.stack(updated)

    def generate(
        self,
        token_ids,
        max_new_tokens=64,
        strategy="greedy",
        end_token_id=3,
        beam_width=4,
        length_penalty=0.6,
        temperature=1.0,
        top_k=None,
        top_p=None,
        seed=None,
    ):
        """Continue prompts with a compiled loop over the KV cache.

        The prompt is read through the same cached step as the new tokens
        (its tokens are kept, not sampled), so one loop serves both.

        Args:
            token_ids: (B, P) int prompts of one length P >= 1, no padding.
            max_new_tokens: int; P + max_new_tokens <= max_length.
            strategy: `"greedy"`, `"sample"` (temperature, top-k, top-p) or
                `"beam"` (the best of `beam_search`).
            end_token_id: generation stops at this id (None: never).

        Returns:
            (B, max_new_tokens) int32 new ids; a row that produced the end
            token holds it followed by zeros.
        """
        self._check_prompt(token_ids, max_new_tokens)
        if strategy == "beam":
            ids, _ = self.beam_search(
                token_ids, max_new_tokens, beam_width, length_penalty, 1, end_token_id
            )
            return ids[:, 0]
        key = (strategy, max_new_tokens, end_token_id, temperature, top_k, top_p)
        key += (seed,)

        def make_fn():
            sampler = generation.make_sampler(
                strategy, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed
            )
            return (
                lambda prompt: self._generate(
                    prompt, sampler, max_new_tokens, end_token_id
                ),
                sampler.variables,
            )

        prompt = ops.convert_to_tensor(token_ids, dtype="int32")
        return generation.run_compiled(self, key, make_fn, prompt)

    def _check_prompt(self, token_ids, max_new_tokens):
        from keras_seq.masks import check_token_ids

        config = self.get_config()
        check_token_ids(token_ids, "token_ids", config["vocabulary_size"])
        check_positive_int(max_new_tokens, "max_new_tokens")
        prompt_length = token_ids.shape[1]
        if not prompt_length or prompt_length + max_new_tokens > config["max_length"]:
            raise ValueError(
                "`token_ids` must hold at least one token and the prompt "
                f"length plus `max_new_tokens` at most max_length="
                f"{config['max_length']}; received {prompt_length} + "
                f"{max_new_tokens}."
            )

    def _empty_caches(self, batch_size, length):
        attention = self.decoder_blocks[0]._self_attention
        shape = (len(self.decoder_blocks),) + attention.cache_shape(batch_size, length)
        return ops.zeros(shape, dtype=self.compute_dtype)

    def beam_search(
        self,
        token_ids,
        max_new_tokens=64,
        beam_width=4,
        length_penalty=0.6,
        num_return=1,
        end_token_id=3,
    ):
        """Beam search continuing prompts, returning n-best lists.

        The prompt fills the cache once (all but its last token), the cache
        is tiled per beam, and beams start from the prompt's last token.

        Returns:
            `(ids, scores)`: (B, num_return, max_new_tokens) int32 new ids,
            best first, and their (B, num_return) length-normalised
            log-probabilities.
        """
        self._check_prompt(token_ids, max_new_tokens)
        check_positive_int(beam_width, "beam_width")
        key = ("beam", max_new_tokens, beam_width, length_penalty, num_return)
        key += (end_token_id,)

        def make_fn():
            def search(prompt):
                batch_size, prompt_length = ops.shape(prompt)
                caches = self._empty_caches(batch_size, prompt_length + max_new_tokens)
                for index in range(prompt_length - 1):  # Prefill.
                    _, caches = self.decode_step(
                        prompt[:, index : index + 1], index, caches
                    )
                caches = generation.tile_beams(caches, beam_width, axis=1)

                def step(previous, index, caches):
                    return self.decode_step(previous, index + prompt_length - 1, caches)

                def reorder(caches, rows):
                    return ops.take(caches, rows, axis=1)

                return generation.beam_search(
                    step,
                    reorder,
                    caches,
                    batch_size,
                    max_new_tokens,
                    prompt[:, -1],
                    -1 if end_token_id is None else end_token_id,
                    beam_width=beam_width,
                    length_penalty=length_penalty,
                    num_return=num_return,
                )

            return search

        prompt = ops.convert_to_tensor(token_ids, dtype="int32")
        return generation.run_compiled(self, key, make_fn, prompt)

    def _generate(self, prompt, sampler, max_new_tokens, end_token_id):
        batch_size, prompt_length = ops.shape(prompt)
        total = prompt_length + max_new_tokens
        caches = self._empty_caches(batch_size, total)
        buffer = ops.concatenate(
            [prompt, ops.zeros((batch_size, max_new_tokens), "int32")], axis=1
        )
        given = ops.concatenate(
            [
                ops.ones((batch_size, prompt_length), "bool"),
                ops.zeros((batch_size, max_new_tokens), "bool"),
            ],
            axis=1,
        )

        def next_logits(buffer, caches, index):
            previous = ops.slice(buffer, [0, index - 1], [batch_size, 1])  # (B, 1)
            logits, caches = self.decode_step(previous, index - 1, caches)
            return logits, None, caches

        buffer = sampler(
            next_logits,
            buffer,
            cache=caches,
            index=1,
            mask=given,
            stop_token_ids=None if end_token_id is None else [end_token_id],
            model=self,  # on JAX, its weights are read through the loop
        )
        new = buffer[:, prompt_length:]
        if end_token_id is None:
            return new
        return generation.zero_after_end(new, end_token_id)


def build_language_model(preset=None, **overrides):
    """Build a decoder-only causal Transformer language model."""
    config = resolve_config(
        DEFAULTS,
        presets_lib.LANGUAGE_MODEL_PRESETS,
        preset,
        overrides,
        "language model",
    )
    return LanguageModel(**config)

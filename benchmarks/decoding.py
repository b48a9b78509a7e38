"""Decoding speed: cached greedy, recomputed greedy and beam search.

For each batch size, `new_tokens` tokens from a source of `config["length"]`
tokens whose last quarter is padding, never stopping early (no end token is
ever produced or honoured), so every implementation does the same number of
decoder steps. The Keras implementations run one compiled loop each (XLA on
TensorFlow, `jax.jit` on JAX):

- ours: `model.generate` (cached greedy) and `model.beam_search` (4 beams);
- keras-hub: its decoder's caches driven by `keras_hub.samplers`
  (`GreedySampler`, `BeamSampler`);
- recomputation (ours, keras-hub, the keras.io recipe): the decoder runs
  over the whole padded target at every step (`peers_keras.recompute_greedy`);
- PyTorch: `nn.Transformer` has no cache, so it recomputes over the prefix,
  eagerly; beam search likewise.
"""

from keras import ops

from benchmarks import config as config_lib
from benchmarks import peers_keras, peers_torch, timing
from benchmarks.training import OURS, TORCH, build_keras

NEW_TOKENS = 32
BEAM_WIDTH = 4


def ours_decode(model, target, encoded, source_mask):
    """Our translator's full decoder pass, (B, T) ids -> (B, T, V) logits."""
    y = model.target_embedding(target)
    for block in model.decoder_blocks:
        y = block(y, encoded, encoder_padding_mask=source_mask)
    return model._logits(model.decoder_norm(y))


def _compiled(fn, model):
    """`fn` compiled as ours is: on JAX, the model's weights are arguments."""
    # Lazy: memory.py's baseline leaves out each implementation's library.
    from keras_seq import generation

    return generation.compile_for_backend(fn, model.variables)


def _keras_candidates(models, new_tokens, beam_width):
    """dict (implementation, method) -> function of the source ids."""
    ours, hub, recipe = models[OURS], models["keras-hub"], models["keras.io recipe"]

    def run_ours_greedy(source):
        return ours.generate(source, max_new_tokens=new_tokens, end_token_id=None)

    def run_ours_beam(source):
        # No end token, as keras-hub's `BeamSampler` runs without stop ids:
        # a loop of static trip count, with nothing read back per step.
        return ours.beam_search(
            source, new_tokens, beam_width=beam_width, end_token_id=None
        )[0]

    def recompute(encode, decode, model):
        return _compiled(
            lambda source: peers_keras.recompute_greedy(
                lambda s: encode(model, s),
                lambda t, e, m: decode(model, t, e, m),
                source,
                new_tokens,
            ),
            model,
        )

    def ours_encode(model, source):
        return model.encode(source)

    return {
        (OURS, "cached greedy"): run_ours_greedy,
        (OURS, "recompute greedy"): recompute(ours_encode, ours_decode, ours),
        (OURS, "beam"): run_ours_beam,
        ("keras-hub", "cached greedy"): _compiled(
            lambda source: peers_keras.hub_greedy(hub, source, new_tokens), hub
        ),
        ("keras-hub", "recompute greedy"): recompute(
            peers_keras.hub_encode, peers_keras.hub_decode, hub
        ),
        ("keras-hub", "beam"): _compiled(
            lambda source: peers_keras.hub_beam(hub, source, new_tokens, beam_width),
            hub,
        ),
        ("keras.io recipe", "recompute greedy"): recompute(
            peers_keras.recipe_encode, peers_keras.recipe_decode, recipe
        ),
    }


def _torch_candidates(config, new_tokens, beam_width):
    import torch  # Optional: benchmarks/requirements.txt.

    torch.manual_seed(0)
    model = peers_torch.build_torch_translator(config)
    return {
        (TORCH, "recompute greedy"): lambda source: peers_torch.greedy(
            model, source, new_tokens
        ),
        (TORCH, "beam"): lambda source: peers_torch.beam(
            model, source, new_tokens, beam_width
        ),
    }


def measure(config, repeats, batch_sizes=(1, 32), new_tokens=NEW_TOKENS,
            beam_width=BEAM_WIDTH, with_torch=True, min_seconds=0.3):  # fmt: skip
    """Decoding figures: dict batch -> {(implementation, method): row}."""
    models = {
        name: build_keras(name, config)
        for name in (OURS, "keras-hub", "keras.io recipe")
    }
    functions = _keras_candidates(models, new_tokens, beam_width)
    if with_torch:
        functions.update(_torch_candidates(config, new_tokens, beam_width))
    results = {}
    for batch in batch_sizes:
        source = config_lib.source_batch(config, batch, seed=batch)
        tensor = ops.convert_to_tensor(source)

        def bind(key, fn, source=source, tensor=tensor):
            given = source if key[0] == TORCH else tensor
            return lambda: ops.convert_to_numpy(fn(given))

        calls = {key: bind(key, fn) for key, fn in functions.items()}
        medians = timing.interleaved(calls, repeats, min_seconds=min_seconds)
        results[batch] = {
            key: {
                "ms": 1e3 * value["median"],
                "cpu_ms": 1e3 * value["cpu_median"],
                "tokens_per_s": batch * new_tokens / value["median"],
                "times": value["times"],
            }
            for key, value in medians.items()
        }
    return results


def check_agreement(config, new_tokens=8):
    """Our cached greedy tokens equal our recomputed ones (a sanity check)."""
    model = build_keras(OURS, config)
    source = ops.convert_to_tensor(config_lib.source_batch(config, 2, seed=5))
    cached = ops.convert_to_numpy(
        model.generate(source, max_new_tokens=new_tokens, end_token_id=-1)
    )
    recomputed = ops.convert_to_numpy(
        peers_keras.recompute_greedy(
            model.encode,
            lambda t, e, m: ours_decode(model, t, e, m),
            source,
            new_tokens,
        )
    )
    return bool((cached == recomputed).all())

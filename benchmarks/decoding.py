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

import contextlib
import functools
import statistics

import keras
from keras import ops

from benchmarks import config as config_lib
from benchmarks import peers_keras, peers_torch, timing
from benchmarks.config import START_ID
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
    """Decoding figures: dict batch -> {(implementation, method): row}.

    A function whose first call raises is not timed; its row is
    `{"failed": "Error: message"}`.
    """
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

        calls, failed = {}, {}
        for key, fn in functions.items():
            call = bind(key, fn)
            message = timing.first_call_fails(call)
            if message:
                failed[key] = {"failed": message}
            else:
                calls[key] = call
        medians = timing.interleaved(calls, repeats, min_seconds=min_seconds)
        results[batch] = dict(failed)
        results[batch].update(
            {
                key: {
                    "ms": 1e3 * value["median"],
                    "cpu_ms": 1e3 * value["cpu_median"],
                    "tokens_per_s": batch * new_tokens / value["median"],
                    "times": value["times"],
                }
                for key, value in medians.items()
            }
        )
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


# Positions whose single decoder step is timed by `measure_positions`: an
# early one and a late one of the `small` translator's 64.
POSITIONS = (8, 56)


def _no_grad():
    """`torch.no_grad()` on PyTorch (as `generate` decodes), else nothing."""
    if keras.backend.backend() != "torch":
        return contextlib.nullcontext()
    import torch  # Backend-specific: only reached with the PyTorch backend.

    return torch.no_grad()


def _ours_step_at(model, source, position):
    """Ours: the decoder step at `position` of a `position + 1`-token cache.

    The step `generate` runs: on PyTorch the plain PyTorch one
    (`keras_seq.generation.fast_step`), elsewhere `decoding_step`.
    """
    token, context, cache = model.start_decoding(source, position + 1, START_ID)
    step = model.fast_decoding_step() or model.decoding_step
    return lambda: step(token, position, context, cache)[0]


def _hub_step_at(model, source, position):
    """keras-hub: its decoder's step at `position`, its caches as long."""
    encoded, mask, _, caches, cross = peers_keras._hub_prefill(
        model, source, position + 1
    )
    token = ops.full((ops.shape(source)[0], 1), START_ID, "int32")
    return lambda: peers_keras._hub_step(
        model, token, position, encoded, mask, caches, cross, fill=False
    )[0]


def _append_step(made, make, model, source, position):
    made.append(make(model, source, position))


def measure_positions(config, repeats, batch_sizes=(1, 32), positions=POSITIONS,
                      min_seconds=0.3):  # fmt: skip
    """Time per token early and late in a translation: one decoder step.

    For each position p, the step that reads the token at p and writes
    its keys and values at p, with caches of p + 1 positions (as a
    translation of p + 1 tokens has): a step that copied or rescanned
    the whole cache would grow with p, and a translation would cost
    O(L^2) in its length. The cross-attention caches are filled once
    outside the clock, as the decoding loop fills them. Ours and
    keras-hub's steps, every position, timed round-robin, without
    gradients on PyTorch.

    Returns:
        dict batch -> {"implementation | p": row}, rows as `measure`'s
        plus `ratio` (late over early, of the medians) and `paired_ratio`
        (the median over repetitions of the ratio within each) in the
        latest position's row. A step whose first call raises has
        `{"failed": message}`.
    """
    models = {name: build_keras(name, config) for name in (OURS, "keras-hub")}
    makers = {OURS: _ours_step_at, "keras-hub": _hub_step_at}
    results = {}
    with _no_grad():
        for batch in batch_sizes:
            source = ops.convert_to_tensor(
                config_lib.source_batch(config, batch, seed=batch)
            )
            calls, rows = {}, {}
            for name, make in makers.items():
                for position in positions:
                    key, made = f"{name} | {position}", []

                    def call(made=made):
                        return ops.convert_to_numpy(ops.argmax(made[0](), axis=-1))

                    message = timing.first_call_fails(
                        functools.partial(
                            _append_step, made, make, models[name], source, position
                        )
                    ) or timing.first_call_fails(call)
                    if message:
                        rows[key] = {"failed": message}
                    else:
                        calls[key] = call
            medians = timing.interleaved(calls, repeats, min_seconds=min_seconds)
            for key, value in medians.items():
                rows[key] = {
                    "ms": 1e3 * value["median"],
                    "cpu_ms": 1e3 * value["cpu_median"],
                    "times": value["times"],
                }
            for name in makers:
                first, last = (f"{name} | {p}" for p in (positions[0], positions[-1]))
                if "ms" in rows.get(first, {}) and "ms" in rows.get(last, {}):
                    early, late = rows[first], rows[last]
                    late["ratio"] = late["ms"] / early["ms"]
                    late["paired_ratio"] = statistics.median(
                        b / a for a, b in zip(early["times"], late["times"])
                    )
            results[batch] = rows
    return results

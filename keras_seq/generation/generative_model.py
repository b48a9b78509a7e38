"""The one generative-model base: `generate` and `beam_search`, written once.

A model that generates inherits `GenerativeModel` next to its `keras.Model`
base and supplies three methods; everything else (the keras-hub sampler
loop, beam search, one compiled loop per decoding setting, stopping at the
end token) lives here, so the translators and the language model decode
the same way. The last two are the models' one public step API, with one
signature for every family (see `GenerativeModel`):

- `check_generate_input(token_ids, max_new_tokens)`: refuse bad ids and
  resolve `max_new_tokens` against the model's length limit, with
  `resolve_max_new_tokens` for the one default.
- `start_decoding(token_ids, max_new_tokens, start_token_id)`: run what
  runs once per input (an encoder) and return `(given, context, cache)`:
  the (B, P) ids the output follows (the start token, or a prompt), the
  `context` that stays constant while decoding (encoder outputs, their
  mask, cross-attention caches) and the `cache` carried from step to step
  (self-attention caches, a recurrent state). Beam search tiles both per
  beam and reorders only the cache.
- `decoding_step(token_ids, index, context, cache)`: one position, from
  the (B, 1) ids at `index` to the (B, V) logits of the next one and the
  updated cache.

Shape legend:
    B: batch size
    P: given ids (1: a start token; or a prompt's length)
    M: max_new_tokens
    K: beam width
    V: vocabulary size
"""

import typing

import keras
import numpy as np
from keras import ops

from keras_seq import defaults
from keras_seq.generation import draws
from keras_seq.generation.beam import beam_search as run_beam_search
from keras_seq.generation.beam import check_num_return, take_rows, tile_beams
from keras_seq.generation.controls import DecodingControls
from keras_seq.generation.draws import fresh_seed
from keras_seq.generation.loop_policy import current as current_policy
from keras_seq.generation.sampling import (
    first_argmax,
    given_buffer,
    inference_scope,
    make_sampler,
    run_compiled,
    run_sampler,
    sampler_step,
    sampler_steps,
    token_masker,
    tracing_tensorflow_function,
    zero_after_end,
)
from keras_seq.masks import (
    check_token_ids,
    masked_value,
    padding_mask,
    token_logits_mask,
)
from keras_seq.text import END_ID, START_ID, UNK_ID
from keras_seq.validation import (
    check_bool,
    check_control_values,
    check_finite,
    check_int_in,
    check_positive_int,
    check_prefix_ids,
    check_seed,
    check_token_id,
    check_token_id_list,
    check_top_p,
)

# The default output length of a model without a length limit of its own.
DEFAULT_MAX_NEW_TOKENS = defaults.UNBOUNDED_LENGTH


def resolve_max_new_tokens(max_new_tokens, limit=None):
    """`max_new_tokens` checked, or the one default when it is None.

    The default is as many tokens as the model allows (`limit`), or
    `DEFAULT_MAX_NEW_TOKENS` for a model without a limit.

    Args:
        max_new_tokens: a positive int, or None for the default.
        limit: int or None, the most new tokens the model can produce for
            the input at hand.

    Returns:
        An int. Whether it fits `limit` is the model's check, whose error
        message names its own limit.
    """
    if max_new_tokens is None:
        return DEFAULT_MAX_NEW_TOKENS if limit is None else limit
    check_positive_int(max_new_tokens, "max_new_tokens")
    return max_new_tokens


class GenerativeModel:
    """A mixin giving a model `generate` and `beam_search` over its cache.

    The model supplies `check_generate_input`, `start_decoding` and
    `decoding_step` (see the module docstring); greedy decoding and
    sampling run keras-hub's samplers, beam search runs
    `keras_seq.generation.beam_search`, each as one compiled loop per
    decoding setting and input shape (`run_compiled`).

    `start_decoding` and `decoding_step` are also each model's public step
    API, one signature for every family, for decoding by hand one position
    at a time (a teacher-forced check, a picture of each step): the
    example below ends with two such steps. What `context` and `cache`
    hold is the family's own business.

    Example:

    A model without weights whose next id is always its previous id + 1:

    >>> class Counter(GenerativeModel, keras.Model):
    ...     def check_generate_input(self, token_ids, max_new_tokens=None):
    ...         return resolve_max_new_tokens(max_new_tokens, limit=6)
    ...
    ...     def start_decoding(self, token_ids, max_new_tokens, start_token_id):
    ...         batch_size = ops.shape(token_ids)[0]
    ...         start = ops.full((batch_size, 1), start_token_id, "int32")
    ...         return start, (), ops.zeros((batch_size,), "int32")
    ...
    ...     def decoding_step(self, token_ids, index, context, cache):
    ...         logits = 10.0 * ops.one_hot(token_ids[:, 0] + 1, 16)
    ...         return logits, cache + 1  # The cache counts the steps.
    >>> counter = Counter()
    >>> source = ops.ones((2, 3), "int32")
    >>> ops.convert_to_numpy(counter.generate(source, end_token_id=6)).tolist()
    [[3, 4, 5, 6, 0, 0], [3, 4, 5, 6, 0, 0]]
    >>> ids, scores = counter.beam_search(source, 3, end_token_id=None)
    >>> ops.convert_to_numpy(ids[:, 0]).tolist()  # The best of 4 beams.
    [[3, 4, 5], [3, 4, 5]]

    The same model stepped by hand, two positions from start id 7:

    >>> given, context, cache = counter.start_decoding(source, 2, 7)
    >>> logits, cache = counter.decoding_step(given, 0, context, cache)
    >>> next_ids = ops.argmax(logits, axis=-1)[:, None]  # (B, 1)
    >>> logits, cache = counter.decoding_step(next_ids, 1, context, cache)
    >>> ops.convert_to_numpy(ops.argmax(logits, axis=-1)).tolist()
    [9, 9]
    >>> ops.convert_to_numpy(cache).tolist()
    [2, 2]
    """

    # Ids the model never outputs (special tokens such as padding, [UNK] or
    # [MASK]): greedy choice, sampling and beam search never pick them
    # (`keras_seq.masks.mask_token_logits`). The end token of a call is
    # never masked: it ends an output. A model that sets them states its
    # output size V with `label_size()`, so the (1, V) mask is built once
    # per call, before the decoding loop.
    unsamplable_token_ids = ()

    def check_generate_input(self, token_ids, max_new_tokens=None):
        """Validate `token_ids`; return `max_new_tokens` or its default.

        Args:
            token_ids: the ids `generate` would receive.
            max_new_tokens: a positive int, or None for the model's default
                (`resolve_max_new_tokens`).

        Returns:
            The number of tokens to generate, an int.

        Raises:
            TypeError, ValueError: naming the argument that does not fit.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement `check_generate_input`."
        )

    def start_decoding(self, token_ids, max_new_tokens, start_token_id):
        """Run what runs once per input; return `(given, context, cache)`.

        Args:
            token_ids: (B, S) int ids, checked by `check_generate_input`:
                the source for a translator, the prompt for a language
                model.
            max_new_tokens: int M, the number of positions the cache must
                hold beyond the given ids.
            start_token_id: int, the id a translator's output starts from;
                a language model continues its prompt and ignores it.

        Returns:
            `given`, the (B, P) int32 ids the output follows (P = 1: the
            start token; or the prompt); `context`, a structure of tensors
            that stays constant while decoding; `cache`, a structure of
            tensors carried from step to step, every leaf with the batch
            on its first axis (beam search tiles and reorders it).
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement `start_decoding`."
        )

    def decoding_step(self, token_ids, index, context, cache):
        """One position over the cache: `(logits, cache)`.

        Args:
            token_ids: (B, 1) int32 ids at position `index` of the output
                (a given id, a chosen one, or a reference one).
            index: int or scalar int tensor, their position, counted from
                0 at the first given id.
            context, cache: from `start_decoding`, the cache as the last
                step returned it.

        Returns:
            (B, V) logits of the id at `index + 1`, and the updated cache.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement `decoding_step`."
        )

    def fast_decoding_step(self):
        """`decoding_step` by a faster route on this backend, or None.

        The loops of `generate` and `beam_search` call the step it returns
        (same arguments and numbers as `decoding_step`) in place of
        `decoding_step`. None, the default, keeps `decoding_step`.
        `keras_seq.generation.fast_step` gives the Transformer models one
        for PyTorch.
        """
        return None

    def fast_start_decoding(self):
        """`start_decoding` by a faster route on this backend, or None.

        `generate` and `beam_search` call the function it returns (same
        arguments and numbers as `start_decoding`) in place of
        `start_decoding`. None, the default, keeps `start_decoding`.
        `keras_seq.generation.fast_step` gives the Transformer translator
        an encoder pass for PyTorch.
        """
        return None

    def _loop_step(self):
        if current_policy().fast_step:
            return self.fast_decoding_step() or self.decoding_step
        return self.decoding_step

    def _loop_start(self):
        if current_policy().fast_step:
            return self.fast_start_decoding() or self.start_decoding
        return self.start_decoding

    def quantize(self, mode=None, **kwargs):
        """`keras.Model.quantize`, then the compiled loops are dropped.

        The loops of `generate` and `beam_search` are compiled over the
        model's variables of the time; quantizing replaces the float
        weights of the quantized layers, so the next call compiles anew
        over the quantized ones.
        """
        super().quantize(mode, **kwargs)
        self.__dict__.pop("_generate_functions", None)

    def generate(
        self,
        token_ids,
        max_new_tokens=None,
        strategy="greedy",
        start_token_id=None,
        end_token_id=END_ID,
        beam_width=defaults.BEAM_WIDTH,
        length_penalty=defaults.LENGTH_PENALTY,
        temperature=1.0,
        top_k=None,
        top_p=None,
        seed=None,
        *,
        prefix_ids=None,
        min_new_tokens=None,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress_token_ids=None,
        suppress_unknown=False,
        return_scores=False,
    ):
        """Generate ids with a compiled loop over the model's cache.

        What runs once per input (an encoder) runs once; each new token
        then costs one decoding step over the cache, not a rerun of the
        decoder (Eq. 7.3 fed back step by step).

        Args:
            token_ids: (B, S) int ids: the source for a translator (0 =
                padding), the prompt for a language model (B, P), P >= 1,
                no padding, read through the same cached step as the new
                tokens.
            max_new_tokens: int, the longest output. None: as many as the
                model allows (`max_length - 1` for the Transformer
                translator, `max_length - P` for the language model), or
                `DEFAULT_MAX_NEW_TOKENS` (64) for a model without a
                length limit (the RNN translator).
            strategy: `"greedy"`, `"sample"` (`temperature`, `top_k`,
                `top_p`, `seed`) or `"beam"` (the best hypothesis of
                `beam_search` with `beam_width` and `length_penalty`).
            start_token_id: int, the id a translator's output starts from;
                None: the model's `default_start_token_id`
                (`keras_seq.text.START_ID`). A language model continues
                its prompt and ignores it.
            end_token_id: int, the id that ends an output
                (`keras_seq.text.END_ID`); None (or a negative id, which
                no token has) decodes exactly `max_new_tokens` tokens per
                row, in a loop of static trip count.
            beam_width: int, the number of hypotheses beam search keeps.
            length_penalty: float alpha of beam search's length penalty
                `((5 + n) / 6) ** alpha`; 0 ranks by summed
                log-probabilities.
            temperature: float > 0, the logits are divided by it before
                sampling.
            top_k: int or None, sample among the k most likely tokens.
            top_p: float in (0, 1] or None, sample among the fewest tokens
                whose probabilities add up to p (with `top_k`, among at
                most k of them).
            seed: int in [0, 2**31) or None. With a seed, `"sample"` draws
                the same tokens on every call and on every backend
                (TensorFlow, JAX, PyTorch) for the same weights, and each
                row's tokens depend only on the seed and that row's own
                ids, not on the rows beside it (`keras_seq.generation.
                draws`). None: every call draws afresh (from NumPy's
                generator, which `keras.utils.set_random_seed` seeds).
            prefix_ids: None, or per row the ids the output starts with
                (after the start token; after the prompt of a language
                model): a list of lists (ragged; `[]` forces nothing) or
                a (B, P') int array padded at the end with 0. They are
                written whatever the other controls say, and count as
                output for them (n-grams, the penalty, `min_new_tokens`)
                as CTranslate2's `target_prefix` does.
            min_new_tokens: None, or an int in [0, max_new_tokens]: the
                end token is not written before that many new tokens (a
                forced prefix included; CTranslate2's
                `min_decoding_length`, transformers' `min_new_tokens`).
            no_repeat_ngram_size: None or 0 for none, or an int n >= 1:
                no id is written that would complete an n-gram already in
                the output (the prompt of a language model included).
            repetition_penalty: None, or a finite float p > 0: the logit
                of every id already in the output (the prompt of a
                language model included, the source of a translator not)
                is divided by p if positive and multiplied by p if not
                (CTRL, Keskar et al., 2019); p > 1 discourages repeats.
            suppress_token_ids: None, or a list of ids never written.
            suppress_unknown: bool, never write the model's
                `unknown_token_id` (CTranslate2's `disable_unk`).
            return_scores: bool, also return each new token's
                log-probability.

        Returns:
            (B, max_new_tokens) int32 ids; a row that produced the end
            token holds it followed by zeros. A row without a token (all
            padding, or a source or prompt of length 0) answers the end
            token followed by zeros (only zeros without an end token), as
            an empty sentence translates to an empty one. With
            `return_scores`, `(ids, scores)`: (B, max_new_tokens) float32
            log-probabilities of each id (0 after the end), from the
            log-softmax of the logits decoded from: the model's logits
            with the controls applied (the penalty, and the ruled-out
            ids masked: `unsamplable_token_ids`, the suppressed ids, the
            blocked n-grams, the end token before `min_new_tokens`),
            divided by the temperature when sampling, before top-k and
            top-p (as CTranslate2's `return_log_prob`). A forced id is
            scored by that distribution too, not as certain. Greedy
            scores without controls equal `score` of the same output.

        Raises:
            TypeError, ValueError: for ids or an option out of range,
                naming the argument (the messages of the command line's
                options: `beam_width` and `top_k` at most the output
                vocabulary, `temperature` finite and above 0,
                `length_penalty` finite, `top_p` in (0, 1]).
        """
        token_ids, no_positions, max_new_tokens, start_token_id, controls = (
            self._checked_call(
                token_ids,
                max_new_tokens,
                start_token_id,
                end_token_id,
                (beam_width, length_penalty, temperature, top_k, top_p),
                prefix_ids=prefix_ids,
                min_new_tokens=min_new_tokens,
                no_repeat_ngram_size=no_repeat_ngram_size,
                repetition_penalty=repetition_penalty,
                suppress_token_ids=suppress_token_ids,
                suppress_unknown=suppress_unknown,
            )
        )
        check_bool(return_scores, "return_scores")
        if no_positions:  # Nothing to decode from: the answer needs no model.
            ids = ops.zeros((ops.shape(token_ids)[0], max_new_tokens), "int32")
            scores = ops.zeros(ops.shape(ids), "float32") if return_scores else None
            return _answer_rows_without_tokens(token_ids, end_token_id, ids, scores)
        if strategy == "beam":
            found = self._compiled_beam_search(
                token_ids,
                max_new_tokens,
                (beam_width, length_penalty, 1),
                start_token_id,
                end_token_id,
                controls,
                return_scores,
            )
            if return_scores:
                return found[0][:, 0], found[2][:, 0]
            return found[0][:, 0]
        sampler, draw = _sampler_and_draw(strategy, temperature, top_k, top_p, seed)
        key = (strategy, max_new_tokens, start_token_id, end_token_id)
        key += (temperature, top_k, top_p, self._unsamplable(end_token_id))
        if controls is not None or return_scores:
            key += (None if controls is None else controls.key, return_scores)

        def make_fn():
            def sample(token_ids, seed, *control_tensors):
                found = self._sample(
                    token_ids,
                    sampler,
                    max_new_tokens,
                    start_token_id,
                    end_token_id,
                    draw=draw,
                    seed=seed,
                    controls=controls and controls.with_tensors(control_tensors),
                    return_scores=return_scores,
                )
                # Inside the compiled loop: eagerly, its few ops would cost
                # more than a decoding step.
                if return_scores:
                    return _answer_rows_without_tokens(token_ids, end_token_id, *found)
                return _answer_rows_without_tokens(token_ids, end_token_id, found)

            return sample

        token_ids = ops.convert_to_tensor(token_ids, dtype="int32")
        # The seed and the controls' values are inputs of the compiled
        # loop, not constants of it: a new seed or penalty reuses the loop.
        seed = ops.convert_to_tensor(fresh_seed() if seed is None else seed, "int32")
        inputs = [] if controls is None else controls.tensors()
        return run_compiled(self, key, make_fn, token_ids, seed, *inputs)

    def _checked_call(
        self, token_ids, max_new_tokens, start_token_id, end_token_id, options,
        **controls,
    ):  # fmt: skip
        """`generate`'s and `stream`'s checks, before anything is traced:
        `(token_ids, no_positions, max_new_tokens, start_token_id,
        controls)`; `options` are `_check_options`'."""
        token_ids, no_positions = _at_least_one_position(token_ids)
        max_new_tokens = self.check_generate_input(token_ids, max_new_tokens)
        start_token_id = self._resolve_start(start_token_id)
        self._check_special_ids(start_token_id, end_token_id)
        self._check_options(*options)
        controls = self._decoding_controls(token_ids, max_new_tokens, **controls)
        return token_ids, no_positions, max_new_tokens, start_token_id, controls

    def stream(
        self,
        token_ids,
        max_new_tokens=None,
        strategy="greedy",
        start_token_id=None,
        end_token_id=END_ID,
        temperature=1.0,
        top_k=None,
        top_p=None,
        seed=None,
        *,
        prefix_ids=None,
        min_new_tokens=None,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress_token_ids=None,
        suppress_unknown=False,
    ):
        """`generate`'s greedy or sampled output, one position at a time.

        The same loop as `generate` (its step, its controls, its seeded
        draw), run from Python so that each position is answered as soon
        as it is chosen: the items joined are `generate`'s output with the
        same arguments, up to its trailing zeros. On TensorFlow and JAX
        each position is one call of a compiled step (a TensorFlow graph,
        a `jax.jit` function), made once per setting and shape as
        `generate`'s loops are; on PyTorch the steps are `generate`'s own.

        Beam search does not stream: its best hypothesis is known only at
        its end (`strategy="beam"` is refused).

        Args:
            As `generate`'s; `strategy` is `"greedy"` or `"sample"`.

        Returns:
            An iterator of (B,) int32 NumPy arrays, the ids of each new
            position; a row that has ended answers 0. It stops once every
            row has written the end token, or after `max_new_tokens`.

        Raises:
            TypeError, ValueError: as `generate`'s, when `stream` is
                called, before any decoding.
        """
        if strategy not in ("greedy", "sample"):
            raise ValueError(
                '`strategy` must be "greedy" or "sample" to stream (a beam '
                "search knows its best hypothesis only at its end); received "
                f"{strategy!r}."
            )
        token_ids, no_positions, max_new_tokens, start_token_id, controls = (
            self._checked_call(
                token_ids,
                max_new_tokens,
                start_token_id,
                end_token_id,
                (defaults.BEAM_WIDTH, 0.0, temperature, top_k, top_p),
                prefix_ids=prefix_ids,
                min_new_tokens=min_new_tokens,
                no_repeat_ngram_size=no_repeat_ngram_size,
                repetition_penalty=repetition_penalty,
                suppress_token_ids=suppress_token_ids,
                suppress_unknown=suppress_unknown,
            )
        )
        sampler, draw = _sampler_and_draw(strategy, temperature, top_k, top_p, seed)
        token_ids = ops.convert_to_tensor(token_ids, dtype="int32")
        seed = ops.convert_to_tensor(fresh_seed() if seed is None else seed, "int32")
        key = ("stream", strategy, start_token_id, end_token_id, temperature)
        key += (top_k, top_p, self._unsamplable(end_token_id))
        key += (None if controls is None else controls.key,)
        return self._stream(
            key,
            token_ids,
            no_positions,
            sampler,
            max_new_tokens,
            start_token_id,
            end_token_id,
            draw,
            seed,
            controls,
        )

    def _stream(
        self,
        key,
        token_ids,
        no_positions,
        sampler,
        max_new_tokens,
        start_token_id,
        end_token_id,
        draw,
        seed,
        controls,
    ):
        """`stream`'s generator, made after its checks (a generator's body
        runs only when first read). Each step runs inside `inference_scope`
        and none of the caller's code does."""
        never_ends = end_token_id is None or end_token_id < 0
        end = 0 if never_ends else end_token_id
        ids = ops.convert_to_numpy(token_ids)
        # A row without a token answers the end token, as in `generate`.
        blank = ~np.any(ids != 0, axis=1) | no_positions  # (B,)
        ended = np.zeros(len(ids), bool)
        with inference_scope(len(ids)):
            loop = self._sampling_loop(
                token_ids,
                max_new_tokens,
                start_token_id,
                end_token_id,
                draw,
                seed,
                controls,
                return_scores=False,
            )
            if current_policy().compiled:
                steps = self._compiled_steps(
                    key, loop, sampler, token_ids, end_token_id, draw, seed, controls
                )
            else:
                steps = sampler_steps(
                    sampler, loop.next_logits, loop.buffer, loop.cache, 1, loop.kept
                )
        first = int(loop.given_length)
        while not ended.all():
            with inference_scope(len(ids)):
                position, buffer, _ = next(steps, (None, None, None))
                if position is None:
                    return
                if position < first:  # a given id of the prompt, kept
                    continue
                column = ops.convert_to_numpy(buffer[:, position]).astype("int32")
            column = np.where(blank, end if position == first else 0, column)
            column = np.where(ended, 0, column)
            if not never_ends:
                ended |= column == end
            yield column

    def _compiled_steps(
        self, key, loop, sampler, token_ids, end_token_id, draw, seed, controls
    ):
        """`sampler_steps`' items, each position from one compiled step.

        The step is compiled once per setting (`key`) and shape, over the
        context and the cache as its inputs, and each call runs one
        executable where an eager step runs every operation on its own.
        The start of decoding (`loop`) ran eagerly: once per stream.
        """
        context = keras.tree.flatten(loop.context)
        cache = keras.tree.flatten(loop.cache)
        tensors = [] if controls is None else controls.tensors()
        sizes = (len(context), len(cache))

        def make_fn():
            def advance(token_ids, seed, given_length, buffer, kept, index, *rest):
                context = keras.tree.pack_sequence_as(loop.context, rest[: sizes[0]])
                cache = rest[sizes[0] : sum(sizes)]
                cache = keras.tree.pack_sequence_as(loop.cache, cache)
                next_logits = self._next_logits(
                    token_ids, context, given_length, end_token_id, draw, seed,
                    controls and controls.with_tensors(rest[sum(sizes) :]), False,
                )  # fmt: skip
                buffer, cache = sampler_step(
                    sampler, next_logits, buffer, cache, index, kept
                )
                return [buffer] + keras.tree.flatten(cache)

            return advance

        given_length = ops.convert_to_tensor(loop.given_length, "int32")
        buffer = loop.buffer
        for position in range(1, buffer.shape[1]):
            index = ops.convert_to_tensor(position, "int32")
            inputs = (token_ids, seed, given_length, buffer, loop.kept, index)
            found = run_compiled(
                self, key, make_fn, *inputs, *context, *cache, *tensors,
                one_step=True,
            )  # fmt: skip
            buffer, cache = found[0], found[1:]
            yield position, buffer, None

    def beam_search(
        self,
        token_ids,
        max_new_tokens=None,
        beam_width=defaults.BEAM_WIDTH,
        length_penalty=defaults.LENGTH_PENALTY,
        num_return=1,
        start_token_id=None,
        end_token_id=END_ID,
        *,
        prefix_ids=None,
        min_new_tokens=None,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress_token_ids=None,
        suppress_unknown=False,
        return_scores=False,
    ):
        """Beam search over the model's cache, returning n-best lists.

        What runs once per input runs once, before the beams split: the
        encoder, or the prompt but its last token through the cache. Its
        context and cache are then tiled per beam, and the cache follows
        its beam at every step (`keras_seq.generation.beam_search`).

        Args:
            token_ids: (B, S) int ids, as for `generate`.
            max_new_tokens: int or None, as for `generate`.
            beam_width: int K, the number of hypotheses kept per row.
            length_penalty: float alpha; hypotheses are ranked by their
                summed log-probabilities divided by `((5 + n) / 6) **
                alpha` (Wu et al., 2016); 0 ranks by the sums.
            num_return: int in [1, beam_width], hypotheses returned per row.
            start_token_id: int or None, as for `generate`.
            end_token_id: int, or None to decode exactly `max_new_tokens`
                tokens, as for `generate`.
            prefix_ids, min_new_tokens, no_repeat_ngram_size,
                repetition_penalty, suppress_token_ids, suppress_unknown:
                the controls of `generate`, applied to every beam (each
                beam's own output for the n-grams and the penalty).
            return_scores: bool, also return each hypothesis's per-token
                log-probabilities.

        Returns:
            `(ids, scores)`: (B, num_return, max_new_tokens) int32 ids,
            best first, each ending with its end token and zeros, and their
            (B, num_return) length-normalised log-probabilities. With
            `return_scores`, `(ids, scores, token_scores)`, the last
            (B, num_return, max_new_tokens) float32, 0 after the end: the
            log-probabilities the search added up, so that their sum is
            `scores * ((5 + n) / 6) ** length_penalty` (n: the
            hypothesis's length, its end token included), the score
            itself at penalty 0. A row without a token answers as in
            `generate`, every hypothesis alike, with score 0.

        Raises:
            TypeError, ValueError: as `generate`, naming the argument.
        """
        token_ids, no_positions = _at_least_one_position(token_ids)
        max_new_tokens = self.check_generate_input(token_ids, max_new_tokens)
        start_token_id = self._resolve_start(start_token_id)
        self._check_special_ids(start_token_id, end_token_id)
        self._check_options(beam_width, length_penalty)
        check_num_return(num_return, beam_width)
        controls = self._decoding_controls(
            token_ids,
            max_new_tokens,
            prefix_ids=prefix_ids,
            min_new_tokens=min_new_tokens,
            no_repeat_ngram_size=no_repeat_ngram_size,
            repetition_penalty=repetition_penalty,
            suppress_token_ids=suppress_token_ids,
            suppress_unknown=suppress_unknown,
        )
        check_bool(return_scores, "return_scores")
        if no_positions:  # Nothing to decode from: the answer needs no model.
            batch_size = ops.shape(token_ids)[0]
            ids = ops.zeros((batch_size, num_return, max_new_tokens), "int32")
            scores = ops.zeros((batch_size, num_return), "float32")
            answer = _answer_rows_without_tokens(token_ids, end_token_id, ids, scores)
            if return_scores:
                return (*answer, ops.zeros(ops.shape(ids), "float32"))
            return answer
        return self._compiled_beam_search(
            token_ids,
            max_new_tokens,
            (beam_width, length_penalty, num_return),
            start_token_id,
            end_token_id,
            controls,
            return_scores,
        )

    def _compiled_beam_search(
        self,
        token_ids,
        max_new_tokens,
        search,
        start_token_id,
        end_token_id,
        controls,
        return_scores,
    ):
        """`beam_search` once its arguments are checked; `search` is
        `(beam_width, length_penalty, num_return)`."""
        beam_width, length_penalty, num_return = search
        key = ("beam", max_new_tokens, beam_width, length_penalty, num_return)
        key += (start_token_id, end_token_id, self._unsamplable(end_token_id))
        if controls is not None or return_scores:
            key += (None if controls is None else controls.key, return_scores)

        def make_fn():
            def run(token_ids, *control_tensors):
                found = self._beam_search(
                    token_ids,
                    max_new_tokens,
                    beam_width,
                    length_penalty,
                    num_return,
                    start_token_id,
                    end_token_id,
                    controls=controls and controls.with_tensors(control_tensors),
                    return_scores=return_scores,
                )
                answer = _answer_rows_without_tokens(
                    token_ids, end_token_id, found[0], found[1]
                )
                if return_scores:
                    return (*answer, _zero_rows_without_tokens(token_ids, found[2]))
                return answer

            return run

        token_ids = ops.convert_to_tensor(token_ids, dtype="int32")
        inputs = [] if controls is None else controls.tensors()
        return run_compiled(self, key, make_fn, token_ids, *inputs)

    # A language model continues its input (`score(token_ids)` reads the
    # first id as given); a translator writes an output of its own.
    continues_input = False

    def score(
        self, token_ids, target_ids=None, start_token_id=None, end_token_id=END_ID
    ):
        """Teacher-forced log-probabilities of given outputs, per token.

        Each target id is scored by the model after the ones before it,
        through the same cached step `generate` runs (one compiled loop),
        from the same distribution: the model's logits with
        `unsamplable_token_ids` ruled out (the end token never), so the
        greedy output's scores of `generate(..., return_scores=True)`
        equal `score` of that output. CTranslate2's `score_batch` and a
        transformers forward pass do not rule ids out; for a trained model
        the difference is the probability it gives ids it never writes.

        Args:
            token_ids: (B, S) int ids: a translator's source (0 =
                padding), or a language model's prompt (B, P) (no
                padding). With `target_ids` None (language models only),
                the whole text: its first id is given, the rest scored.
            target_ids: (B, T) int ids of the outputs to score, padded at
                the end with 0 (padding is not scored), without the start
                token; an end token in a row is scored as any id (append
                it to score a finished output).
            start_token_id: int or None, as for `generate`.
            end_token_id: int, the end id `generate` would not rule out;
                None or a negative id for none.

        Returns:
            (B, T) float32 log-probabilities, 0 at padding (with
            `target_ids` None, (B, S - 1) for `token_ids[:, 1:]`, as
            CTranslate2's `Generator.score_batch`). An id the model never
            writes scores about the masks' sentinel (-2e38).

        Raises:
            TypeError, ValueError: naming the argument, as `generate`.
        """
        if target_ids is None:
            if not self.continues_input:
                raise ValueError(
                    f"`target_ids` is required: {type(self).__name__} scores "
                    "an output given its input."
                )
            check_token_ids(token_ids, "token_ids")
            token_ids, target_ids = token_ids[:, :1], token_ids[:, 1:]
        size = self.label_size()[0] if hasattr(self, "label_size") else None
        check_token_ids(target_ids, "target_ids", size)
        length = int(target_ids.shape[1])
        # In a traced graph (an export) the batch size may be unknown.
        rows, target_rows = token_ids.shape[0], target_ids.shape[0]
        if None not in (rows, target_rows) and int(rows) != int(target_rows):
            raise ValueError(
                "`target_ids` must have one row per row of `token_ids` "
                f"({int(rows)}); received {int(target_rows)}."
            )
        if length == 0:
            return ops.zeros((ops.shape(target_ids)[0], 0), "float32")
        self.check_generate_input(token_ids, length)
        start_token_id = self._resolve_start(start_token_id)
        self._check_special_ids(start_token_id, end_token_id)
        key = ("score", length, start_token_id, end_token_id)
        key += (self._unsamplable(end_token_id),)

        def make_fn():
            def run(token_ids, target_ids):
                scores = self._score(
                    token_ids, target_ids, length, start_token_id, end_token_id
                )
                return _zero_rows_without_tokens(token_ids, scores)

            return run

        token_ids = ops.convert_to_tensor(token_ids, dtype="int32")
        target_ids = ops.convert_to_tensor(target_ids, dtype="int32")
        return run_compiled(self, key, make_fn, token_ids, target_ids)

    def _score(self, token_ids, target_ids, length, start_token_id, end_token_id):
        given, context, cache = self._loop_start()(token_ids, length, start_token_id)
        batch_size, given_length = ops.shape(given)
        sequence = ops.concatenate([given, target_ids], axis=1)  # (B, P + T)
        step = self._loop_step()
        allowed = self._allowed_ids(end_token_id)

        def body(index, carry):
            cache, scores = carry
            if current_policy().compiled:
                previous = ops.slice(sequence, [0, index], [batch_size, 1])
                following = ops.slice(sequence, [0, index + 1], [batch_size, 1])
            else:  # Eager, with a Python int index.
                previous = sequence[:, index : index + 1]
                following = sequence[:, index + 1 : index + 2]
            logits, cache = step(previous, index, context, cache)
            logits = ops.cast(logits, "float32")
            if allowed is not None:
                logits = ops.where(allowed, logits, masked_value("float32"))
            log_probs = ops.log_softmax(logits, axis=-1)  # (B, V)
            chosen = ops.take_along_axis(log_probs, following, axis=1)  # (B, 1)
            return cache, ops.slice_update(scores, [0, index + 1], chosen)

        scores = ops.zeros((batch_size, given_length + length), "float32")
        carry = (cache, scores)
        last = given_length + length - 1
        if current_policy().compiled:
            _, scores = ops.fori_loop(0, last, body, carry)
        else:
            for index in range(last):
                carry = body(index, carry)
            scores = carry[1]
        scores = scores[:, given_length:]  # (B, T)
        return ops.where(ops.equal(target_ids, 0), 0.0, scores)

    @property
    def default_start_token_id(self):
        """The id an output starts from when `start_token_id` is None."""
        return START_ID

    @property
    def unknown_token_id(self):
        """The id of the unknown token, which `suppress_unknown` rules out."""
        return UNK_ID

    def _resolve_start(self, start_token_id):
        if start_token_id is None:
            return self.default_start_token_id
        return start_token_id

    def _decoding_controls(
        self,
        token_ids,
        max_new_tokens,
        prefix_ids=None,
        min_new_tokens=None,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress_token_ids=None,
        suppress_unknown=False,
    ):
        """The call's controls, checked, or None when none is set.

        None keeps the plain loops: the controls' operations are added to
        a loop only where a control is set, so the plain loops run what
        they ran before the controls existed.
        """
        size = self.label_size()[0] if hasattr(self, "label_size") else None
        if prefix_ids is not None:
            prefix_ids = _prefix_rows(prefix_ids, token_ids, max_new_tokens, size)
        # Inside a TensorFlow function of the caller's (a SavedModel
        # signature) a minimum length or penalty may be a graph tensor, one
        # value a row, whose values are unknown: the signature checks them
        # in its graph.
        graph_values = {
            name: value
            for name, value in (
                ("min_new_tokens", min_new_tokens),
                ("repetition_penalty", repetition_penalty),
            )
            if tracing_tensorflow_function() and hasattr(value, "dtype")
        }
        check_control_values(
            max_new_tokens,
            None if "min_new_tokens" in graph_values else min_new_tokens,
            no_repeat_ngram_size,
            None if "repetition_penalty" in graph_values else repetition_penalty,
            suppress_unknown,
        )
        suppressed = check_token_id_list(suppress_token_ids, "suppress_token_ids", size)
        if suppress_unknown:
            suppressed += (self.unknown_token_id,)
        if suppressed and size is None:
            raise TypeError(
                f"{type(self).__name__} must state its output size with "
                "`label_size()` to suppress ids."
            )
        controls = DecodingControls(
            prefix_ids=prefix_ids,
            min_new_tokens=min_new_tokens,
            no_repeat_ngram_size=no_repeat_ngram_size,
            repetition_penalty=repetition_penalty,
            suppressed=None,
        )
        if suppressed:
            allowed = token_logits_mask(suppressed, size)  # (1, V)
            controls.suppressed = ops.logical_not(allowed)
        minimum_set = "min_new_tokens" in graph_values or bool(min_new_tokens)
        if controls.prefix_ids is None and not any(
            (
                minimum_set,
                controls.no_repeat_ngram_size,
                repetition_penalty is not None,
                suppressed,
            )
        ):
            return None
        if controls.prefix_ids is not None:
            controls.prefix_ids = ops.convert_to_tensor(controls.prefix_ids, "int32")
        controls.min_new_tokens = None
        if "min_new_tokens" in graph_values:
            controls.min_new_tokens = ops.cast(min_new_tokens, "int32")
        elif minimum_set:
            controls.min_new_tokens = ops.convert_to_tensor(min_new_tokens, "int32")
        if "repetition_penalty" in graph_values:
            controls.repetition_penalty = ops.cast(repetition_penalty, "float32")
        elif repetition_penalty is not None:
            controls.repetition_penalty = ops.convert_to_tensor(
                float(repetition_penalty), "float32"
            )
        return controls

    def _unsamplable(self, end_token_id):
        """`unsamplable_token_ids` but the end token, as a tuple of ints."""
        return tuple(int(i) for i in self.unsamplable_token_ids if i != end_token_id)

    def _allowed_ids(self, end_token_id):
        """The (1, V) mask of the ids decoding may choose, or None for all.

        V is the output size the model states with `label_size()`, which a
        model with `unsamplable_token_ids` must have.
        """
        unsamplable = self._unsamplable(end_token_id)
        if not unsamplable:
            return None
        if not hasattr(self, "label_size"):
            raise TypeError(
                f"{type(self).__name__} sets `unsamplable_token_ids` and must "
                "state its output size with `label_size()`."
            )
        return token_logits_mask(unsamplable, self.label_size()[0])

    def _check_options(
        self, beam_width, length_penalty, temperature=1.0, top_k=None, top_p=None
    ):
        """Refuses decoding options out of range, before anything is traced.

        Without a check a NaN temperature samples ids past the vocabulary
        (or only padding), a NaN length penalty scores every hypothesis
        NaN, and more beams than tokens fail inside the compiled search.
        `beam_width` and `top_k` are bounded by the output vocabulary of
        models that state it with `label_size()` (the zoo's).
        """
        size, bound = None, ""
        if hasattr(self, "label_size") and self.label_size():
            size, size_name = self.label_size()
            bound = "the " + size_name.replace("_", " ")
        check_int_in(beam_width, "beam_width", 1, size, bound, allow_none=False)
        check_finite(length_penalty, "length_penalty")
        check_finite(temperature, "temperature", above_zero=True)
        check_int_in(top_k, "top_k", 1, size, bound)
        check_top_p(top_p)

    def _check_special_ids(self, start_token_id, end_token_id):
        """Refuses start and end ids the model cannot output.

        An id beyond the output vocabulary would be looked up in the
        embedding table (an error on TensorFlow, NaN on JAX) or never be
        produced. Models that state their output size with `label_size()`
        (the zoo's) are checked against it.
        """
        bound = self.label_size() if hasattr(self, "label_size") else None
        size = bound[0] if bound else None
        check_token_id(start_token_id, "start_token_id", size)
        check_token_id(end_token_id, "end_token_id", size, allow_no_end=True)

    def _sample(
        self,
        token_ids,
        sampler,
        max_new_tokens,
        start_token_id,
        end_token_id,
        draw=None,
        seed=None,
        controls=None,
        return_scores=False,
    ):
        """The sampler's loop: the given ids are kept, the rest chosen.

        `draw`: None (the argmax of the logits), or the `temperature`,
        `top_k` and `top_p` of a seeded draw (`draws.gumbel_scores`) from
        the int32 scalar `seed`. `controls`: None or a `DecodingControls`
        whose tensors are the loop's inputs. With `return_scores`, the
        log-probability of each chosen id is written beside it, into a
        (B, P + M) buffer the loop carries with the model's cache, and
        `(ids, scores)` is returned.
        """
        loop = self._sampling_loop(
            token_ids,
            max_new_tokens,
            start_token_id,
            end_token_id,
            draw,
            seed,
            controls,
            return_scores,
        )
        found = run_sampler(
            sampler,
            loop.next_logits,
            loop.buffer,
            loop.cache,
            1,
            loop.kept,
            # Without an end token the loop runs `max_new_tokens` steps and
            # skips the per-step check of the whole buffer: a loop of static
            # trip count, which XLA:GPU runs without waiting on the host.
            None if loop.never_ends else [end_token_id],
            self,
            return_cache=return_scores,
        )
        buffer = found[0] if return_scores else found
        new = buffer[:, loop.given_length :]  # (B, M)
        if not loop.never_ends:
            new = zero_after_end(new, end_token_id)
        if not return_scores:
            return new
        scores = found[1][1][:, loop.given_length :]  # the scores the cache carried
        return new, ops.where(ops.equal(new, 0), 0.0, scores)

    def _sampling_loop(
        self,
        token_ids,
        max_new_tokens,
        start_token_id,
        end_token_id,
        draw,
        seed,
        controls,
        return_scores,
    ):
        """What the sampler's loop starts from: `_SamplingLoop`, the
        start of decoding run and `next_logits` made."""
        given, context, cache = self._loop_start()(
            token_ids, max_new_tokens, start_token_id
        )
        given_length = ops.shape(given)[1]
        buffer, kept = given_buffer(given, max_new_tokens)
        if return_scores:
            scores = ops.zeros(ops.shape(buffer), "float32")
            cache = (cache, scores)
        next_logits = self._next_logits(
            token_ids, context, given_length, end_token_id, draw, seed, controls,
            return_scores,
        )  # fmt: skip
        # A negative id is no token's, so it ends nothing, as None.
        never_ends = end_token_id is None or end_token_id < 0
        return _SamplingLoop(
            next_logits, buffer, cache, kept, given_length, never_ends, context
        )

    def _next_logits(
        self,
        token_ids,
        context,
        given_length,
        end_token_id,
        draw,
        seed,
        controls,
        return_scores,
    ):
        """The sampler's `next_logits(buffer, cache, index) -> (logits,
        None, cache)` over `context`: the model's step, its masks, the
        controls and the seeded draw."""
        batch_size = ops.shape(token_ids)[0]
        keys = None if draw is None else draws.row_keys(token_ids, seed)  # (B,)
        step = self._loop_step()
        allowed = self._allowed_ids(end_token_id)
        mask = token_masker(allowed)
        plain = controls is None and not return_scores

        def next_logits(buffer, cache, index):
            if current_policy().compiled:
                previous = ops.slice(buffer, [0, index - 1], [batch_size, 1])
            else:  # Eager, with a Python int index: a view, no `keras.ops` call.
                previous = buffer[:, index - 1 : index]  # (B, 1)
            if plain:
                logits, cache = step(previous, index - 1, context, cache)
                logits = mask(logits)  # (B, V)
                if draw is not None:
                    logits = draws.gumbel_scores(logits, keys, index, seed, **draw)
                return logits, None, cache
            model_cache, scores = cache if return_scores else (cache, None)
            logits, model_cache = step(previous, index - 1, context, model_cache)
            forcing = None
            if controls is None:
                logits = ops.cast(mask(logits), "float32")
            else:
                logits, forcing = controls.apply(
                    logits, buffer, index, index - given_length, allowed, end_token_id
                )
            choice = logits  # (B, V)
            if draw is not None:
                choice = draws.gumbel_scores(logits, keys, index, seed, **draw)
            if forcing is not None:
                choice = ops.where(forcing, masked_value("float32"), choice)
            if not return_scores:
                return choice, None, model_cache
            # The sampler's own choice, made here too to read its score.
            distribution = logits if draw is None else logits / draw["temperature"]
            log_probs = ops.log_softmax(distribution, axis=-1)  # (B, V)
            chosen = first_argmax(choice)[:, None]  # (B, 1)
            chosen_score = ops.take_along_axis(log_probs, chosen, axis=1)
            scores = ops.slice_update(scores, [0, index], chosen_score)
            return choice, None, (model_cache, scores)

        return next_logits

    def _beam_search(
        self,
        token_ids,
        max_new_tokens,
        beam_width,
        length_penalty,
        num_return,
        start_token_id,
        end_token_id,
        controls=None,
        return_scores=False,
    ):
        given, context, cache = self._loop_start()(
            token_ids, max_new_tokens, start_token_id
        )
        batch_size, given_length = ops.shape(given)
        decode = self._loop_step()

        # All given ids but the last go through the cache once, shared by
        # the beams; the beams start from the last one.
        def feed(index, cache):
            # `[:, index][:, None]`, not `[:, index : index + 1]`: under XLA
            # a slice from a traced index has a dynamic size (<= 1) that the
            # cache's stack cannot take.
            previous = ops.expand_dims(given[:, index], 1)
            return decode(previous, index, context, cache)[1]

        # A known length (JAX, PyTorch) is unrolled, which leaves the beams'
        # loop the only one XLA compiles.
        if isinstance(given_length, int):
            for index in range(given_length - 1):
                cache = feed(index, cache)
        else:  # TensorFlow traces for prompts of any length.
            cache = ops.fori_loop(0, given_length - 1, feed, cache)
        context, cache = keras.tree.map_structure(
            lambda x: tile_beams(x, beam_width), (context, cache)
        )

        allowed = self._allowed_ids(end_token_id)
        mask = token_masker(allowed)

        def step(previous, index, cache):
            logits, cache = decode(previous, index + given_length - 1, context, cache)
            # With controls, `log_probs` below masks what the model rules out.
            return (mask(logits) if controls is None else logits), cache

        def reorder(cache, rows):
            return keras.tree.map_structure(lambda x: take_rows(x, rows), cache)

        log_probs = None
        if controls is not None:
            controls = controls.tiled(lambda x: tile_beams(x, beam_width))
            # The beams' history starts with the given ids (a language
            # model's prompt), as the sampler's buffer does.
            head = tile_beams(given[:, :-1], beam_width)  # (B * K, P - 1)

            def log_probs(logits, tokens, index):
                history = ops.concatenate([head, tokens], axis=1)
                logits, forcing = controls.apply(
                    logits,
                    history,
                    index + given_length,
                    index,
                    allowed,
                    end_token_id,
                )
                values = ops.log_softmax(logits, axis=-1)
                if forcing is None:
                    return values
                return ops.where(forcing, masked_value("float32"), values)

        return run_beam_search(
            step,
            reorder,
            cache,
            batch_size,
            max_new_tokens,
            given[:, -1],
            end_token_id,
            beam_width=beam_width,
            length_penalty=length_penalty,
            num_return=num_return,
            log_probs_fn=log_probs,
            return_token_scores=return_scores,
        )


def _sampler_and_draw(strategy, temperature, top_k, top_p, seed):
    """`generate`'s and `stream`'s sampler, and the options of its seeded
    draw (None: greedy), the seed checked."""
    check_seed(seed)
    sampler = make_sampler(strategy, temperature, top_k, top_p)
    if strategy != "sample":
        return sampler, None
    return sampler, {"temperature": temperature, "top_k": top_k, "top_p": top_p}


def _prefix_rows(prefix_ids, token_ids, max_new_tokens, size):
    """`prefix_ids` checked and padded to (B, M) with zeros.

    Inside a TensorFlow function of the caller's (a SavedModel
    signature) the prefix is a graph tensor whose values are unknown:
    it is padded or cut to M in the graph, its ids checked where they
    were made.
    """
    if tracing_tensorflow_function() and hasattr(prefix_ids, "dtype"):
        prefix = ops.cast(prefix_ids, "int32")
        zeros = ops.zeros((ops.shape(prefix)[0], max_new_tokens), "int32")
        return ops.concatenate([prefix, zeros], axis=1)[:, :max_new_tokens]
    return check_prefix_ids(prefix_ids, int(token_ids.shape[0]), max_new_tokens, size)


def _at_least_one_position(token_ids):
    """`(token_ids, False)`, or one padding position per row and True when
    `token_ids` has no position.

    A (B, 0) source or prompt has nothing to decode from (an RNN over no
    step fails inside the compiled loop); its answer is that of a row of
    padding, and one padding position lets the model's own checks of the
    ids and of `max_new_tokens` run as for any input.
    """
    if not hasattr(token_ids, "shape") or len(token_ids.shape) != 2:
        return token_ids, False  # `check_generate_input` names what is wrong.
    if token_ids.shape[1] != 0:
        return token_ids, False
    dtype = keras.backend.standardize_dtype(token_ids.dtype)
    return ops.zeros((ops.shape(token_ids)[0], 1), dtype=dtype), True


def _answer_rows_without_tokens(token_ids, end_token_id, ids, scores=None):
    """`ids` (and `scores`) with every row of `token_ids` that holds no
    token answered by the end token and zeros, scored 0.

    Decoding from nothing runs the model on padding only: cross attention
    without a key, whose output is no translation of anything (ids
    follow with padding in between). The answer is defined instead: an
    empty output, as an empty sentence gets.

    Args:
        token_ids: (B, S) int32 ids, S >= 1.
        end_token_id: int, or None or a negative id for no end token
            (the answer is then zeros).
        ids: (B, M) or (B, R, M) int32 ids.
        scores: None or (B, R) floats.

    Returns:
        `ids`, or `(ids, scores)` when `scores` is given.
    """
    empty = ops.logical_not(ops.any(padding_mask(token_ids), axis=1))
    length = ops.shape(ids)[-1]
    end = 0 if end_token_id is None or end_token_id < 0 else end_token_id
    answer = ops.where(ops.arange(length) == 0, end, 0)  # (M,)
    rows = ops.reshape(empty, (-1,) + (1,) * (len(ids.shape) - 1))  # (B, 1[, 1])
    ids = ops.where(rows, ops.cast(answer, ids.dtype), ids)
    if scores is None:
        return ids
    return ids, _zero_rows_without_tokens(token_ids, scores)


def _zero_rows_without_tokens(token_ids, values):
    """`values` (B, ...) with every row of `token_ids` that holds no token
    at 0: its answer is defined, not decoded (`_answer_rows_without_tokens`)."""
    empty = ops.logical_not(ops.any(padding_mask(token_ids), axis=1))
    rows = ops.reshape(empty, (-1,) + (1,) * (len(values.shape) - 1))
    return ops.where(rows, ops.zeros_like(values), values)


class _SamplingLoop(typing.NamedTuple):
    """What `GenerativeModel._sampling_loop` makes: the loop's
    `next_logits(buffer, cache, index)`, its buffer, cache and kept ids,
    the number of given ids before the new ones, whether no end token
    stops it, and the context `next_logits` reads."""

    next_logits: typing.Callable
    buffer: typing.Any
    cache: typing.Any
    kept: typing.Any
    given_length: typing.Any
    never_ends: bool
    context: typing.Any

"""Text in and out of the causal and the masked language model.

Shape legend:
    B: batch size
    P: prompt length
    L: max_length
    T: sequence (window) length

Both preprocessors tokenize with the one TensorFlow function `tokenize`
(normalised, see `normalize_graph`) on every path.

A `LanguageModelPreprocessor` cuts the training stream into windows
(`dataset`) and turns prompts into the ids `model.generate` continues
(`generate_preprocess`), in process and in the exported graph alike, by
one rule:

- a prompt keeps its last `max_length - max_new_tokens` tokens (with no
  `max_new_tokens`, its last `max_length - 1`), so that prompt and
  continuation fit in `max_length`; a `TruncationWarning` in Python, a
  `truncated` flag in the graph, says which prompts were cut;
- a blank prompt (no token at all) starts from `[START]`;
- prompts of one batch are left-padded with `[END]`, the separator the
  model saw between texts, to the longest.

A `MaskedLanguageModelPreprocessor` cuts and pads texts to `max_length`
and masks them for BERT's fill-in task (`dataset`).
"""

import numpy as np
import tensorflow as tf

from keras_seq.text.dataset_ops import (
    epoch_numbers,
    map_without_autograph,
    ordered_slices,
    tokenize_all,
)
from keras_seq.text.pipelines import _check_size
from keras_seq.text.preprocessor import SingleVocabularyPreprocessor, warn_cut
from keras_seq.text.vocabulary import (
    END_ID,
    MASK_ID,
    PAD_ID,
    START_ID,
    _check_texts,
)


class LanguageModelPreprocessor(SingleVocabularyPreprocessor):
    """The tokenizer, `max_length` and window length of a causal language model.

    Args:
        tokenizer: a tokenizer of `make_tokenizer`.
        max_length: int >= 2, the model's longest text, prompt and
            continuation together.
        sequence_length: int in [1, max_length], the tokens of a training
            window; defaults to `max_length`.

    Example:

    >>> from keras_seq.text import RESERVED_TOKENS, make_tokenizer
    >>> vocabulary = list(RESERVED_TOKENS) + ["to", "be", "or", "not"]
    >>> preprocessor = LanguageModelPreprocessor(make_tokenizer(vocabulary), 4)
    >>> prompts = tf.constant(["to be or not", ""])
    >>> preprocessor.generate_preprocess(prompts, max_new_tokens=2).numpy()
    array([[7, 8],
           [3, 2]], dtype=int32)
    """

    minimum_length = 2

    def __init__(self, tokenizer, max_length, sequence_length=None):
        super().__init__(tokenizer, max_length)
        if sequence_length is None:
            sequence_length = self.max_length
        sequence_length = _check_size(sequence_length, "sequence_length")
        if sequence_length > self.max_length:
            raise ValueError(
                f"`sequence_length` must be at most max_length={self.max_length}; "
                f"received {sequence_length}."
            )
        self.sequence_length = sequence_length

    def settings(self):
        return {**super().settings(), "sequence_length": self.sequence_length}

    # Prompts.

    def prompt_limit(self, max_new_tokens=None):
        """The most tokens a prompt keeps: `max_length - max_new_tokens`.

        Args:
            max_new_tokens: int in [1, max_length - 1], or `None` for 1 (a
                prompt leaves room for at least one new token).

        Raises:
            ValueError: for `max_new_tokens` out of its range.
        """
        if max_new_tokens is None:
            max_new_tokens = 1
        if isinstance(max_new_tokens, np.integer):
            max_new_tokens = int(max_new_tokens)
        if (
            isinstance(max_new_tokens, bool)
            or not isinstance(max_new_tokens, int)
            or not 1 <= max_new_tokens <= self.max_length - 1
        ):
            raise ValueError(
                f"`max_new_tokens` must be in [1, {self.max_length - 1}] (below "
                f"max_length={self.max_length}); received {max_new_tokens}."
            )
        return self.max_length - max_new_tokens

    def _prompt_rows(self, ids, limit):
        """Ragged (B, None) prompt ids -> (B, P) by the module's rule."""
        ids = ids[:, -limit:]
        blank = tf.equal(ids.row_lengths(), 0)  # (B,)
        starts = tf.ragged.boolean_mask(
            tf.fill(tf.stack([ids.nrows(), 1]), START_ID), blank[:, None]
        )  # (B, 0 or 1)
        ids = tf.concat([tf.cast(starts, ids.dtype), ids], axis=1)
        # Left-padded: reversed, padded on the right, reversed back.
        rows = tf.reverse(ids, axis=[1]).to_tensor(END_ID)  # (B, P)
        return tf.reverse(rows, axis=[1])

    def generate_preprocess(self, prompts, max_new_tokens=None):
        """(B,) `tf.string` prompts -> (B, P) int32 ids for `model.generate`.

        In graph, by the module's rule (cut to `prompt_limit`, a blank
        prompt as `[START]`, left-padded with `[END]`).
        """
        return self._prompt_rows(
            self.tokenize(prompts), self.prompt_limit(max_new_tokens)
        )

    def truncated(self, prompts, max_new_tokens=None):
        """(B,) `tf.string` -> (B,) bool: the prompts `generate_preprocess` cuts."""
        lengths = self.tokenize(prompts).row_lengths()
        return lengths > self.prompt_limit(max_new_tokens)

    def prompt_ids(self, prompts, max_new_tokens=None):
        """Python prompts -> (B, P) int32 NumPy ids, as `generate_preprocess`.

        One `TruncationWarning` says how many prompts were cut.
        """
        prompts = _check_texts(prompts)
        limit = self.prompt_limit(max_new_tokens)
        ids = self._tokenize_texts(tf.constant(prompts, tf.string))
        warn_cut(
            int(np.sum(ids.row_lengths().numpy() > limit)),
            len(prompts),
            "prompts",
            f"{limit} tokens max_length={self.max_length} leaves for "
            f"{self.max_length - limit} new tokens",
            how="each kept its last tokens",
        )
        return self._prompt_rows(ids, limit).numpy()

    # Training.

    def dataset(
        self,
        texts,
        batch_size,
        shuffle=False,
        seed=0,
        epoch=None,
        drop_remainder=False,
        separator_id=END_ID,
    ):
        """Windows of a token stream for a causal language model.

        The texts are tokenized and concatenated into one stream, each
        followed by `separator_id` (`[END]`, so a model learns where a text
        ends and `generate` can stop there). The stream is cut into windows
        of `sequence_length + 1` tokens that start every `sequence_length`
        tokens, so consecutive windows share one token and every token but
        the first is a label exactly once; the last, partial window is
        dropped:

            window      w0 w1 w2 w3 w4
            token_ids   w0 w1 w2 w3
            labels      w1 w2 w3 w4

        Args:
            texts: a list of strings (lines, paragraphs or whole works).
            batch_size: int.
            shuffle: bool, shuffle the windows every epoch.
            seed: int, the shuffle seed.
            epoch: optional `tf.Variable` holding the epoch number (see
                `keras_seq.callbacks.ShuffleEpoch`); each epoch's order is
                then a function of `(seed, epoch)`, so a resumed run
                replays it. Without one, the order follows the passes made
                so far.
            drop_remainder: bool, drop the last, incomplete batch.
            separator_id: int or `None`, the id put after each text.

        Returns:
            A `tf.data.Dataset` of `(token_ids, labels)`, both (B, T) int32.
        """
        texts = _check_texts(texts)
        batch_size = _check_size(batch_size, "batch_size")
        length = self.sequence_length
        _, token_ids = tokenize_all(texts, self.tokenize)
        if separator_id is not None:
            separators = tf.fill([len(texts), 1], tf.constant(separator_id, "int32"))
            token_ids = tf.concat([token_ids, separators], axis=1)
        stream = token_ids.flat_values.numpy()
        num_windows = (len(stream) - 1) // length
        if num_windows < 1:
            raise ValueError(
                f"`texts` hold {len(stream)} tokens; a window of "
                f"`sequence_length` + 1 = {length + 1} needs more."
            )
        starts = np.arange(num_windows)[:, None] * length  # (W, 1)
        windows = stream[starts + np.arange(length + 1)]  # (W, T + 1)
        dataset = ordered_slices(
            (windows[:, :-1], windows[:, 1:]), shuffle, seed, epoch
        )
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
        return dataset.prefetch(tf.data.AUTOTUNE)


class MaskedLanguageModelPreprocessor(SingleVocabularyPreprocessor):
    """The tokenizer, `max_length` and masking of a masked language model.

    Args:
        tokenizer: a tokenizer of `make_tokenizer`.
        max_length: int >= 1; every text is cut and padded to it.
        mask_rate: float in (0, 1), the share of tokens selected for
            prediction.
    """

    def __init__(self, tokenizer, max_length, mask_rate=0.15):
        super().__init__(tokenizer, max_length)
        if isinstance(mask_rate, bool) or not (
            isinstance(mask_rate, (int, float)) and 0.0 < mask_rate < 1.0
        ):
            raise ValueError(f"`mask_rate` must be in (0, 1); received {mask_rate}.")
        self.mask_rate = float(mask_rate)

    def settings(self):
        return {**super().settings(), "mask_rate": self.mask_rate}

    def dataset(
        self, texts, batch_size, seed=0, shuffle=False, epoch=None,
        drop_remainder=False,
    ):  # fmt: skip
        """Batches for masked language modelling (BERT's fill-in task).

        Each text has `ceil(mask_rate * n)` of its n tokens selected (so
        short texts are masked slightly more often than `mask_rate`); 80% of
        them are replaced by `[MASK]`, 10% by a random token and 10% are left
        unchanged (Devlin et al., 2019). The draws are a function of `(seed,
        epoch, batch)`: a shuffled dataset masks anew every epoch (dynamic
        masking, Liu et al., 2019) and replays an epoch's masks when a run
        resumes; an unshuffled one (evaluation) masks the same way on every
        pass, so its figures compare across epochs and repeat.

        Args:
            texts: a list of strings.
            batch_size: int.
            seed: int, the seed of the order and of the masks.
            shuffle: bool, shuffle the texts and draw new masks every
                epoch.
            epoch: optional `tf.Variable` holding the epoch number (see
                `keras_seq.callbacks.ShuffleEpoch`).
            drop_remainder: bool, drop the last, incomplete batch.

        Returns:
            A `tf.data.Dataset` of `(token_ids, labels)`, both (B, L)
            int32: `labels` holds the original id at selected positions and
            0 (ignored by the loss) everywhere else.
        """
        batch_size = _check_size(batch_size, "batch_size")
        _, token_ids = self._tokenize_all(texts)
        max_length, rate, size = self.max_length, self.mask_rate, self.vocabulary_size
        if shuffle:
            numbers = epoch_numbers(epoch).flat_map(
                lambda number: tf.data.Dataset.from_tensors(number).repeat()
            )
        else:
            numbers = tf.data.Dataset.from_tensors(tf.constant(0, "int64")).repeat()

        def mask(index, batch, number):
            ids = batch.to_tensor(default_value=PAD_ID, shape=[None, max_length])
            pass_seed = tf.stack([tf.constant(seed, "int64"), number])
            batch_seed = tf.random.experimental.stateless_fold_in(pass_seed, index)
            return mask_tokens(ids, batch_seed, rate, size)

        dataset = ordered_slices(token_ids, shuffle, seed, epoch)
        dataset = dataset.ragged_batch(batch_size, drop_remainder=drop_remainder)
        batches = dataset.cardinality()
        dataset = tf.data.Dataset.zip(dataset.enumerate(), numbers)
        # `flat_map` hides the number of batches (see `ordered_slices`).
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches))
        dataset = map_without_autograph(
            dataset, lambda indexed, number: mask(*indexed, number)
        )
        return dataset.prefetch(tf.data.AUTOTUNE)


def mask_tokens(ids, seed, mask_rate, vocabulary_size):
    """BERT's masking of one batch, drawn from a stateless `seed`.

    `keras_hub.layers.MaskedLMMaskGenerator` does the same with stateful
    random ops and no seed: inside a parallel `tf.data` map its draws
    change from run to run whatever the global seed, so neither an
    evaluation nor a resumed run could be repeated.

    Args:
        ids: (B, L) int32 token ids, padded with `PAD_ID`.
        seed: (2,) int64, the stateless seed of the batch.
        mask_rate: float, the share of tokens selected.
        vocabulary_size: int, the range of the random replacements.

    Returns:
        `(inputs, labels)`, (B, L) int32 each: `labels` holds the original
        id at the selected positions and 0 elsewhere.
    """
    selection_seed, choice_seed, token_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 3)
    )
    shape = tf.shape(ids)
    selectable = (
        (ids != PAD_ID) & (ids != START_ID) & (ids != END_ID) & (ids != MASK_ID)
    )
    # float32, as tensorflow_text's `RandomItemSelector` counts.
    quota = tf.math.ceil(tf.reduce_sum(tf.cast(selectable, "float32"), 1) * mask_rate)
    # A random rank among each text's selectable tokens; the `quota` lowest
    # are selected.
    scores = tf.where(
        selectable, tf.random.stateless_uniform(shape, selection_seed), 2.0
    )
    ranks = tf.argsort(tf.argsort(scores, axis=1), axis=1)
    selected = selectable & (ranks < tf.cast(quota, "int32")[:, None])
    choice = tf.random.stateless_uniform(shape, choice_seed)
    random_ids = tf.random.stateless_uniform(
        shape, token_seed, minval=0, maxval=vocabulary_size, dtype="int32"
    )
    # A random [PAD] inside a text would read as padding.
    random_ids = tf.where(random_ids == PAD_ID, MASK_ID, random_ids)
    replaced = tf.where(choice < 0.8, MASK_ID, tf.where(choice < 0.9, random_ids, ids))
    inputs = tf.where(selected, replaced, ids)
    labels = tf.where(selected, ids, tf.zeros_like(ids))
    return inputs, labels


def make_language_model_dataset(texts, tokenizer, sequence_length, batch_size,
                                **options):  # fmt: skip
    """`LanguageModelPreprocessor(...).dataset(texts, batch_size, **options)`.

    Args:
        texts: a list of strings.
        tokenizer: a tokenizer of `make_tokenizer`.
        sequence_length: int, T, the tokens of a window.
        batch_size: int.
        **options: `shuffle`, `seed`, `epoch`, `drop_remainder`,
            `separator_id`, as `LanguageModelPreprocessor.dataset` takes them.

    Returns:
        A `tf.data.Dataset` of `(token_ids, labels)`, both (B, T) int32.
    """
    sequence_length = _check_size(sequence_length, "sequence_length")
    preprocessor = LanguageModelPreprocessor(
        tokenizer, max(sequence_length, 2), sequence_length
    )
    return preprocessor.dataset(texts, batch_size, **options)


def make_masked_language_model_dataset(texts, tokenizer, max_length, batch_size,
                                       mask_rate=0.15, **options):  # fmt: skip
    """`MaskedLanguageModelPreprocessor(...).dataset(texts, batch_size, **options)`.

    Args:
        texts: a list of strings.
        tokenizer: a tokenizer of `make_tokenizer`.
        max_length: int; every batch is padded to this length and longer
            texts are cut (one warning says how many).
        batch_size: int.
        mask_rate: float in (0, 1), the share of tokens selected.
        **options: `seed`, `shuffle`, `epoch`, `drop_remainder`.

    Returns:
        The `tf.data.Dataset` of `MaskedLanguageModelPreprocessor.dataset`.
    """
    preprocessor = MaskedLanguageModelPreprocessor(tokenizer, max_length, mask_rate)
    return preprocessor.dataset(texts, batch_size, **options)

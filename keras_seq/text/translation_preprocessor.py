"""Text in and out of a translator, as one object (DESIGN.md "Text in and out").

Shape legend:
    B: batch size
    S: source length
    T: target length
    W: a bucket length

A `TranslationPreprocessor` holds what every path from sentences to a
translator and back must agree on: the source and target tokenizers (one
shared vocabulary when the model ties its embeddings), the longest sequence
(`max_length`), the length buckets and detokenization. The training
pipeline (`dataset`), decoding in Python (`decode_batches`) and the
exported graph (`generate_preprocess`) all tokenize with the one TensorFlow
function `tokenize_source`, so a sentence gets the same ids on every path;
each path that cuts a sentence says so (a `TruncationWarning` in Python, a
`truncated` flag in the exported graph).

One set of buckets serves training and decoding: batches of sources are
padded to the smallest bucket that holds their longest sentence, so a
compiled model meets at decoding the few shapes it met in training.

    <dir>/source_vocabulary.txt   the vocabularies (the same tokens twice
    <dir>/target_vocabulary.txt   when shared), one token per line
    <dir>/preprocessor.json       max_length, bucket lengths, lowercasing
    <dir>/source.spm              SentencePiece only: the two models (the
    <dir>/target.spm              same bytes twice when one serves both)

`save` writes these files and `load` reads them; a directory written before
`preprocessor.json` existed loads with the model's `max_length` and the
default buckets, and one whose `preprocessor.json` names no `"tokenizer"`
is WordPiece's.

With `source_end` every source that has a token ends in `[END]`, as
Marian's tokenizer ends each source with `</s>`; a source cut to
`length_limit` keeps it (its first `length_limit - 1` tokens, then
`[END]`: `MarianTokenizer(truncation=True, max_length=length_limit)`). A
blank source stays without tokens, so every path still answers it with an
empty string.
"""

import os

import keras_hub
import numpy as np
import tensorflow as tf

from keras_seq import defaults
from keras_seq.text.dataset_ops import (
    map_without_autograph,
    ordered_slices,
    strings_graph,
    tokenize_all,
    warn_truncated,
)
from keras_seq.text.pipelines import _bucket, _check_size, _drop_tokens
from keras_seq.text.preprocessor import (  # SETTINGS_FILE: read by run dirs.
    SETTINGS_FILE,  # noqa: F401
    Preprocessor,
    check_tokenizer,
    warn_cut,
)
from keras_seq.text.sentencepiece_tokenizer import (
    MODEL_FILES,
    SentencePieceTokenizer,
    read_model,
    write_model,
)
from keras_seq.text.sentencepiece_tokenizer import NAME as SENTENCEPIECE
from keras_seq.text.tokenizers import (
    detokenize,
    detokenize_graph,
    make_tokenizer,
    tokenize_graph,
)
from keras_seq.text.vocabulary import (
    END_ID,
    PAD_ID,
    START_ID,
    UNK_ID,
    _check_texts,
)
from keras_seq.validation import check_rate

SOURCE_VOCABULARY_FILE = "source_vocabulary.txt"
TARGET_VOCABULARY_FILE = "target_vocabulary.txt"

# Bucket lengths start here and grow by this factor, rounded up to a multiple
# of 8 (see `default_bucket_boundaries`).
_FIRST_BUCKET = 8
_BUCKET_GROWTH = 1.5
# The longest bucket of a model without a `max_length` of its own (an RNN),
# unless the buckets are given.
UNBOUNDED_LENGTH = defaults.UNBOUNDED_LENGTH


def default_bucket_boundaries(max_length):
    """Bucket lengths derived from `max_length`, for training and decoding.

    Lengths start at 8 and grow by a factor of 1.5, each rounded up to a
    multiple of 8, and end at `max_length`: 8, 16, 24, 40, 64 for
    `max_length=64`; 8, 16, 24, 40, 64, 96, 128 for 128. A batch is padded to
    its bucket's length, so padding wastes at most about a third of a batch,
    and a model compiles at most this many shapes.

    Args:
        max_length: int, the longest sequence: the model's `max_length`.

    Returns:
        A list of increasing ints ending at `max_length`.

    Example:

    >>> default_bucket_boundaries(64)
    [8, 16, 24, 40, 64]
    """
    boundaries = []
    length = _FIRST_BUCKET
    while length < max_length:
        boundaries.append(length)
        length = -(-int(length * _BUCKET_GROWTH) // 8) * 8  # Round up to 8.
    return boundaries + [max_length]


class TranslationPreprocessor(Preprocessor):
    """Tokenizers, `max_length`, length buckets and detokenization of a translator.

    Args:
        source_tokenizer: a tokenizer of `make_tokenizer` for the source.
        target_tokenizer: the target's, or `None` for the source's (one
            shared vocabulary, as a model that ties its embeddings needs).
        max_length: int >= 2 or `None`: the model's longest source and
            decoder sequence. `None` for a model without one (the RNN
            translator): sequences are then cut to the longest bucket.
        bucket_boundaries: increasing ints, the lengths batches are padded
            to (`max_length` is added when missing). Defaults to
            `default_bucket_boundaries(max_length or UNBOUNDED_LENGTH)`.
        source_end: bool, end every source with `[END]` (see the module
            docstring); a Marian model reads its sources so.

    Tokenizers are of `make_tokenizer` (WordPiece) or both
    `SentencePieceTokenizer`s (`make_sentencepiece_tokenizer`).

    Example:

    >>> from keras_seq.text import RESERVED_TOKENS
    >>> vocabulary = list(RESERVED_TOKENS) + ["Hallo", "hi", "!"]
    >>> preprocessor = TranslationPreprocessor(make_tokenizer(vocabulary), max_length=8)
    >>> preprocessor.generate_preprocess(tf.constant(["Hallo!"])).numpy()
    array([[5, 7, 0, 0, 0, 0, 0, 0]], dtype=int32)
    >>> preprocessor.detokenize([[2, 6, 7, 3]])
    ['hi!']
    """

    vocabulary_files = {
        "source_vocabulary": SOURCE_VOCABULARY_FILE,
        "target_vocabulary": TARGET_VOCABULARY_FILE,
    }

    def __init__(
        self,
        source_tokenizer,
        target_tokenizer=None,
        max_length=None,
        bucket_boundaries=None,
        source_end=False,
    ):
        target_tokenizer = target_tokenizer or source_tokenizer
        check_tokenizer(source_tokenizer, "source_tokenizer")
        check_tokenizer(target_tokenizer, "target_tokenizer")
        kinds = [_kind(t) for t in (source_tokenizer, target_tokenizer)]
        if kinds[0] != kinds[1]:
            raise ValueError(
                "`source_tokenizer` and `target_tokenizer` must be of one kind; "
                f"received {kinds[0]} and {kinds[1]}."
            )
        normalization = [
            (t.lowercase, t.strip_accents) for t in (source_tokenizer, target_tokenizer)
        ]
        if normalization[0] != normalization[1]:
            raise ValueError(
                "`source_tokenizer` and `target_tokenizer` must lowercase and "
                "strip accents alike; received (lowercase, strip_accents) "
                f"{normalization[0]} and {normalization[1]}."
            )
        if max_length is not None:
            max_length = _check_size(max_length, "max_length", minimum=2)
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.source_end = bool(source_end)
        self.max_length = max_length
        self.bucket_boundaries = _check_boundaries(bucket_boundaries, max_length)
        # Traced once: eagerly, keras-hub tokenizes on a slower Python path.
        self._tokenize_sources = strings_graph(self.tokenize_source)

    @property
    def length_limit(self):
        """The longest source and decoder sequence: the last bucket length."""
        return self.bucket_boundaries[-1]

    @property
    def shared(self):
        """Whether both sides use one vocabulary."""
        source = self.source_tokenizer.get_vocabulary()
        return source == self.target_tokenizer.get_vocabulary()

    # Tokenization.

    def tokenize_source(self, sentences):
        """(B,) `tf.string` -> ragged (B, None) int32 source ids, nothing cut.

        TensorFlow ops only: the one tokenization of every path (the
        pipeline, Python decoding and the exported graph). With
        `source_end`, each row that has a token ends in `[END]`.
        """
        ids = tokenize_graph(self.source_tokenizer, sentences)
        return _append_end(ids) if self.source_end else ids

    def _cut_source(self, ids):
        """Ragged (B, None) source ids cut to `length_limit`; with
        `source_end` a cut row ends in `[END]` again."""
        limit = self.length_limit
        cut = ids[:, :limit]
        if not self.source_end:
            return cut
        over = ids.row_lengths() > limit  # (B,)
        last = tf.boolean_mask(cut.row_limits() - 1, over)[:, tf.newaxis]
        values = tf.tensor_scatter_nd_update(
            cut.flat_values, last, tf.fill([tf.shape(last)[0]], END_ID)
        )
        return cut.with_flat_values(values)

    def tokenize_target(self, sentences):
        """(B,) `tf.string` -> ragged (B, None) int32 target ids, nothing cut."""
        return tokenize_graph(self.target_tokenizer, sentences)

    def _pad_to_bucket(self, ids):
        """Ragged (B, None) ids -> (B, W): cut, padded to the smallest bucket.

        W is the smallest bucket length that holds the longest row (and at
        least the first bucket, so a batch of blank sentences has a shape).
        """
        ids = self._cut_source(ids)
        longest = tf.reduce_max(tf.concat([ids.row_lengths(), [1]], 0))
        boundaries = tf.constant(self.bucket_boundaries, "int64")
        width = tf.gather(boundaries, tf.searchsorted(boundaries, [longest]))[0]
        return ids.to_tensor(PAD_ID, shape=tf.stack([ids.nrows(), width]))

    def generate_preprocess(self, sentences):
        """(B,) `tf.string` -> (B, W) int32 source ids for `model.generate`.

        In graph: cut to `length_limit`, 0-padded to a bucket length. A
        sentence without tokens gives a row of padding.
        """
        return self._pad_to_bucket(self.tokenize_source(sentences))

    def truncated(self, sentences):
        """(B,) `tf.string` -> (B,) bool: which sources `generate_preprocess` cuts."""
        lengths = self.tokenize_source(sentences).row_lengths()
        return lengths > self.length_limit

    def decode_batches(self, texts, batch_size):
        """Batches of source ids for decoding Python strings.

        Sentences are sorted by length so that each batch pads little, and
        each batch holds a power of two rows, at most `batch_size` (filler
        rows of one `[UNK]` complete it): the compiled decoding loop then
        exists in few shapes per bucket, and one sentence decodes as one
        row instead of `batch_size`. A `TruncationWarning` says how many
        sentences were cut to `length_limit`.

        Args:
            texts: a list of str.
            batch_size: int, the rows of each batch.

        Yields:
            `(positions, ids, blank)`: the indices into `texts` of the
            batch's real rows, their ids (rows, W) int32 (the real rows
            first), and a bool array, True for a sentence without
            tokens.
        """
        texts = _check_texts(texts)
        batch_size = _check_size(batch_size, "batch_size")
        ids = self._tokenize_sources(tf.constant(texts, tf.string))
        lengths = ids.row_lengths().numpy()
        self._report(lengths)
        lengths = np.minimum(lengths, self.length_limit)
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(texts), batch_size):
            positions = order[start : start + batch_size]
            batch = self._pad_to_bucket(tf.gather(ids, positions)).numpy()
            rows = min(batch_size, 1 << (len(positions) - 1).bit_length())
            filler = np.zeros((rows - len(positions), batch.shape[1]), "int32")
            filler[:, 0] = UNK_ID
            yield positions, np.concatenate([batch, filler]), lengths[positions] == 0

    def _report(self, lengths):
        if self.max_length is None:
            limit = f"longest length bucket ({self.length_limit} tokens)"
        else:
            limit = f"model's max_length ({self.max_length} tokens)"
        cut = int(np.sum(lengths > self.length_limit))
        warn_cut(cut, len(lengths), "sentences", limit)

    def detokenize(self, ids):
        """Target ids (B, T) -> a list of B `str`s (see `detokenize`)."""
        return detokenize(self.target_tokenizer, ids)

    def detokenize_graph(self, ids):
        """Target ids (B, T) -> (B,) `tf.string`, TensorFlow ops only."""
        return detokenize_graph(self.target_tokenizer, ids)

    # Training.

    def dataset(
        self,
        pairs,
        batch_tokens=defaults.BATCH_TOKENS,
        batch_size=None,
        shuffle=False,
        seed=0,
        training=False,
        epoch=None,
        token_dropout=0.0,
        subword_sampling=0.0,
    ):
        """Batches of (source, target) pairs for teacher forcing (Sec. 7.5).

        The target is packed as `[START] ids [END]`; the decoder reads it
        without its last token and learns to predict it without its first,
        so all target positions are trained at once:

            target          [START] ich  bin  da   [END]
            decoder input   [START] ich  bin  da
            labels          ich     bin  da   [END]

        Pairs are grouped by length (`bucket_by_sequence_length`) and every
        batch is padded to its bucket's length, so each bucket has one
        shape. Sentences longer than `length_limit` tokens are truncated (a
        target keeps its `[END]`) and one `TruncationWarning` says how many
        pairs were.

        Args:
            pairs: a list of `(source, target)` string pairs.
            batch_tokens: int, the token budget of a batch: a bucket of
                length L holds `max(1, batch_tokens // L)` pairs.
            batch_size: int, a fixed number of pairs per batch instead of
                `batch_tokens`.
            shuffle: bool, shuffle the pairs every epoch (before bucketing).
            seed: int, the shuffle seed.
            training: bool. `True` drops each bucket's last, incomplete
                batch, so batch sizes are fixed too (a bucket smaller than
                one batch gives one batch of all its pairs); `False` keeps
                every pair.
            epoch: optional `tf.Variable` holding the epoch number (see
                `keras_seq.callbacks.ShuffleEpoch`); each epoch's order is
                then a function of `(seed, epoch)`, so a resumed run replays
                it. Without one, the order follows the passes made so far.
            token_dropout: float in [0, 1), word dropout: the share of
                source and decoder-input tokens replaced by `[UNK]` in each
                batch, drawn anew every pass (labels are kept).
            subword_sampling: float in [0, 1), SentencePiece only: each
                batch's pairs are cut into pieces anew with this `alpha`
                (`SentencePieceTokenizer.sampling`), for training; a pair
                whose sampled pieces do not fit its batch's length keeps the
                best segmentation, so the batches keep their shapes and
                number. 0 keeps the best segmentation throughout.

        Returns:
            A `tf.data.Dataset` of `(features, labels)`: `features` a dict
            with `"encoder_token_ids"` (B, S) and `"decoder_token_ids"` (B,
            T), `labels` (B, T); all int32, 0-padded, and S == T == a
            bucket length.
        """
        sources, targets = _check_pairs(pairs)
        check_rate(token_dropout, "token_dropout")
        lengths = self.bucket_boundaries
        limit = self.length_limit
        if batch_size is not None:
            batch_size = _check_size(batch_size, "batch_size")
            batch_sizes = [batch_size] * len(lengths)
        else:
            batch_tokens = _check_size(batch_tokens, "batch_tokens")
            batch_sizes = [max(1, batch_tokens // length) for length in lengths]

        if self.source_end:
            source_lengths, source_ids = tokenize_all(
                sources,
                self.tokenize_source,
                pack=lambda ids: self._cut_source(ids).to_tensor(PAD_ID),
            )
        else:
            source_lengths, source_ids = tokenize_all(
                sources, self.tokenize_source, limit
            )
        # StartEndPacker trims to leave room for [START] and [END], so a long
        # target keeps its [END]; it pads to one fixed length, and
        # `tokenize_all` drops that padding so that bucketing sees each
        # target's own length.
        packer = keras_hub.layers.StartEndPacker(
            sequence_length=limit + 1,
            start_value=START_ID,
            end_value=END_ID,
            pad_value=PAD_ID,
        )
        target_lengths, target_ids = tokenize_all(
            targets, self.tokenize_target, pack=packer
        )
        truncated = (source_lengths > limit) | (target_lengths > limit - 1)
        warn_truncated(truncated, "sentence pairs", limit)

        check_rate(subword_sampling, "subword_sampling")
        if subword_sampling and self.tokenizer_kind != SENTENCEPIECE:
            raise ValueError(
                "`subword_sampling` needs SentencePiece tokenizers; received "
                f"{subword_sampling} with {self.tokenizer_kind}."
            )

        def split_target(source, target, index):
            features = {"encoder_token_ids": source, "decoder_token_ids": target[:-1]}
            if subword_sampling:
                features["pair_index"] = index
            return features, target[1:]

        indices = np.arange(len(sources), dtype="int64")
        slices = (source_ids, target_ids, indices)
        dataset = ordered_slices(slices, shuffle, seed, epoch)
        dataset = map_without_autograph(dataset, split_target)
        longer_sides = np.maximum(
            np.minimum(source_lengths, limit),
            np.minimum(target_lengths, limit - 1) + 1,  # decoder input
        )
        if training:
            # A bucket with fewer pairs than its batch size would be dropped
            # whole; its batch shrinks to the pairs it has instead.
            counts = np.bincount(
                np.searchsorted(lengths, longer_sides, side="left"),
                minlength=len(lengths),
            )
            batch_sizes = [max(1, min(b, c)) for b, c in zip(batch_sizes, counts)]
        dataset = _bucket(dataset, longer_sides, lengths, batch_sizes, training)
        if subword_sampling:
            resample = self._resampler(sources, targets, subword_sampling)
            dataset = map_without_autograph(dataset, resample)
        if token_dropout:
            dataset = _drop_tokens(dataset, token_dropout, seed)
        return dataset.prefetch(tf.data.AUTOTUNE)

    def _resampler(self, sources, targets, alpha):
        """A batch map: each pair cut into sampled pieces, where they fit.

        Subword regularization (Kudo, 2018) samples after bucketing, so
        each batch keeps the shape (W) its bucket gave it: a pair whose
        sampled source is longer than W, or target longer than W - 1 (room
        for `[START]`/`[END]`), keeps its best segmentation.
        """
        sample_source = self.source_tokenizer.sampling(alpha)
        sample_target = self.target_tokenizer.sampling(alpha)
        sources = tf.constant(sources, tf.string)
        targets = tf.constant(targets, tf.string)

        def resample(features, labels):
            features = dict(features)
            index = features.pop("pair_index")  # (B,)
            width = tf.shape(labels, out_type="int64")[1]
            source = sample_source(tf.gather(sources, index))
            if self.source_end:
                source = _append_end(source)
            target = sample_target(tf.gather(targets, index))
            fits = (source.row_lengths() <= width) & (
                target.row_lengths() + 1 <= width
            )  # (B,)
            rows = tf.fill([target.nrows(), 1], START_ID)
            ends = tf.fill([target.nrows(), 1], END_ID)
            shape = tf.stack([target.nrows(), width])
            sampled = {
                "encoder_token_ids": source.to_tensor(PAD_ID, shape=shape),
                "decoder_token_ids": tf.concat([rows, target], 1).to_tensor(
                    PAD_ID, shape=shape
                ),
            }
            sampled_labels = tf.concat([target, ends], 1).to_tensor(PAD_ID, shape=shape)
            keep = fits[:, tf.newaxis]  # (B, 1)
            features = {
                key: tf.where(keep, sampled[key], features[key]) for key in sampled
            }
            return features, tf.where(keep, sampled_labels, labels)

        return resample

    # Configuration and files (`Preprocessor.save`, `load`, `get_config`).

    @property
    def tokenizer_kind(self):
        """`"wordpiece"` or `"sentencepiece"`."""
        return _kind(self.source_tokenizer)

    def vocabularies(self):
        return {
            "source_vocabulary": list(self.source_tokenizer.get_vocabulary()),
            "target_vocabulary": list(self.target_tokenizer.get_vocabulary()),
        }

    def get_config(self):
        """The vocabularies and settings; `from_config` rebuilds the object.

        `target_vocabulary` is `None` when both sides share one; a
        SentencePiece preprocessor adds its models (bytes) as
        `source_model` and `target_model`.
        """
        config = super().get_config()
        if config["target_vocabulary"] == config["source_vocabulary"]:
            config["target_vocabulary"] = None
        if self.tokenizer_kind == SENTENCEPIECE:
            config["source_model"] = self.source_tokenizer.proto
            config["target_model"] = self.target_tokenizer.proto
        return config

    def settings(self):
        settings = {
            "max_length": self.max_length,
            "bucket_boundaries": list(self.bucket_boundaries),
            "lowercase": bool(self.source_tokenizer.lowercase),
            "strip_accents": bool(self.source_tokenizer.strip_accents),
        }
        if self.tokenizer_kind == SENTENCEPIECE:
            settings["tokenizer"] = SENTENCEPIECE
            settings["language_code"] = self.source_tokenizer.language_code
        if self.source_end:
            settings["source_end"] = True
        return settings

    def save(self, directory):
        """Writes the vocabularies, `preprocessor.json` and, for
        SentencePiece, `source.spm` and `target.spm` into `directory`."""
        super().save(directory)
        if self.tokenizer_kind == SENTENCEPIECE:
            for side, name in MODEL_FILES.items():
                proto = getattr(self, f"{side}_tokenizer").proto
                write_model(proto, os.path.join(os.fspath(directory), name))

    @classmethod
    def read_models(cls, directory, settings):
        if settings.get("tokenizer", "wordpiece") != SENTENCEPIECE:
            return {}
        return {
            f"{side}_model": read_model(os.path.join(os.fspath(directory), name))
            for side, name in MODEL_FILES.items()
        }

    @classmethod
    def from_config(cls, config):
        """The preprocessor of `get_config()` (or of `load`'s files)."""
        config = dict(config)
        kind = config.pop("tokenizer", "wordpiece")
        if kind not in ("wordpiece", SENTENCEPIECE):
            raise ValueError(
                "`tokenizer` must be 'wordpiece' or 'sentencepiece'; received "
                f"{kind!r}."
            )
        # Files written before the setting existed lowercased.
        options = {
            "lowercase": config.pop("lowercase", True),
            "strip_accents": config.pop("strip_accents", False),
        }
        source = config.pop("source_vocabulary")
        target = config.pop("target_vocabulary", None)
        shared = target is None or list(target) == list(source)
        if kind == SENTENCEPIECE:
            code = config.pop("language_code", False)
            models = config.pop("source_model"), config.pop("target_model")
            source = SentencePieceTokenizer(models[0], source, code)
            target = SentencePieceTokenizer(
                models[1], source.get_vocabulary() if shared else target, code
            )
            return cls(source, target, **config)
        source = make_tokenizer(source, **options)
        target = source if shared else make_tokenizer(target, **options)
        return cls(source, target, **config)


def make_translation_dataset(
    pairs,
    source_tokenizer,
    target_tokenizer,
    max_length,
    bucket_boundaries=None,
    **options,
):
    """`TranslationPreprocessor(...).dataset(pairs, **options)` in one call.

    Args:
        pairs: a list of `(source, target)` string pairs.
        source_tokenizer, target_tokenizer: tokenizers of `make_tokenizer`.
        max_length: int, the longest source and decoder sequence: the
            model's `max_length`.
        bucket_boundaries: sorted ints, the lengths batches are padded to;
            `max_length` is added if missing. Defaults to
            `default_bucket_boundaries(max_length)`.
        **options: `batch_tokens`, `batch_size`, `shuffle`, `seed`,
            `training`, `epoch`, `token_dropout`, as
            `TranslationPreprocessor.dataset` takes them.

    Returns:
        The `tf.data.Dataset` of `TranslationPreprocessor.dataset`.
    """
    max_length = _check_size(max_length, "max_length", minimum=2)
    preprocessor = TranslationPreprocessor(
        source_tokenizer, target_tokenizer, max_length, bucket_boundaries
    )
    return preprocessor.dataset(pairs, **options)


def _kind(tokenizer):
    if isinstance(tokenizer, SentencePieceTokenizer):
        return SENTENCEPIECE
    return "wordpiece"


def _append_end(ids):
    """Ragged (B, None) ids -> the same with `[END]` after each non-empty row."""
    ends = tf.fill([ids.nrows(), 1], END_ID)  # (B, 1)
    ends = tf.ragged.boolean_mask(ends, (ids.row_lengths() > 0)[:, tf.newaxis])
    return tf.concat([ids, tf.cast(ends, ids.dtype)], axis=1)


def _check_pairs(pairs):
    if isinstance(pairs, (str, bytes)):
        raise TypeError("`pairs` must be a list of (source, target) pairs.")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("`pairs` is empty; expected (source, target) pairs.")
    for index, pair in enumerate(pairs):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(side, str) for side in pair)
        ):
            raise TypeError(
                f"`pairs` must hold (source, target) string pairs; item "
                f"{index} is {pair!r}."
            )
    return [source for source, _ in pairs], [target for _, target in pairs]


def _check_boundaries(boundaries, max_length):
    """The sorted bucket lengths, ending at `max_length` when it is set."""
    if boundaries is None:
        return default_bucket_boundaries(max_length or UNBOUNDED_LENGTH)
    boundaries = [_check_size(value, "bucket_boundaries") for value in boundaries]
    if boundaries != sorted(set(boundaries)) or (
        max_length and boundaries and boundaries[-1] > max_length
    ):
        raise ValueError(
            f"`bucket_boundaries` must be strictly increasing lengths of at "
            f"most max_length={max_length}; received {boundaries}."
        )
    if max_length and (not boundaries or boundaries[-1] < max_length):
        boundaries.append(max_length)
    if not boundaries or boundaries[-1] < 2:
        raise ValueError(
            "`bucket_boundaries` must end at a length of at least 2; received "
            f"{boundaries}."
        )
    return boundaries

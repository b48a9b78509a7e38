"""The corpora that `--data` names: a known corpus or a user's file.

Errors in the file (missing, not UTF-8, bad labels) and a corpus that is
not installed are `UsageError`s, whose messages name the fix.
"""

import dataclasses
import os
import random
import sys
import warnings

from keras_seq.data import (
    CorpusNotFoundError,
    SentimentCorpus,
    TextCorpus,
    load_movie_review_snippets,
    load_shakespeare,
    load_trans_de_en,
    load_tsv_pairs,
    split_pairs,
)
from zoo.recipes.inputs import UsageError, reported_as_usage

_READ_ERRORS = (CorpusNotFoundError, ValueError)


def is_trans_de_en(data):
    """Whether `--data` names the trans-de-en dictionary (or is left out)."""
    return data in ("trans-de-en", None) or os.path.basename(data) == "de-en"


def check_file(path):
    """Refuses a `--data` path that is not a file.

    Raises:
        UsageError: when `path` is not a file.
    """
    if not os.path.isfile(path):
        raise UsageError(f"--data {path}: no such file.")


def read_pairs(path, layout):
    """The pairs of a tab-separated `--data` file, split by line number.

    Malformed lines are skipped with a one-line note; a file with fewer
    than 3 pairs (one each for training, validation and test) is refused.

    Args:
        path: str, the file.
        layout: str, what a line holds, for the messages.

    Returns:
        A `TranslationCorpus` of str pairs.
    """
    check_file(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with reported_as_usage(*_READ_ERRORS):
            pairs = load_tsv_pairs(path)
    # `load_tsv_pairs` names the file and the lines it skipped.
    skipped = [str(w.message) for w in caught if str(w.message).startswith(path)]
    if len(pairs) < 3:
        reason = f" ({skipped[0][len(path) + 2 :]})" if skipped else ""
        raise UsageError(
            f"--data {path}: {len(pairs)} `{layout}` lines{reason}; expected at "
            "least 3, one each for the training, validation and test splits."
        )
    for message in skipped:
        print(f"keras-seq: note: --data {message}", file=sys.stderr, flush=True)
    return split_pairs(pairs)


def trans_de_en(path=None, **options):
    """`keras_seq.data.load_trans_de_en`, its errors reported as usage.

    Args:
        path: str or None (the installed dictionary).
        **options: `include_phrases`, `include_variants`.

    Returns:
        A `TranslationCorpus`.
    """
    with reported_as_usage(*_READ_ERRORS):
        if path is None:
            return load_trans_de_en(**options)
        return load_trans_de_en(path, **options)


def translation_corpus(
    data, variants=False, phrases=False, train_pairs=None, seed=0, dictionary=False
):
    """The translation pairs that `--data` names.

    Args:
        data: `"trans-de-en"`, the dictionary's path, a `source<TAB>target`
            file, or None (trans-de-en).
        variants: bool, add the dictionary's further sentence pairs.
        phrases: bool, add the dictionary's phrase pairs.
        train_pairs: int or None, keep a random subset of that many
            training pairs, drawn with `seed`.
        seed: int.
        dictionary: bool, read `data` as the trans-de-en dictionary
            whatever its name.

    Returns:
        A `TranslationCorpus`.
    """
    dictionary = dictionary or is_trans_de_en(data)
    if dictionary:
        path = None if data in ("trans-de-en", None) else data
        corpus = trans_de_en(path, include_variants=variants, include_phrases=phrases)
    else:
        corpus = read_pairs(data, "source<TAB>target")
    if train_pairs is not None:
        # A random subset (the seed's), so that smaller training sets cover
        # the whole dictionary rather than its first letters.
        count = min(train_pairs, len(corpus.train))
        picked = random.Random(seed).sample(corpus.train, count)
        corpus = dataclasses.replace(corpus, train=picked)
    if dictionary:
        print(
            f"trans-de-en: {len(corpus.train):,} training pairs "
            f"({corpus.phrases_added:,} dictionary phrases, "
            f"{corpus.variants_added:,} further sentences), "
            f"{len(corpus.validation):,} validation, {len(corpus.test):,} test",
            flush=True,
        )
    return corpus


def sentiment_corpus(data):
    """The labelled texts that `--data` names.

    Args:
        data: `"movie-reviews"`, a `text<TAB>label` file, or None
            (movie-reviews). The labels of a file are class ids 0, 1, ...,
            or names (e.g. `pos`, `neg`): the sorted names then become ids
            0, 1, ... and the corpus keeps them as `class_names`.

    Returns:
        A `SentimentCorpus` with int labels.
    """
    with reported_as_usage(*_READ_ERRORS):
        if data in ("movie-reviews", None):
            return load_movie_review_snippets()
    corpus = read_pairs(data, "text<TAB>label")
    splits = (corpus.train, corpus.validation, corpus.test)
    labels = sorted({label for split in splits for _, label in split})
    if not all(label.isdigit() for label in labels):
        return _named_labels(data, splits, labels)
    classes = sorted({int(label) for label in labels})
    if classes != list(range(len(classes))) or len(classes) < 2:
        # Labels {0, 5} would make a 6-class model, 4 of them never seen.
        raise UsageError(
            f"--data {data}: the labels must be the class ids 0 to K-1 (K >= 2), "
            f"each used at least once; received {classes[:10]}."
        )

    def ints(pairs):
        return [(text, int(label)) for text, label in pairs]

    return SentimentCorpus(
        ints(corpus.train), ints(corpus.validation), ints(corpus.test)
    )


def _named_labels(data, splits, names):
    """The corpus of a file whose labels are names: sorted, they are ids."""
    if len(names) < 2:
        raise UsageError(
            f"--data {data}: the labels must name two classes or more; "
            f"received {names}."
        )
    ids = {name: i for i, name in enumerate(names)}
    train, validation, test = (
        [(text, ids[label]) for text, label in split] for split in splits
    )
    return SentimentCorpus(train, validation, test, class_names=tuple(names))


def text_corpus(data):
    """The lines of text that `--data` names.

    Args:
        data: `"shakespeare"`, `"movie-reviews"` (the texts only), a file
            of one text per line, or None (shakespeare). A file is split by
            line number n: n % 20 == 0 test, == 1 validation, the rest
            training.

    Returns:
        A `TextCorpus`.
    """
    if data in ("shakespeare", None):
        with reported_as_usage(*_READ_ERRORS):
            return load_shakespeare()
    if data == "movie-reviews":
        corpus = sentiment_corpus(data)
        splits = (corpus.train, corpus.validation, corpus.test)
        return TextCorpus(*([text for text, _ in split] for split in splits))
    check_file(data)
    with reported_as_usage(ValueError), open(data, encoding="utf-8") as file:
        lines = [line.strip() for line in file if line.strip()]
    splits = ([], [], [])  # test, validation, train: n % 20 == 0, 1, other
    for n, line in enumerate(lines):
        splits[min(n % 20, 2)].append(line)
    if not all(splits):
        raise UsageError(f"--data {data}: needs at least 3 non-empty lines.")
    return TextCorpus(train=splits[2], validation=splits[1], test=splits[0])

"""The corpora that `--data` names: a known corpus, a user's file, or
(from Python, `zoo.train`) a list of pairs or texts.

Errors in the file (missing, not UTF-8, bad labels) and a corpus that is
not installed are `UsageError`s, whose messages name the fix. A file or a
list is read aloud: the lines read, those dropped (empty, malformed,
duplicate pairs) and the split, in one line each.
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
    TranslationCorpus,
    load_movie_review_snippets,
    load_shakespeare,
    load_trans_de_en,
    load_tsv_pairs,
    split_pairs,
)
from zoo.recipes.inputs import UsageError, check_text_list, reported_as_usage
from zoo.recipes.run_dir import DATA, DATA_SHA256, fingerprint, items_fingerprint

_READ_ERRORS = (CorpusNotFoundError, ValueError)

# The corpora `--data` names by name; any other `--data` is a file.
CORPUS_NAMES = ("trans-de-en", "movie-reviews", "shakespeare")

# How a file or a list is split (`keras_seq.data.split_pairs`'s rule).
SPLIT_RULE = "numbered in order from 0: n % 20 == 0 test, 1 validation, else training"


@dataclasses.dataclass(frozen=True)
class Splits:
    """Data given from Python already split: the items of each split, kept
    as given (`zoo.train(..., validation_data=..., test_data=...)`).

    Attributes:
        train: list of the training items (pairs, or texts).
        validation: list of items.
        test: list of items.
    """

    train: list
    validation: list
    test: list

    def __iter__(self):
        """Every item, training first (what `data_record` fingerprints)."""
        return iter([*self.train, *self.validation, *self.test])


def is_python_data(data):
    """Whether `data` was given from Python (a list or tuple of items, or
    `Splits`)."""
    return isinstance(data, (list, tuple, Splits))


def _given_splits(splits, unit, check):
    """`Splits` checked item by item (`check(item, where)` returns the item
    or raises `TypeError`) and said in one line.

    Returns:
        A dict of split name -> list of items, for a corpus class.
    """
    checked = {}
    for name, argument in (
        ("train", "data"),
        ("validation", "validation_data"),
        ("test", "test_data"),
    ):
        items = getattr(splits, name)
        if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
            raise UsageError(
                f"`{argument}` must be a list of {unit}; received "
                f"{type(items).__name__}."
            )
        items = list(items)
        if not items:
            raise UsageError(f"`{argument}` must hold at least one of the {unit}.")
        with reported_as_usage(TypeError):
            checked[name] = [
                check(item, f"`{argument}[{i}]`") for i, item in enumerate(items)
            ]
    print(
        f"`data`: {len(checked['train']):,} training, "
        f"{len(checked['validation']):,} validation and {len(checked['test']):,} "
        f"test {unit}, as given",
        flush=True,
    )
    return checked


def _pair(item, where):
    if not (isinstance(item, (tuple, list)) and len(item) == 2):
        raise TypeError(f"{where} must be a pair; received {item!r}.")
    if not isinstance(item[0], str):
        raise TypeError(f"{where} must start with a str; received {item!r}.")
    return tuple(item)


def _str_pair(item, where):
    if not isinstance(_pair(item, where)[1], str):
        raise TypeError(f"{where} must be a pair of str; received {item!r}.")
    return tuple(item)


def _text(item, where):
    if not isinstance(item, str):
        raise TypeError(f"{where} must be a str; received {item!r}.")
    return item.strip()


def described(data):
    """`data` as a message names it: `--data PATH`, or `data` from Python."""
    return "`data`" if is_python_data(data) else f"--data {data}"


def data_record(data):
    """What `run.json` and `training.json` keep of the data a run trains on.

    A file is kept by its absolute path and the SHA-256 of its bytes, so a
    run directory finds its data from any working directory and knows when
    the file changed; data given from Python by its SHA-256 alone (the
    same as the file of the same lines would have); a corpus by its name.

    Args:
        data: str, None (the family's corpus), or a list from Python.

    Returns:
        `{"data": str or None, "data_sha256": str or None}`.
    """
    if is_python_data(data):
        return {DATA: None, DATA_SHA256: items_fingerprint(data)}
    if data is None or data in CORPUS_NAMES or not os.path.isfile(data):
        return {DATA: data, DATA_SHA256: None}
    return {DATA: os.path.abspath(data), DATA_SHA256: fingerprint(data)}


def recorded_data(run, model_dir):
    """The data a run directory was trained on, as its `run.json` names it.

    Args:
        run: dict, the `run.json`.
        model_dir: str, the directory, for the messages.

    Returns:
        str or None (the family's corpus), for `read_corpus`.

    Raises:
        UsageError: when the data was given from Python, or the file no
            longer exists or no longer holds the bytes the run trained on;
            each message names `--data`, which names the data instead.
    """
    path, sha256 = run.get(DATA), run.get(DATA_SHA256)
    if sha256 is None:
        # A corpus by name, or a `run.json` from before paths were kept
        # absolute: its path as typed.
        return path
    where = f"--model-dir {model_dir}"
    if path is None:
        raise UsageError(
            f"{where} was trained on data given from Python; pass --data with "
            "a file of the same lines to score it."
        )
    if not os.path.isfile(path):
        raise UsageError(
            f"{where} was trained on {path}, which no longer exists; pass "
            "--data with that file where it is now."
        )
    if fingerprint(path) != sha256:
        raise UsageError(
            f"{where} was trained on {path}, whose content has changed since "
            "(its SHA-256 is not the one run.json records); pass --data with "
            "the file it was trained on."
        )
    return path


def _count(number, unit):
    return f"{number:,} {unit}" if number != 1 else f"1 {unit.rstrip('s')}"


def split_reported(items, name, unit="pairs", dropped=()):
    """`keras_seq.data.split_pairs`, saying what was read and how it split.

    Args:
        items: list of `(source, target)` or `(text, label)` pairs.
        name: str, the data as messages name it.
        unit: str, what an item is, plural.
        dropped: words of what was skipped before (`"2 empty lines"`).

    Returns:
        A `TranslationCorpus`.
    """
    with reported_as_usage(ValueError, TypeError):
        corpus = split_pairs(items)
    kept = len(corpus.train) + len(corpus.validation) + len(corpus.test)
    duplicates = _count(len(items) - kept, f"duplicate {unit}")
    print(
        f"{name}: {_count(len(items), unit)} read; dropped "
        + ", ".join((*dropped, duplicates)),
        flush=True,
    )
    _say_split(name, corpus, f"the {_count(kept, 'unique ' + unit)} {SPLIT_RULE}")
    return corpus


def _say_split(name, corpus, how):
    print(
        f"{name}: split into {len(corpus.train):,} training, "
        f"{len(corpus.validation):,} validation and {len(corpus.test):,} test ({how})",
        flush=True,
    )


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


def read_pairs(path, layout, unit="pairs"):
    """The pairs of a tab-separated `--data` file, split by line number.

    Malformed lines are skipped with a one-line note; a file with fewer
    than 3 pairs (one each for training, validation and test) is refused.
    What was read, dropped and split is said in one line each
    (`split_reported`).

    Args:
        path: str, the file.
        layout: str, what a line holds, for the messages.
        unit: str, what a line holds, plural, for the summary.

    Returns:
        A `TranslationCorpus` of str pairs.
    """
    check_file(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with reported_as_usage(*_READ_ERRORS):
            pairs = load_tsv_pairs(path)
            with open(path, encoding="utf-8-sig") as file:
                lines = [line.rstrip("\r\n") for line in file]
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
    # `load_tsv_pairs` passes over empty lines and skips malformed ones.
    empty = lines.count("")
    malformed = len(lines) - empty - len(pairs)
    dropped = (_count(empty, "empty lines"), _count(malformed, "malformed lines"))
    return split_reported(pairs, f"--data {path}", unit, dropped)


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
            file, a list of `(source, target)` str pairs, or None
            (trans-de-en).
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
    dictionary = not is_python_data(data) and (dictionary or is_trans_de_en(data))
    if dictionary:
        path = None if data in ("trans-de-en", None) else data
        corpus = trans_de_en(path, include_variants=variants, include_phrases=phrases)
    elif isinstance(data, Splits):
        corpus = TranslationCorpus(**_given_splits(data, "pairs", _str_pair))
    elif is_python_data(data):
        corpus = split_reported(list(data), described(data))
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


def _class_id(label):
    """A label as a class id (an int, or a str of digits), or None."""
    if isinstance(label, int) and not isinstance(label, bool):
        return label if label >= 0 else None
    if isinstance(label, str) and label.isdigit():
        return int(label)
    return None


def sentiment_corpus(data):
    """The labelled texts that `--data` names.

    Args:
        data: `"movie-reviews"`, a `text<TAB>label` file, a list of
            `(text, label)` pairs, or None (movie-reviews). Labels are class
            ids 0, 1, ..., or names (e.g. `pos`, `neg`): the sorted names
            then become ids 0, 1, ... and the corpus keeps them as
            `class_names`.

    Returns:
        A `SentimentCorpus` with int labels.
    """
    with reported_as_usage(*_READ_ERRORS):
        if data in ("movie-reviews", None):
            corpus = load_movie_review_snippets()
            _say_split(data or "movie-reviews", corpus, "the corpus's own split")
            return corpus
    if isinstance(data, Splits):
        corpus = SentimentCorpus(**_given_splits(data, "labelled texts", _pair))
    elif is_python_data(data):
        with reported_as_usage(TypeError):
            pairs = [_pair(item, f"`data[{i}]`") for i, item in enumerate(data)]
        # `split_pairs` takes pairs of str; a class id is read back below.
        pairs = [(text, str(label)) for text, label in pairs]
        corpus = split_reported(pairs, described(data), "labelled texts")
    else:
        corpus = read_pairs(data, "text<TAB>label", "labelled texts")
    splits = (corpus.train, corpus.validation, corpus.test)
    labels = {label for split in splits for _, label in split}
    if any(_class_id(label) is None for label in labels):
        return _named_labels(data, splits, sorted(map(str, labels)))
    classes = sorted({_class_id(label) for label in labels})
    if classes != list(range(len(classes))) or len(classes) < 2:
        # Labels {0, 5} would make a 6-class model, 4 of them never seen.
        raise UsageError(
            f"{described(data)}: the labels must be the class ids 0 to K-1 "
            f"(K >= 2), each used at least once; received {classes[:10]}."
        )

    def ints(pairs):
        return [(text, _class_id(label)) for text, label in pairs]

    return SentimentCorpus(
        ints(corpus.train), ints(corpus.validation), ints(corpus.test)
    )


def _named_labels(data, splits, names):
    """The corpus of a file whose labels are names: sorted, they are ids."""
    if len(names) < 2:
        raise UsageError(
            f"{described(data)}: the labels must name two classes or more; "
            f"received {names}."
        )
    ids = {name: i for i, name in enumerate(names)}
    train, validation, test = (
        [(text, ids[str(label)]) for text, label in split] for split in splits
    )
    return SentimentCorpus(train, validation, test, class_names=tuple(names))


def text_corpus(data):
    """The lines of text that `--data` names.

    Args:
        data: `"shakespeare"`, `"movie-reviews"` (the texts only), a file
            of one text per line, a list of str, or None (shakespeare). A
            file or list is split by line number n: n % 20 == 0 test, == 1
            validation, the rest training (repeated lines are kept).

    Returns:
        A `TextCorpus`.
    """
    if data in ("shakespeare", None):
        with reported_as_usage(*_READ_ERRORS):
            corpus = load_shakespeare()
        _say_split(data or "shakespeare", corpus, "the corpus's own split")
        return corpus
    if data == "movie-reviews":
        corpus = sentiment_corpus(data)
        splits = (corpus.train, corpus.validation, corpus.test)
        return TextCorpus(*([text for text, _ in split] for split in splits))
    if isinstance(data, Splits):
        corpus = TextCorpus(**_given_splits(data, "texts", _text))
        if not all(corpus.train + corpus.validation + corpus.test):
            raise UsageError("`data`: a text is empty; expected words in each.")
        return corpus
    if is_python_data(data):
        with reported_as_usage(TypeError):
            read = [t.strip() for t in check_text_list(data, "data")]
    else:
        check_file(data)
        with reported_as_usage(ValueError), open(data, encoding="utf-8") as file:
            read = [line.strip() for line in file]
    lines = [line for line in read if line]
    print(
        f"{described(data)}: {_count(len(lines), 'texts')} read; dropped "
        f"{_count(len(read) - len(lines), 'empty lines')}",
        flush=True,
    )
    splits = ([], [], [])  # test, validation, train: n % 20 == 0, 1, other
    for n, line in enumerate(lines):
        splits[min(n % 20, 2)].append(line)
    if not all(splits):
        raise UsageError(f"{described(data)}: needs at least 3 non-empty lines.")
    corpus = TextCorpus(train=splits[2], validation=splits[1], test=splits[0])
    _say_split(described(data), corpus, f"the texts {SPLIT_RULE}")
    return corpus

"""German–English sentence pairs from the `trans-de-en` dictionary, or a TSV.

Most alternatives of the dictionary (its line format is described and parsed
in `keras_seq.data.trans_de_en_lines`) are words and phrases; some are
example sentences. The sentence pairs (about 18,000) make a small
translation corpus, split deterministically so that results are comparable
(see `split_pairs`).
"""

import dataclasses
import os
import re
import warnings

from keras_seq.data.errors import INSTALL_SCRIPT, CorpusNotFoundError
from keras_seq.data.trans_de_en_lines import (
    _aligned_pairs,
    _is_phrase_pair,
    _is_sentence,
    _may_hold_sentences,
    _prepare,
    _variant_pairs,
    parse_trans_line,
)

__all__ = [
    "TRANS_DE_EN_PATH",
    "TranslationCorpus",
    "load_trans_de_en",
    "load_tsv_pairs",
    "parse_trans_line",
    "split_pairs",
]

TRANS_DE_EN_PATH = "/usr/share/trans/de-en"

# The split contract: the n-th unique pair goes to the test set when
# n % 20 == 0, to the validation set when n % 20 == 1, else to training.
SPLIT_MODULUS = 20
TEST_REMAINDER = 0
VALIDATION_REMAINDER = 1

# Phrases longer than this many words on either side are not added.
MAX_PHRASE_WORDS = 8

_WORD = re.compile(r"\w+")


@dataclasses.dataclass(frozen=True)
class TranslationCorpus:
    """Training, validation and test splits of (source, target) pairs.

    Attributes:
        train: list of `(source, target)` string pairs.
        validation: list of pairs.
        test: list of pairs.
        phrases_added: how many dictionary phrase pairs were appended to
            `train` (only `load_trans_de_en(include_phrases=True)` adds any).
        variants_added: how many further sentence pairs were appended to
            `train` (only `load_trans_de_en(include_variants=True)` adds any).
    """

    train: list
    validation: list
    test: list
    phrases_added: int = 0
    variants_added: int = 0


def split_pairs(pairs):
    """Splits pairs into training, validation and test sets by a fixed rule.

    Duplicate pairs are dropped, keeping the first occurrence. The unique
    pairs are numbered in order from 0; pair number `n` goes to the test set
    when `n % 20 == 0`, to the validation set when `n % 20 == 1`, and to the
    training set otherwise. The rule is deterministic (no shuffling, no
    seed), so every model is scored on the same test pairs.

    Args:
        pairs: an iterable of `(source, target)` string pairs.

    Returns:
        A `TranslationCorpus`.

    Example:

    >>> corpus = split_pairs([(f"s{i}", f"t{i}") for i in range(40)])
    >>> corpus.test, corpus.validation, len(corpus.train)
    ([('s0', 't0'), ('s20', 't20')], [('s1', 't1'), ('s21', 't21')], 36)
    """
    splits = {TEST_REMAINDER: [], VALIDATION_REMAINDER: []}
    train = []
    for index, pair in enumerate(dict.fromkeys(_checked_pairs(pairs))):
        splits.get(index % SPLIT_MODULUS, train).append(pair)
    return TranslationCorpus(
        train=train,
        validation=splits[VALIDATION_REMAINDER],
        test=splits[TEST_REMAINDER],
    )


def _checked_pairs(pairs):
    for position, pair in enumerate(pairs):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(text, str) for text in pair)
        ):
            raise TypeError(
                "`pairs` must hold (source, target) pairs of strings; "
                f"received {pair!r} at position {position}"
            )
        yield tuple(pair)


def _read_trans_lines(path):
    """The dictionary's lines, annotations already removed."""
    if not os.path.isfile(path):
        raise CorpusNotFoundError(
            "The trans-de-en dictionary",
            path,
            "sudo apt-get install trans-de-en (Debian/Ubuntu), or run "
            f"`{INSTALL_SCRIPT}` from the keras-seq repository",
        )
    with open(path, encoding="utf-8") as file:
        return _prepare(file.read()).splitlines()


def _word_ngrams(words, max_words):
    """All runs of 1..max_words consecutive words."""
    return {
        tuple(words[start : start + length])
        for start in range(len(words))
        for length in range(1, min(max_words, len(words) - start) + 1)
    }


def _held_out_index(corpus, side):
    """Lower-cased word n-grams of the validation and test pairs, one side."""
    index = set()
    for pair in corpus.validation + corpus.test:
        index |= _word_ngrams(_WORD.findall(pair[side].lower()), MAX_PHRASE_WORDS)
    return index


def _unleaked_phrases(candidates, corpus):
    """Short phrase pairs whose text occurs in no held-out sentence.

    A phrase is left out when its words, lower-cased, occur as consecutive
    words of a validation or test sentence of the same language: the
    substring test on word boundaries, with punctuation ignored. Looking the
    phrase up in the set of the held-out sentences' n-grams makes this one
    hash per phrase.
    """
    german_index = _held_out_index(corpus, 0)
    english_index = _held_out_index(corpus, 1)
    seen = set(corpus.train)
    phrases = []
    for pair in candidates:
        if pair in seen:
            continue
        seen.add(pair)
        german_words = tuple(_WORD.findall(pair[0].lower()))
        english_words = tuple(_WORD.findall(pair[1].lower()))
        if (
            0 < len(german_words) <= MAX_PHRASE_WORDS
            and 0 < len(english_words) <= MAX_PHRASE_WORDS
            and german_words not in german_index
            and english_words not in english_index
        ):
            phrases.append(pair)
    return phrases


def _unleaked_variants(candidates, corpus):
    """Variant pairs that repeat no side of a held-out pair.

    A variant is left out when its German or its English, as lower-cased
    words, is the German or English of a validation or test pair: a
    synonym of a test sentence would otherwise bring its reference
    translation into training.
    """
    held_out = set()
    for german, english in corpus.validation + corpus.test:
        held_out.add((0, tuple(_WORD.findall(german.lower()))))
        held_out.add((1, tuple(_WORD.findall(english.lower()))))
    seen = set(corpus.train) | set(corpus.validation) | set(corpus.test)
    variants = []
    for pair in candidates:
        if pair in seen:
            continue
        seen.add(pair)
        if any(
            (side, tuple(_WORD.findall(text.lower()))) in held_out
            for side, text in enumerate(pair)
        ):
            continue
        variants.append(pair)
    return variants


def load_trans_de_en(
    path=TRANS_DE_EN_PATH, include_phrases=False, include_variants=False
):
    """Loads the German–English example sentences of `trans-de-en`.

    Every line is parsed as in `parse_trans_line`; the pairs where both sides
    are sentences (ending in `.`, `!` or `?`, see `parse_trans_line` for the
    cleaning) are kept, in file order, and split with `split_pairs`: unique
    pairs numbered from 0 in file order, `n % 20 == 0` is the test set,
    `n % 20 == 1` the validation set, the rest the training set. This split
    is a contract: it does not depend on a seed, nor on `include_phrases`
    or `include_variants`.

    With the dictionary of Debian's `trans-de-en` 1.9-6 this gives 17,958
    sentence pairs: 16,162 for training, 898 for validation, 898 for test;
    `include_phrases=True` adds 377,241 phrase pairs to training.

    Args:
        path: the dictionary file.
        include_phrases: when `True`, the dictionary's word and phrase pairs
            (aligned alternatives where neither side ends like a sentence,
            1 to 8 words a side, deduplicated) are appended to `train`,
            except those whose German or English words occur, lower-cased
            and consecutively, in a validation or test sentence of the same
            language, so that no held-out text leaks into training. Their
            number is `phrases_added`.
        include_variants: when `True`, the dictionary's other sentence
            pairs are appended to `train` (after the phrases, if any): the
            further synonyms of a sentence (`Zu dumm!; Wie dumm! :: What a
            nuisance!` adds `Wie dumm!` -> `What a nuisance!`) and
            sentences with slashed word alternatives reduced to the first
            (`Regel/Tage` -> `Regel`), except those whose German or English
            words are those of a validation or test sentence. Their number
            is `variants_added`.

    Returns:
        A `TranslationCorpus` of `(german, english)` pairs.

    Raises:
        CorpusNotFoundError: when `path` does not exist.

    Example:

    >>> corpus = load_trans_de_en()  # doctest: +SKIP
    >>> corpus.test[0]  # doctest: +SKIP
    ('Ich habe am ursprünglichen Entwurf ein paar Änderungen vorgenommen.', ...)
    """
    sentences = []
    phrases = []
    variants = []
    for line in _read_trans_lines(path):
        may_hold_sentences = _may_hold_sentences(line)
        if not include_phrases and not may_hold_sentences:
            continue
        for german, english in _aligned_pairs(line):
            if _is_sentence(german) and _is_sentence(english):
                sentences.append((german, english))
            elif include_phrases and _is_phrase_pair(german, english):
                phrases.append((german, english))
        if include_variants and may_hold_sentences:
            variants.extend(_variant_pairs(line))
    corpus = split_pairs(sentences)
    if include_phrases:
        phrases = _unleaked_phrases(phrases, corpus)
        corpus = dataclasses.replace(
            corpus, train=corpus.train + phrases, phrases_added=len(phrases)
        )
    if include_variants:
        variants = _unleaked_variants(variants, corpus)
        corpus = dataclasses.replace(
            corpus, train=corpus.train + variants, variants_added=len(variants)
        )
    return corpus


def _check_utf8(path):
    """Refuse a file that is not UTF-8, naming it and the first bad byte."""
    with open(path, "rb") as file:
        data = file.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(
            f"{path} is not valid UTF-8: undecodable bytes "
            f"{data[error.start : error.end]!r} at byte {error.start} "
            f"(line {line}); expected UTF-8 text with tab-separated pairs."
        ) from None


def load_tsv_pairs(path, source_column=0, target_column=1):
    r"""Reads (source, target) pairs from a tab-separated file.

    The Tatoeba/Anki layout is `English<TAB>Other<TAB>attribution`; choose the
    columns, e.g. `source_column=1, target_column=0` to translate into
    English. Fields are stripped of surrounding whitespace. Empty lines are
    ignored. Malformed lines (fewer columns than needed, or an empty source
    or target) are skipped, and one warning lists their line numbers (the
    first 20, counted from 1) and how many there were.

    Args:
        path: the file, UTF-8 (a byte-order mark is accepted); a file in
            another encoding raises a `ValueError` naming its first bad byte.
        source_column: index of the source column, from 0.
        target_column: index of the target column, from 0.

    Returns:
        A list of `(source, target)` string pairs, in file order. Use
        `split_pairs` for the standard split.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "deu.txt")
    >>> with open(path, "w", encoding="utf-8") as file:
    ...     _ = file.write("Hi.\tHallo.\tCC-BY 2.0\nRun!\tLauf!\tCC-BY 2.0\n")
    >>> load_tsv_pairs(path, source_column=1, target_column=0)
    [('Hallo.', 'Hi.'), ('Lauf!', 'Run!')]
    """
    for name, column in (
        ("source_column", source_column),
        ("target_column", target_column),
    ):
        if not isinstance(column, int) or isinstance(column, bool):
            raise TypeError(f"`{name}` must be an int; received {column!r}")
        if column < 0:
            raise ValueError(f"`{name}` must be >= 0; received {column}")
    if source_column == target_column:
        raise ValueError(
            "`source_column` and `target_column` must differ; received "
            f"{source_column} for both"
        )
    needed = max(source_column, target_column) + 1
    _check_utf8(path)
    pairs = []
    malformed = []
    with open(path, encoding="utf-8-sig") as file:
        for number, line in enumerate(file, start=1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) < needed:
                malformed.append(number)
                continue
            source = fields[source_column].strip()
            target = fields[target_column].strip()
            if not source or not target:
                malformed.append(number)
                continue
            pairs.append((source, target))
    if malformed:
        shown = ", ".join(str(number) for number in malformed[:20])
        more = ", ..." if len(malformed) > 20 else ""
        warnings.warn(
            f"{path}: skipped {len(malformed)} malformed line(s) (fewer than "
            f"{needed} tab-separated columns or an empty field): lines "
            f"{shown}{more}",
            stacklevel=2,
        )
    return pairs

"""German–English sentence pairs from the `trans-de-en` dictionary, or a TSV.

The Debian package `trans-de-en` installs the TU Chemnitz dictionary as
`/usr/share/trans/de-en`, one entry a line::

    Abschied {m} | Er verabschiedete sich. :: leave | He took leave.

The German side is left of ` :: `, the English side right of it. Each side is
a list of alternatives separated by `|`, and the i-th German alternative
translates the i-th English one. Inside an alternative, synonyms are
separated by `;`. Annotations are written in `{}` (grammar), `[]` (usage,
domain), `<>` (other spellings, search keys) and `/.../` (abbreviations);
parentheses hold optional words and notes and are part of the text.

Most alternatives are words and phrases; some are example sentences. The
sentence pairs (about 18,000) make a small translation corpus, split
deterministically so that results are comparable (see `split_pairs`).
"""

import dataclasses
import os
import re
import warnings

from keras_seq.data.errors import INSTALL_SCRIPT, CorpusNotFoundError

TRANS_DE_EN_PATH = "/usr/share/trans/de-en"

# The split contract: the n-th unique pair goes to the test set when
# n % 20 == 0, to the validation set when n % 20 == 1, else to training.
SPLIT_MODULUS = 20
TEST_REMAINDER = 0
VALIDATION_REMAINDER = 1

# Phrases longer than this many words on either side are not added.
MAX_PHRASE_WORDS = 8

_KINDS = ("sentences", "phrases", "all")

# Annotations: {f}, [ugs.], <Aalmolch>. They never span lines.
_ANNOTATION = re.compile(r"\{[^{}\n]*\}|\[[^\[\]\n]*\]|<[^<>\n]*>")
# Abbreviations between slashes, standing alone: `Doktor {m} /Dr./`. A slash
# inside a word (`dafür/dagegen`) or between spaces (`fixed / off`) is text.
# The lookbehind after the first slash keeps the fast scan for "/".
_ABBREVIATION = re.compile(r"/(?<!\S/)[^\s/|:][^/|:\n]{0,40}?(?<=\S)/(?!\S)")
_SPACES = re.compile(r"  +")
# A space that a removed annotation leaves before a mark, as in
# `gesetzt [Sprw.].` or `Richtig [ugs.]!`.
_SPACE_BEFORE_MARK = re.compile(r" ([.!?,])(?=[\s;|]|$)")
_EMPTY_PARENTHESES = re.compile(r"\( *\)")
_INNER_PARENTHESES = re.compile(r"\(([^()\n]*)\)")
# A prepared side can only hold a sentence if some item ends in . ! or ?.
_ITEM_END = re.compile(r"[.!?]\s*(?:[;|]|$)")
# Dictionary placeholders (`to insert sth.`, `etw. einlegen`) end phrases
# with a full stop that does not end a sentence.
_PLACEHOLDER_END = re.compile(r"(?:^|[\s/(])(?:sth|sb|etw|jd|jdn|jdm|jds)\.$")
_WORD = re.compile(r"\w+")
_SENTENCE_END = (".", "!", "?")
# Word alternatives written with a slash and no spaces: `Regel/Tage`.
_WORD_ALTERNATIVES = re.compile(r"\b(\w+)(?:/\w+)+\b")

# Separators inside parentheses are hidden behind these characters while a
# side is split, so that `(für; gegen)` stays one note.
_HIDDEN = {";": "\x00", "|": "\x01", "(": "\x02", ")": "\x03"}


def _reveal(text):
    """Undoes the hiding; chained `replace` is much faster than `translate`."""
    if _HIDDEN["("] not in text:
        return text
    for char, hidden in _HIDDEN.items():
        text = text.replace(hidden, char)
    return text


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


def _hide(match):
    inner = match.group(1).replace(";", _HIDDEN[";"]).replace("|", _HIDDEN["|"])
    return _HIDDEN["("] + inner + _HIDDEN[")"]


def _prepare(text):
    """Removes annotations, tidies spaces, hides parenthesised separators.

    Works on one line or on a whole file at once: no pattern crosses a line
    break, and preparing the file in one pass is much faster than per line.
    """
    text = _ANNOTATION.sub("", text)
    if "/" in text:
        text = _ABBREVIATION.sub("", text)
    if "(" in text:
        text = _EMPTY_PARENTHESES.sub("", text)
        text = text.replace("( ", "(").replace(" )", ")")
        # Innermost parentheses first, until none is left: handles nesting.
        while True:
            hidden = _INNER_PARENTHESES.sub(_hide, text)
            if hidden == text:
                break
            text = hidden
    return _SPACE_BEFORE_MARK.sub(r"\1", _SPACES.sub(" ", text))


def _split_side(text, reveal):
    """One side of an entry as a list of alternatives, each a list of synonyms."""
    if reveal:
        return [
            [
                _reveal(synonym)
                for synonym in map(str.strip, alternative.split(";"))
                if synonym
            ]
            for alternative in text.split("|")
        ]
    # An empty alternative stays, as an empty list, to keep positions.
    return [
        [synonym for synonym in map(str.strip, alternative.split(";")) if synonym]
        for alternative in text.split("|")
    ]


def _align(german, english):
    """Pairs of one alternative: first synonyms always, the rest by position
    only when both sides list as many synonyms."""
    if not german or not english:
        return []
    if len(german) == len(english):
        return list(zip(german, english))
    return [(german[0], english[0])]


def _is_sentence(text):
    """An example sentence: ends in . ! or ?, does not start in lower case,
    holds no `a/b` word alternatives and no `sth.`-style placeholder."""
    return (
        text.endswith(_SENTENCE_END)
        and not text[0].islower()
        and "/" not in text
        and not _PLACEHOLDER_END.search(text)
    )


def _ends_like_sentence(text):
    return text.endswith(_SENTENCE_END) and not _PLACEHOLDER_END.search(text)


def _is_phrase_pair(german, english):
    return not _ends_like_sentence(german) and not _ends_like_sentence(english)


def _may_hold_sentences(line):
    """A cheap test that skips the many lines without any sentence pair."""
    german, _, english = line.partition(" :: ")
    return bool(_ITEM_END.search(english) and _ITEM_END.search(german))


def _aligned_pairs(line):
    """All aligned pairs of a line that went through `_prepare`."""
    if line.startswith("#"):
        return []
    german, separator, english = line.partition(" :: ")
    if not separator or " :: " in english:
        return []
    reveal = _HIDDEN["("] in line
    if "|" not in line and ";" not in line:
        # One word or phrase a side, as in a third of the entries.
        german, english = german.strip(), english.strip()
        if reveal:
            german, english = _reveal(german), _reveal(english)
        return [(german, english)] if german and english else []
    pairs = []
    for german_synonyms, english_synonyms in _alternatives(german, english, reveal):
        pairs.extend(_align(german_synonyms, english_synonyms))
    return pairs


def _alternatives(german, english, reveal):
    """(German synonyms, English synonyms) of each alternative of a line's
    two sides; empty when the sides list different numbers of them."""
    german = _split_side(german, reveal)
    english = _split_side(english, reveal)
    if len(german) != len(english):
        return []
    return list(zip(german, english))


def parse_trans_line(line, kind="sentences"):
    """Parses one `trans-de-en` dictionary line into (German, English) pairs.

    The line is split at ` :: `. On each side, annotations in `{}`, `[]`,
    `<>` and standalone `/abbreviations/` are removed and whitespace is
    collapsed; parenthesised words are kept, as they belong to the text.
    Alternatives (`|`) are paired by position, and only when both sides have
    the same number of them. Within an alternative, the first German synonym
    (`;`) is paired with the first English one, and the other synonyms by
    position when both sides have the same number of synonyms. Separators
    inside parentheses do not split.

    Args:
        line: one line of the dictionary (a trailing newline is ignored).
        kind: `"sentences"` keeps pairs where both sides are example
            sentences: they end in `.`, `!` or `?`, do not start with a
            lower-case letter, contain no `/` and do not end with a
            placeholder such as `sth.` or `etw.`. `"phrases"` keeps pairs
            where neither side ends like a sentence. `"all"` keeps every
            aligned pair.

    Returns:
        A list of `(german, english)` string pairs; empty for comments
        (lines starting with `#`), blank or malformed lines.

    Example:

    >>> parse_trans_line("Hund {m} | Der Hund bellt. :: dog | The dog barks.")
    [('Der Hund bellt.', 'The dog barks.')]
    >>> parse_trans_line("Hund {m}; Köter {m} :: dog; cur", kind="phrases")
    [('Hund', 'dog'), ('Köter', 'cur')]
    """
    if kind not in _KINDS:
        raise ValueError(f"`kind` must be one of {_KINDS}; received kind={kind!r}")
    pairs = _aligned_pairs(_prepare(line.rstrip("\r\n")))
    if kind == "sentences":
        return [(de, en) for de, en in pairs if _is_sentence(de) and _is_sentence(en)]
    if kind == "phrases":
        return [(de, en) for de, en in pairs if _is_phrase_pair(de, en)]
    return pairs


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


def _first_alternatives(text):
    """`Sie hat ihre Regel/Tage.` -> `Sie hat ihre Regel.`; `None` when a
    slash stands between spaces (`angebracht / angezeigt`), whose
    alternatives may span several words."""
    text = _WORD_ALTERNATIVES.sub(r"\1", text)
    return None if "/" in text else text


def _variant_pairs(line):
    """Sentence pairs of a prepared line that `_aligned_pairs` leaves out.

    Two kinds: the further synonyms of an alternative whose sides list
    different numbers of synonyms (`Zu dumm!; Wie dumm! :: What a
    nuisance!` gives `Wie dumm!` -> `What a nuisance!`; `_align` keeps only
    the first two), and sentences with word alternatives written with a
    slash, reduced to the first alternative of each (`Sie hat ihre
    Regel/Tage.` -> `Sie hat ihre Regel.`).
    """
    german, separator, english = line.partition(" :: ")
    if not separator or " :: " in english:
        return []
    pairs = []
    for german_synonyms, english_synonyms in _alternatives(
        german, english, _HIDDEN["("] in line
    ):
        aligned = _align(german_synonyms, english_synonyms)
        candidates = list(aligned)
        if aligned and len(german_synonyms) != len(english_synonyms):
            first_german, first_english = aligned[0]
            candidates += [(other, first_english) for other in german_synonyms[1:]]
            candidates += [(first_german, other) for other in english_synonyms[1:]]
        for de, en in candidates:
            if "/" in de or "/" in en:
                de, en = _first_alternatives(de), _first_alternatives(en)
            elif (de, en) in aligned:
                continue  # `_aligned_pairs` gives it already.
            if de and en and _is_sentence(de) and _is_sentence(en):
                pairs.append((de, en))
    return pairs


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
    """Reads (source, target) pairs from a tab-separated file.

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

    >>> pairs = load_tsv_pairs("deu.txt", 1, 0)  # doctest: +SKIP
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

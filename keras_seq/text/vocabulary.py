"""WordPiece vocabularies: training, saving and strict loading.

A vocabulary is a list of token strings; a token's id is its index. Every
vocabulary of keras-seq starts with the same five reserved tokens, so that
models, losses and decoding agree on their ids without being told:

    0 [PAD]    padding; the loss ignores it and masks are built from it
    1 [UNK]    out-of-vocabulary words
    2 [START]  first decoder input
    3 [END]    stops decoding
    4 [MASK]   replaces tokens for masked language modelling

Training counts words once and hands the counts to the WordPiece learner of
`tensorflow_text` (the one `keras_hub.tokenizers.compute_word_piece_vocabulary`
uses), searching the frequency threshold itself; see
`train_wordpiece_vocabulary` for why.
"""

import collections
import math
import os

from keras_seq.validation import check_positive_int

RESERVED_TOKENS = ("[PAD]", "[UNK]", "[START]", "[END]", "[MASK]")
PAD_ID, UNK_ID, START_ID, END_ID, MASK_ID = range(len(RESERVED_TOKENS))
# The reserved ids a language model never writes into a text; [END] only
# ends one (`GenerativeModel.unsamplable_token_ids`).
UNSAMPLABLE_IDS = (PAD_ID, UNK_ID, START_ID, MASK_ID)

# Suffix marker of WordPiece, as in keras-hub and BERT: "playing" may become
# ["play", "##ing"].
SUFFIX_INDICATOR = "##"

# Tokens must occur this often to be learned; the same floor the
# `tensorflow_text` learner uses by default (`lower_thresh=10`).
DEFAULT_MIN_FREQUENCY = 10

# The learner accepts a vocabulary that is at most 5% smaller than asked for.
_SLACK = 0.05
# Vocabulary size falls roughly as a power of the threshold, size ~ t**-0.8
# on German and English sentences; used for the first guess of the search.
_SIZE_EXPONENT = 0.8
_MAX_PROBES = 6
_COUNT_CHUNK = 8192


def train_wordpiece_vocabulary(
    texts,
    vocabulary_size,
    lowercase=False,
    strip_accents=False,
    *,
    min_frequency=DEFAULT_MIN_FREQUENCY,
):
    """Learns a WordPiece vocabulary of at most `vocabulary_size` tokens.

    Words are split exactly as `keras_hub.tokenizers.WordPieceTokenizer`
    splits them (whitespace and punctuation, optional lowercasing and accent
    stripping) and counted once. The counts go to the `tensorflow_text`
    WordPiece learner, which keeps every subword that occurs at least `t`
    times, for a frequency threshold `t`.

    Why not call `compute_word_piece_vocabulary` directly: it binary-searches
    `t` between 10 and the count of the most frequent word, running the full
    learner at every step. When the corpus cannot fill `vocabulary_size`
    every step is too small and the search runs all the way down to the
    floor. Here the learner is first
    run once at the floor `min_frequency`; if that vocabulary already fits,
    it is the answer (one learner run). Otherwise `t` is searched on a log
    scale with power-law interpolation, which lands within the learner's 5%
    slack in one to three more runs.

    Args:
        texts: a list of strings.
        vocabulary_size: int, the largest vocabulary wanted, reserved tokens
            included. The result is smaller when the corpus does not hold
            enough subwords that occur `min_frequency` times.
        lowercase: bool, lowercase before counting; must match the
            tokenizer (`make_tokenizer(..., lowercase=...)`). False, the
            default, keeps case.
        strip_accents: bool, strip accents before counting.
        min_frequency: int, keyword only. Subwords rarer than this are not
            learned (single characters always are).

    Returns:
        A list of tokens: `RESERVED_TOKENS` at ids 0..4, then single
        characters (and their `##` suffix forms), then subwords, most
        frequent first.

    Example:

    >>> vocabulary = train_wordpiece_vocabulary(["the cat sat."] * 20, 50)
    >>> vocabulary[:5]
    ['[PAD]', '[UNK]', '[START]', '[END]', '[MASK]']
    >>> "cat" in vocabulary
    True
    """
    texts = _check_texts(texts)
    reserved = len(RESERVED_TOKENS)
    if (
        not isinstance(vocabulary_size, int)
        or isinstance(vocabulary_size, bool)
        or vocabulary_size <= reserved
    ):
        raise ValueError(
            f"`vocabulary_size` must be an int larger than the {reserved} "
            f"reserved tokens; received {vocabulary_size!r}."
        )
    check_positive_int(min_frequency, "min_frequency")
    word_counts = _count_words(texts, lowercase, strip_accents)
    if not word_counts:
        raise ValueError("`texts` hold no words to learn a vocabulary from.")
    return _search_vocabulary(word_counts, vocabulary_size, min_frequency)


def _count_words(texts, lowercase=False, strip_accents=False):
    """Counts the words of `texts` as the WordPiece tokenizer splits them.

    Returns:
        A dict from word to count.
    """
    # TensorFlow and keras-hub load here, not at the top: the special-token
    # ids of this module must import without them (`keras_seq.text`).
    import tensorflow as tf

    # `pretokenize` is the splitter that both `WordPieceTokenizer` and
    # `compute_word_piece_vocabulary` use; reusing it keeps the words that
    # are counted identical to the words that are later tokenized.
    from keras_hub.src.tokenizers.word_piece_tokenizer import pretokenize

    counts = collections.Counter()
    # Whole chunks at a time: one eager op call per chunk instead of a
    # `tf.data` step per sentence.
    for start in range(0, len(texts), _COUNT_CHUNK):
        chunk = tf.constant(texts[start : start + _COUNT_CHUNK])
        words = pretokenize(chunk, lowercase, strip_accents, True, True)
        counts.update(words.flat_values.numpy().tolist())
    return {word.decode("utf-8"): count for word, count in counts.items()}


def _learn(word_counts, vocabulary_size, threshold):
    """One run of the `tensorflow_text` learner at a fixed threshold.

    With `lower_thresh == upper_thresh` the learner's own binary search has
    nothing to search and returns after a single pass.
    """
    # An optional dependency of training only; see `_count_words` too.
    from tensorflow_text.tools.wordpiece_vocab import (
        wordpiece_tokenizer_learner_lib as learner,
    )

    return learner.learn(
        word_counts,
        vocab_size=vocabulary_size,
        reserved_tokens=list(RESERVED_TOKENS),
        upper_thresh=threshold,
        lower_thresh=threshold,
        include_joiner_token=True,
        joiner=SUFFIX_INDICATOR,
    )


def _search_vocabulary(word_counts, vocabulary_size, min_frequency):
    """Finds the lowest threshold whose vocabulary fits `vocabulary_size`.

    Keeps `low` (vocabulary too large) and `high` (fits) thresholds and
    interpolates log(size) linearly in log(threshold) between them.
    """
    counts = list(word_counts.values())
    # Thresholds outside [min count, max count] are clipped by the learner.
    low = min(max(min_frequency, min(counts)), max(counts))
    vocabulary = _learn(word_counts, vocabulary_size, low)
    if len(vocabulary) <= vocabulary_size:
        return vocabulary  # The corpus cannot fill a larger vocabulary.

    target = vocabulary_size * (1.0 - _SLACK / 2)
    low_size = len(vocabulary)
    high, high_size, best = max(counts), None, None
    for _ in range(_MAX_PROBES):
        if high - low <= 1:
            break
        if high_size is None:  # Extrapolate with the typical exponent.
            log_t = math.log(low) + math.log(low_size / target) / _SIZE_EXPONENT
        else:
            fraction = math.log(low_size / target) / math.log(low_size / high_size)
            log_t = math.log(low) + fraction * math.log(high / low)
        threshold = min(max(round(math.exp(log_t)), low + 1), high - 1)
        vocabulary = _learn(word_counts, vocabulary_size, threshold)
        if len(vocabulary) > vocabulary_size:
            low, low_size = threshold, len(vocabulary)
        else:
            high, high_size, best = threshold, len(vocabulary), vocabulary
            if len(vocabulary) >= (1.0 - _SLACK) * vocabulary_size:
                break
    if best is None:
        best = _learn(word_counts, vocabulary_size, high)
    # Only when even the highest threshold overshoots (a vocabulary barely
    # larger than the alphabet); keras-hub truncates the same way.
    return best[:vocabulary_size]


def save_vocabulary(vocabulary, path):
    """Writes one token per line, UTF-8, after the checks of `load_vocabulary`.

    Args:
        vocabulary: a list of tokens starting with `RESERVED_TOKENS`.
        path: the file to write; missing parent directories are created.

    Raises:
        ValueError: for an empty token, one with whitespace, a duplicate, or
            a vocabulary that does not start with `RESERVED_TOKENS`.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "vocabulary.txt")
    >>> save_vocabulary(list(RESERVED_TOKENS) + ["hi"], path)
    >>> load_vocabulary(path)[-1]
    'hi'
    """
    path = os.fspath(path)
    tokens = list(vocabulary)
    for index, token in enumerate(tokens):
        if not isinstance(token, str) or not token or _has_space(token):
            raise ValueError(
                f"Cannot save vocabulary to {path}: token {index} must be a "
                f"non-empty string without whitespace; received {token!r}."
            )
    _check_tokens(tokens, f"vocabulary {path}")
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        file.write("".join(token + "\n" for token in tokens))


def load_vocabulary(path, expected_size=None):
    """Reads a vocabulary written by `save_vocabulary`, refusing a bad one.

    Args:
        path: the vocabulary file, one token per line, UTF-8.
        expected_size: optional int, the vocabulary size the model was built
            with.

    Returns:
        The list of tokens.

    Raises:
        ValueError: naming the file and the problem, when it is missing or
            empty, is not UTF-8, has an empty line or duplicate tokens, does
            not start with `RESERVED_TOKENS`, or has a size other than
            `expected_size`.
    """
    path = os.fspath(path)
    name = f"vocabulary {path}"
    if not os.path.isfile(path):
        raise ValueError(f"{name} does not exist or is not a file.")
    with open(path, "rb") as file:
        data = file.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(
            f"{name} is not valid UTF-8: undecodable bytes "
            f"{data[error.start : error.end]!r} at byte {error.start} "
            f"(line {line})."
        ) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # The newline that ends the last line.
    tokens = [line.rstrip("\r") for line in lines]
    if not tokens:
        raise ValueError(f"{name} is empty; expected one token per line.")
    for number, token in enumerate(tokens, start=1):
        if not token.strip():
            raise ValueError(f"{name} has an empty token at line {number}.")
    _check_tokens(tokens, name)
    if expected_size is not None and len(tokens) != expected_size:
        raise ValueError(
            f"{name} has {len(tokens)} tokens; the model expects {expected_size}."
        )
    return tokens


def _has_space(token):
    return any(character.isspace() for character in token)


def _check_tokens(tokens, name):
    """Refuses duplicates and reserved tokens outside ids 0..4."""
    first_line = {}
    for number, token in enumerate(tokens, start=1):
        if token in first_line:
            raise ValueError(
                f"{name} has duplicate tokens: {token!r} at lines "
                f"{first_line[token]} and {number}."
            )
        first_line[token] = number
    head = tuple(tokens[: len(RESERVED_TOKENS)])
    if head != RESERVED_TOKENS:
        raise ValueError(
            f"{name} must start with the reserved tokens {list(RESERVED_TOKENS)} "
            f"at ids 0..{len(RESERVED_TOKENS) - 1}; found {list(head)}."
        )


def _check_texts(texts, name="texts"):
    """`texts` as a list of str, refusing other types and an empty list.

    Strings with unpaired surrogates (from `errors="surrogateescape"`
    decoding, say) are refused too: TensorFlow holds UTF-8 bytes, which
    cannot encode them.
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"`{name}` must be a list of strings, not one string.")
    texts = list(texts)
    if not texts:
        raise ValueError(f"`{name}` is empty; expected at least one string.")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(
                f"`{name}` must hold strings; item {index} is "
                f"{type(text).__name__}: {text!r}."
            )
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(
                f"`{name}` must hold valid Unicode text; item {index} has the "
                f"unpaired surrogate {text[error.start]!r} at position "
                f"{error.start}."
            ) from None
    return texts

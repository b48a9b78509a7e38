"""WordPiece tokenizers and detokenization back to readable text.

(SentencePiece tokenizers, `keras_seq.text.sentencepiece_tokenizer`, plug
into the same functions: `tokenize_graph` leaves their text to the model's
own normalization, and detokenization joins their pieces as SentencePiece
does instead of the WordPiece rules below.)

`make_tokenizer` returns a `keras_hub.tokenizers.WordPieceTokenizer`, which
runs inside `tf.data` pipelines. Turning ids back into text takes two steps:

1. ids to tokens: everything from the first `[END]` on is cut, `[PAD]` and
   `[START]` are dropped; the tokens are joined with spaces, and `##` suffix
   pieces are glued to the word before them.
2. a small regex clean-up of the spaces WordPiece leaves around punctuation
   (it splits every punctuation mark into its own word):

   | rule                                   | before         | after       |
   |----------------------------------------|----------------|-------------|
   | digits around `. , :`                  | `3 . 5`        | `3.5`       |
   | no space before `. , ! ? ; : % ) ] } …` | `know , do ?`  | `know, do?` |
   | no space after `( [ { ¿ ¡ „ $`         | `( a )`        | `(a)`       |
   | apostrophes of contractions            | `don ' t`      | `don't`     |
   | hyphens and slashes between letters    | `e - mail`     | `e-mail`    |
   | double quotes hug what they enclose    | `" hi "`       | `"hi"`      |

   Contractions are `'s 't 're 've 'll 'd 'm` (also with `’`); other
   apostrophes keep their spaces, since `dogs ' bones` may be a plural
   possessive or a quotation. Each rule runs once over the string, so a
   chain of one-letter words (`a - b - c`) keeps its second gap. The text
   is lowercased when the tokenizer lowercases, and spacing the tokenizer
   dropped cannot always be recovered.

`detokenize` does this in Python and returns `str`s; `detokenize_graph` does
the same with TensorFlow string ops only (`tf.gather`,
`tf.strings.reduce_join`, `tf.strings.regex_replace`), with no Python
callbacks and no `tensorflow_text` ops, so it can live inside a SavedModel.
Both use the same rule table.
"""

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from keras_seq.text import spacing
from keras_seq.text.spacing import RE2_RULES
from keras_seq.text.vocabulary import (
    END_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    SUFFIX_INDICATOR,
    UNK_ID,
    _check_tokens,
    load_vocabulary,
)

# The clean-up rules of `keras_seq.text.spacing`, after the first rule here,
# which glues `##` suffix pieces on.
_GLUE = (" " + SUFFIX_INDICATOR, "")
_RE2_RULES = (_GLUE,) + RE2_RULES


def make_tokenizer(vocabulary, lowercase=False, strip_accents=False):
    """A WordPiece tokenizer over a keras-seq vocabulary.

    Args:
        vocabulary: a list of tokens starting with `RESERVED_TOKENS`, or the
            path of a vocabulary file (read with `load_vocabulary`).
        lowercase: bool; must match how the vocabulary was trained. False
            (the default everywhere, as `keras-seq train`) keeps case.
        strip_accents: bool; must match how the vocabulary was trained.

    Returns:
        A `keras_hub.tokenizers.WordPieceTokenizer` with `[UNK]` for unknown
        words and int32 ids. Called on a batch of strings inside `tf.data` it
        returns a ragged (B, None) tensor.

    Example:

    >>> tokenizer = make_tokenizer(list(RESERVED_TOKENS) + ["Hi", "!"])
    >>> tokenizer.tokenize(["Hi!"])
    [[5, 6]]
    """
    if isinstance(vocabulary, (str, bytes)) or hasattr(vocabulary, "__fspath__"):
        tokens = load_vocabulary(vocabulary)
    else:
        if not hasattr(vocabulary, "__iter__"):
            raise TypeError(
                "`vocabulary` must be a list of tokens or the path of a "
                f"vocabulary file; received {type(vocabulary).__name__}."
            )
        tokens = list(vocabulary)
        _check_tokens(tokens, "`vocabulary`")
    return keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=tokens,
        lowercase=lowercase,
        strip_accents=strip_accents,
        suffix_indicator=SUFFIX_INDICATOR,
        oov_token=RESERVED_TOKENS[UNK_ID],
        dtype="int32",
    )


def normalize_graph(sentences):
    """The text-normalisation rule every path applies before tokenizing.

    Every character of Unicode category Zs, Zl or Zp, and each of TAB, LF,
    VT, FF and CR, becomes an ASCII space; then every remaining character of
    category Cc or Cf (NUL and the other controls, zero-width characters,
    the soft hyphen, the byte-order mark) is removed. Without it a no-break
    space glues two words into one unknown word, and a NUL ends the text
    for the WordPiece ops. Lowercasing and accents stay the tokenizer's.

    A tokenizer without TensorFlow must reproduce exactly this rule; in
    Python it reads each character's `unicodedata.category`.

    Args:
        sentences: a `tf.string` tensor of valid UTF-8, any shape.

    Returns:
        The normalised `tf.string` tensor, of the same shape.

    Example:

    >>> normalize_graph(tf.constant(["ich\\u00a0bin\\x00 da"])).numpy()
    array([b'ich bin da'], dtype=object)
    """
    sentences = tf.strings.regex_replace(sentences, r"[\p{Z}\t\n\x0b\f\r]", " ")
    return tf.strings.regex_replace(sentences, r"[\p{Cc}\p{Cf}]", "")


def tokenize_graph(tokenizer, sentences):
    """Tokenizes a batch of `tf.string` sentences with TensorFlow ops only.

    Invalid UTF-8 becomes U+FFFD first, so that the tokenizer never fails on
    what a served model receives; Python `str`s are always valid. The text
    is then normalised (`normalize_graph`). Meant for graphs (`tf.data`,
    `tf.function`, exports); it also runs eagerly, on keras-hub's slower
    Python path.

    Args:
        tokenizer: the tokenizer of `make_tokenizer`.
        sentences: (B,) `tf.string` tensor.

    Returns:
        A ragged (B, None) int32 tensor of ids, nothing cut.

    Example:

    >>> tokenizer = make_tokenizer(list(RESERVED_TOKENS) + ["Hi", "!"])
    >>> tokenize_graph(tokenizer, tf.constant(["Hi!"])).to_list()
    [[5, 6]]
    """
    sentences = tf.strings.unicode_transcode(
        sentences, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    if not getattr(tokenizer, "normalizes_text", False):
        # A SentencePiece model normalizes by its own rules, and must see
        # the text its reference tokenizer sees.
        sentences = normalize_graph(sentences)
    ids = tokenizer(sentences)
    if not isinstance(ids, tf.RaggedTensor):
        # Called eagerly, keras-hub hands back Python lists; in a graph
        # (`tf.data`, `tf.function`, an export) always a ragged tensor.
        ids = tf.ragged.constant(ids, dtype="int32", ragged_rank=1)
    return tf.cast(ids, "int32")


def clean_up_spacing(text):
    """Applies the punctuation clean-up of the module docstring to a `str`.

    Args:
        text: a `str` of tokens joined with spaces.

    Returns:
        The `str` with the spacing rules applied once each, in order.

    Example:

    >>> clean_up_spacing("i don ' t know , do you ?")
    "i don't know, do you?"
    """
    return spacing.clean_up_spacing(text.replace(*_GLUE))


def detokenize(tokenizer, ids):
    """Turns rows of token ids into readable Python strings.

    Args:
        tokenizer: the tokenizer of `make_tokenizer` (anything with
            `get_vocabulary()`).
        ids: a batch of id rows, (B, T): a list of lists, a NumPy array, a
            `tf.Tensor` or `tf.RaggedTensor`, or a backend tensor; 0-padded
            or ragged. A single row (T,) gives a single string.

    Returns:
        A list of B strings (or one string for a single row): the tokens up
        to the first `[END]`, without `[PAD]` and `[START]`, joined and
        cleaned up as the module docstring describes (a SentencePiece
        tokenizer leaves out every reserved id and joins its own way).

    Raises:
        ValueError: for ids of another rank or of a float dtype, and for ids
            outside the vocabulary.

    Example:

    >>> tokenizer = make_tokenizer(list(RESERVED_TOKENS) + ["hi", "!"])
    >>> detokenize(tokenizer, [[2, 5, 6, 3, 0]])
    ['hi!']
    """
    vocabulary = tokenizer.get_vocabulary()
    skipped = _skipped_ids(tokenizer)
    join = getattr(tokenizer, "join_pieces", None)
    rows, single = _id_rows(ids)
    texts = []
    for row in rows:
        tokens = []
        for token_id in row:
            if not 0 <= token_id < len(vocabulary):
                raise ValueError(
                    f"`ids` must lie in [0, {len(vocabulary)}), the vocabulary "
                    f"of the tokenizer; received id {token_id}."
                )
            if token_id == END_ID:
                break
            if token_id not in skipped:
                tokens.append(vocabulary[token_id])
        texts.append(join(tokens) if join else clean_up_spacing(" ".join(tokens)))
    return texts[0] if single else texts


def detokenize_graph(tokenizer, ids):
    """`detokenize` with TensorFlow ops only, for `tf.function`s and exports.

    The vocabulary becomes a constant of the graph. Ids outside the
    vocabulary read as `[UNK]` instead of failing, so a served model never
    crashes on them.

    Args:
        tokenizer: the tokenizer of `make_tokenizer`.
        ids: (B, T) int tensor, 0-padded, or a ragged (B, None) tensor; a
            single row (T,) gives a scalar.

    Returns:
        A `tf.string` tensor of shape (B,), or a scalar for a single row.

    Example:

    >>> tokenizer = make_tokenizer(list(RESERVED_TOKENS) + ["hi", "!"])
    >>> detokenize_graph(tokenizer, tf.constant([[2, 5, 6, 3, 0]]))
    <tf.Tensor: shape=(1,), dtype=string, numpy=array([b'hi!'], dtype=object)>
    """
    vocabulary = tokenizer.get_vocabulary()
    if isinstance(ids, tf.RaggedTensor):
        ids = ids.to_tensor(default_value=PAD_ID)
    ids = tf.convert_to_tensor(ids)
    if not ids.dtype.is_integer:
        raise ValueError(
            f"`ids` must hold integer token ids; received dtype {ids.dtype.name}."
        )
    single = ids.shape.rank == 1
    if single:
        ids = ids[tf.newaxis]
    if ids.shape.rank != 2:
        raise ValueError(
            f"`ids` must have rank 2, shape (batch_size, length); received "
            f"shape {ids.shape}."
        )
    in_range = tf.logical_and(ids >= 0, ids < len(vocabulary))
    ids = tf.where(in_range, tf.cast(ids, "int32"), UNK_ID)  # (B, T)
    # Positions from the first [END] on have a positive running count.
    ended = tf.cumsum(tf.cast(ids == END_ID, "int32"), axis=1) > 0  # (B, T)
    keep = ~ended  # (B, T)
    for skipped in _skipped_ids(tokenizer):
        keep &= ids != skipped
    tokens = tf.gather(tf.constant(vocabulary), tf.ragged.boolean_mask(ids, keep))
    if hasattr(tokenizer, "join_pieces_graph"):
        text = tokenizer.join_pieces_graph(tokens)  # (B,)
        return text[0] if single else text
    text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")  # (B,)
    for pattern, rewrite in _RE2_RULES:
        text = tf.strings.regex_replace(text, pattern, rewrite)
    return text[0] if single else text


def _skipped_ids(tokenizer):
    """The ids detokenization leaves out: `[PAD]` and `[START]` by default."""
    return tuple(getattr(tokenizer, "skipped_ids", (PAD_ID, START_ID)))


def _id_rows(ids):
    """`ids` as a list of lists of Python ints, and whether it was one row."""
    if hasattr(ids, "to_list") and hasattr(ids, "flat_values"):  # tf.Ragged.
        if not ids.dtype.is_integer:
            raise ValueError(
                f"`ids` must hold integer token ids; received dtype {ids.dtype.name}."
            )
        rows = ids.to_list()
        single = ids.shape.rank == 1
    elif isinstance(ids, (list, tuple)):
        single = not ids or not isinstance(ids[0], (list, tuple, np.ndarray))
        rows = [ids] if single else [list(row) for row in ids]
        for row in rows:
            for value in row:
                if isinstance(value, (bool, np.bool_)) or not isinstance(
                    value, (int, np.integer)
                ):
                    raise ValueError(
                        f"`ids` must hold integer token ids; received "
                        f"{value!r} of type {type(value).__name__}."
                    )
    else:
        array = _to_numpy(ids)
        if array.dtype.kind not in "iu":
            raise ValueError(
                f"`ids` must hold integer token ids; received dtype {array.dtype}."
            )
        if array.ndim not in (1, 2):
            raise ValueError(
                f"`ids` must have rank 2, shape (batch_size, length); received "
                f"shape {array.shape}."
            )
        single = array.ndim == 1
        rows = [array.tolist()] if single else array.tolist()
    return [[int(value) for value in row] for row in rows], single


def _to_numpy(x):
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "numpy") and not keras.ops.is_tensor(x):
        return np.asarray(x.numpy())  # A tf.Tensor under another backend.
    if keras.ops.is_tensor(x):
        return np.asarray(keras.ops.convert_to_numpy(x))
    return np.asarray(x)

"""The translator's tokenization without TensorFlow or Keras.

A CTranslate2 export (`keras_seq.export.ctranslate2`) is served by a process
that loads neither TensorFlow nor Keras, yet must see the ids the run's
preprocessor gives. `PortableTokenizer` reproduces the preprocessor's
tokenizer (keras-hub's `WordPieceTokenizer` over TensorFlow Text) step by
step, with the standard library's `unicodedata` and the WordPiece model of
the `tokenizers` library:

1. the shared text normalization (`normalize_text`): Unicode spaces and
   TAB, LF, VT, FF, CR become a space; the other control and format
   characters are removed;
2. a space on both sides of every CJK ideograph;
3. with `strip_accents`: NFD, then marks (category Mn) removed;
4. the text split into words at ASCII spaces, control and format
   characters, punctuation and CJK ideographs; punctuation and ideographs
   are words of their own;
5. with `lowercase`: each word NFKC-casefolded (TensorFlow Text's
   `case_fold_utf8`), default-ignorable characters dropped;
6. WordPiece, greedy longest match first, on each word: a word that cannot
   be covered, or longer than 100 UTF-8 bytes, is the unknown token.

The order matters: case folding after the split keeps a word such as `⑴`
(which folds to `(1)`) whole, as the preprocessor does. Detokenization
joins the tokens, glues suffix pieces and applies the spacing rules of
`keras_seq.text.spacing`.

A SentencePiece preprocessor (`"tokenizer": "sentencepiece"` in
`preprocessor.json`) is reproduced by `SentencePiecePortableTokenizer` with
the `sentencepiece` package: the same model files, the same language-code
split, the same lookup into the vocabulary and the same `[END]` after a
source; `PortableTokenizer.from_directory` returns one for such a
directory.

This module imports only the standard library and `tokenizers` (or
`sentencepiece`), so a CTranslate2 process can load it without the
package's Keras-bound modules.
"""

import json
import os
import re
import unicodedata

from keras_seq.text.spacing import clean_up_spacing

# TensorFlow Text's `FastWordpieceTokenizer` maps longer words to the
# unknown token.
MAX_BYTES_PER_WORD = 100

# The export's record of the special tokens and suffix marker (written by
# `keras_seq.export.ctranslate2`), read with the vocabularies.
TOKENS_FILE = "tokens.json"
SETTINGS_FILE = "preprocessor.json"
VOCABULARY_FILES = {
    "source": "source_vocabulary.txt",
    "target": "target_vocabulary.txt",
}
# SentencePiece's model files, by side, and its word-start marker.
MODEL_FILES = {"source": "source.spm", "target": "target.spm"}
WORD_BOUNDARY = "\u2581"
# The reserved tokens (`keras_seq.text.vocabulary`), spelled out: this module
# imports nothing of the package's Keras-bound ones.
_RESERVED_TOKENS = ("[PAD]", "[UNK]", "[START]", "[END]", "[MASK]")

# The CJK ideograph blocks BERT splits on, as keras-hub lists them.
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
# Unicode's Default_Ignorable_Code_Point, which NFKC_Casefold removes.
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# The characters the shared normalization turns into a space besides the
# categories Zs, Zl and Zp.
_SPACE_CONTROLS = frozenset("\t\n\x0b\x0c\r")
# RE2's `\s` in the preprocessor's split pattern: ASCII spaces only.
_ASCII_SPACES = frozenset(" \t\n\x0c\r")


def _in(ranges, char):
    code = ord(char)
    return any(low <= code <= high for low, high in ranges)


def normalize_text(text):
    """The shared text normalization, applied before tokenizing.

    Every character of category Zs, Zl or Zp and each of TAB, LF, VT, FF,
    CR becomes an ASCII space; then every remaining character of category
    Cc or Cf (other controls, zero-width characters, soft hyphen, BOM, ...)
    is removed.

    Args:
        text: a `str`.

    Returns:
        The normalized `str`.

    Example:

    >>> normalize_text("a\\u00a0b\\u200bc\\td")
    'a bc d'
    """
    out = []
    for char in text:
        category = unicodedata.category(char)
        if category[0] == "Z" or char in _SPACE_CONTROLS:
            out.append(" ")
        elif category not in ("Cc", "Cf"):
            out.append(char)
    return "".join(out)


def case_fold(word):
    """NFKC_Casefold of a word, as TensorFlow Text's `case_fold_utf8`."""
    word = unicodedata.normalize("NFKC", word).casefold()
    word = unicodedata.normalize("NFKC", word)
    return "".join(c for c in word if not _in(_DEFAULT_IGNORABLE, c))


def _is_punctuation(char):
    # All ASCII non-letters and non-digits, as BERT, and category P*.
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def split_words(text):
    """Steps 2 and 4 of the module docstring: a `str` -> a list of words."""
    words, current = [], []
    for char in text:
        category = unicodedata.category(char)
        if char in _ASCII_SPACES or category in ("Cc", "Cf"):
            words.append("".join(current))
            current = []
        elif _is_punctuation(char) or _in(_CJK, char):
            words.extend(("".join(current), char))
            current = []
        else:
            current.append(char)
    words.append("".join(current))
    return [word for word in words if word]


def _check_vocabulary(tokens, where):
    if not tokens or len(set(tokens)) != len(tokens):
        raise ValueError(
            f"{where} must hold distinct tokens; it is empty or repeats one."
        )
    return tokens


def read_vocabulary(path):
    """The tokens of a vocabulary file, one a line, in id order."""
    with open(path, encoding="utf-8") as file:
        tokens = [line.rstrip("\n").rstrip("\r") for line in file]
    while tokens and tokens[-1] == "":
        tokens.pop()
    return _check_vocabulary(tokens, f"the vocabulary file {path}")


class PortableTokenizer:
    """WordPiece ids and text, as the run's preprocessor gives them.

    Args:
        vocabulary: the tokens, in id order (the run's vocabulary file).
        unknown_token: the token of words WordPiece cannot cover.
        end_token: detokenization stops at it.
        skipped_tokens: tokens detokenization leaves out (padding, start).
        suffix_indicator: the prefix of suffix pieces, `"##"`.
        lowercase, strip_accents: bool, as the preprocessor's settings.
        max_length: int or `None`, the longest id sequence `encode` returns
            (the preprocessor's `length_limit`); `None` cuts nothing.

    Example:

    >>> vocabulary = ["[PAD]", "[UNK]", "[START]", "[END]", "Hallo", "!"]
    >>> skipped = ("[PAD]", "[START]")
    >>> tokenizer = PortableTokenizer(vocabulary, "[UNK]", "[END]", skipped)
    >>> tokenizer.tokenize(["Hallo!"])
    [[4, 5]]
    """

    def __init__(
        self,
        vocabulary,
        unknown_token,
        end_token,
        skipped_tokens=(),
        suffix_indicator="##",
        lowercase=False,
        strip_accents=False,
        max_length=None,
    ):
        from tokenizers import models

        vocabulary = _check_vocabulary(list(vocabulary), "`vocabulary`")
        index = {token: i for i, token in enumerate(vocabulary)}
        for name, token in (("unknown_token", unknown_token), ("end_token", end_token)):
            if token not in index:
                raise ValueError(f"`{name}` {token!r} is not in the vocabulary.")
        if max_length is not None and (
            isinstance(max_length, bool)
            or not isinstance(max_length, int)
            or max_length < 1
        ):
            raise ValueError(
                f"`max_length` must be an int >= 1 or None; received {max_length!r}."
            )
        self.vocabulary = vocabulary
        self.unknown_token = unknown_token
        self.end_token = end_token
        self.skipped_tokens = tuple(skipped_tokens)
        self.suffix_indicator = suffix_indicator
        self.lowercase = bool(lowercase)
        self.strip_accents = bool(strip_accents)
        self.max_length = max_length
        self._unknown_id = index[unknown_token]
        self._end_id = index[end_token]
        self._skipped_ids = frozenset(
            index[t] for t in self.skipped_tokens if t in index
        )
        # Length is checked in bytes here, so the model's own limit (in
        # characters) never applies.
        self._model = models.WordPiece(
            index,
            unk_token=unknown_token,
            continuing_subword_prefix=suffix_indicator,
            max_input_chars_per_word=1 << 30,
        )
        self._glue = re.compile(" " + re.escape(suffix_indicator))

    @classmethod
    def from_directory(cls, directory, side="source"):
        """The tokenizer of one side of an export (or a run) directory.

        Reads `<side>_vocabulary.txt`, `preprocessor.json` (lowercasing,
        accents, `max_length` and buckets) and `tokens.json` (the special
        tokens and suffix marker).
        """
        if side not in VOCABULARY_FILES:
            raise ValueError(f"`side` must be 'source' or 'target'; received {side!r}.")
        directory = os.fspath(directory)
        settings = _read_json(os.path.join(directory, SETTINGS_FILE))
        if settings.get("tokenizer") == "sentencepiece":
            return SentencePiecePortableTokenizer.from_directory(directory, side)
        tokens = _read_json(os.path.join(directory, TOKENS_FILE))
        boundaries = settings.get("bucket_boundaries") or []
        limit = boundaries[-1] if boundaries else settings.get("max_length")
        return cls(
            read_vocabulary(os.path.join(directory, VOCABULARY_FILES[side])),
            unknown_token=tokens["unknown"],
            end_token=tokens["end"],
            skipped_tokens=(tokens["padding"], tokens["start"]),
            suffix_indicator=tokens["suffix_indicator"],
            # Directories written before the setting existed lowercased.
            lowercase=settings.get("lowercase", True),
            strip_accents=settings.get("strip_accents", False),
            max_length=limit,
        )

    # Text to ids.

    def words(self, text):
        """A `str` (or UTF-8 `bytes`) -> its words, steps 1 to 5."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if not isinstance(text, str):
            raise TypeError(f"`text` must be a str; received {type(text).__name__}.")
        text = normalize_text(text)
        if self.strip_accents:
            text = unicodedata.normalize("NFD", text)
            text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        words = split_words(text)
        if self.lowercase:
            words = [case_fold(word) for word in words]
        return words

    def _word_ids(self, word):
        if not word:
            return []
        if len(word.encode("utf-8")) > MAX_BYTES_PER_WORD:
            return [self._unknown_id]
        return [token.id for token in self._model.tokenize(word)]

    def tokenize(self, texts):
        """A list of `str` -> a list of id lists, nothing cut."""
        if isinstance(texts, (str, bytes)):
            raise TypeError("`texts` must be a list of str; received one string.")
        return [
            [i for word in self.words(text) for i in self._word_ids(word)]
            for text in texts
        ]

    def encode(self, texts):
        """A list of `str` -> (id lists cut to `max_length`, which were cut)."""
        rows = self.tokenize(texts)
        if self.max_length is None:
            return rows, [False] * len(rows)
        return [row[: self.max_length] for row in rows], [
            len(row) > self.max_length for row in rows
        ]

    def id_to_token(self, ids):
        """Ids -> tokens."""
        return [self.vocabulary[i] for i in ids]

    def id_to_token_rows(self, rows):
        """Rows of ids -> rows of tokens."""
        return [self.id_to_token(row) for row in rows]

    # Ids to text.

    def detokenize(self, rows):
        """Id rows -> `str`s: tokens up to the end token, without the skipped
        ones, joined, suffix pieces glued and spacing cleaned up."""
        texts = []
        for row in rows:
            tokens = []
            for token_id in row:
                token_id = int(token_id)
                if not 0 <= token_id < len(self.vocabulary):
                    raise ValueError(
                        f"`rows` must hold ids in [0, {len(self.vocabulary)}); "
                        f"received {token_id}."
                    )
                if token_id == self._end_id:
                    break
                if token_id not in self._skipped_ids:
                    tokens.append(self.vocabulary[token_id])
            texts.append(self.join(tokens))
        return texts

    def join(self, tokens):
        """Tokens (no special ones) -> readable text."""
        return clean_up_spacing(self._glue.sub("", " ".join(tokens)))


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as file:
            value = json.load(file)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} must hold a JSON object: {error}") from None
    if not isinstance(value, dict):
        raise ValueError(
            f"{path} must hold a JSON object; found a {type(value).__name__}."
        )
    return value


class SentencePiecePortableTokenizer:
    """SentencePiece ids and text, as a SentencePiece preprocessor gives them.

    Args:
        proto: bytes, the serialized SentencePiece model.
        vocabulary: the tokens, reserved tokens first; id = index.
        language_code: bool, split a leading `>>xx<<` off as one piece.
        end: bool, end each non-empty row with `[END]` (a source with
            `source_end`); a cut row keeps it.
        max_length: int or `None`, the longest id sequence `encode` returns.

    Example:

    >>> tokenizer = SentencePiecePortableTokenizer(proto, vocabulary)  # doctest: +SKIP
    >>> tokenizer.tokenize(["Hallo Welt"])  # doctest: +SKIP
    [[57, 212]]
    """

    def __init__(
        self, proto, vocabulary, language_code=False, end=False, max_length=None
    ):
        import sentencepiece

        vocabulary = _check_vocabulary(list(vocabulary), "`vocabulary`")
        if tuple(vocabulary[: len(_RESERVED_TOKENS)]) != _RESERVED_TOKENS:
            raise ValueError(f"`vocabulary` must start with {list(_RESERVED_TOKENS)}.")
        self.vocabulary = vocabulary
        self.language_code = bool(language_code)
        self.end = bool(end)
        self.max_length = max_length
        self._processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
        reserved = len(_RESERVED_TOKENS)
        # The reserved tokens are no pieces, as in the preprocessor's table.
        self._index = {token: i for i, token in enumerate(vocabulary) if i >= reserved}
        self._unknown_id = _RESERVED_TOKENS.index("[UNK]")
        self._end_id = _RESERVED_TOKENS.index("[END]")
        self._skipped_ids = frozenset(
            _RESERVED_TOKENS.index(t) for t in ("[PAD]", "[UNK]", "[START]", "[MASK]")
        )

    @classmethod
    def from_directory(cls, directory, side="source"):
        """The tokenizer of one side of an export (or a run) directory:
        `<side>.spm`, `<side>_vocabulary.txt` and `preprocessor.json`."""
        directory = os.fspath(directory)
        settings = _read_json(os.path.join(directory, SETTINGS_FILE))
        path = os.path.join(directory, MODEL_FILES[side])
        try:
            with open(path, "rb") as file:
                proto = file.read()
        except OSError as error:
            raise ValueError(f"SentencePiece model {path}: {error}") from None
        boundaries = settings.get("bucket_boundaries") or []
        return cls(
            proto,
            read_vocabulary(os.path.join(directory, VOCABULARY_FILES[side])),
            language_code=settings.get("language_code", False),
            end=side == "source" and settings.get("source_end", False),
            max_length=boundaries[-1] if boundaries else settings.get("max_length"),
        )

    def pieces(self, text):
        """A `str` (or UTF-8 `bytes`) -> its pieces."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if not isinstance(text, str):
            raise TypeError(f"`text` must be a str; received {type(text).__name__}.")
        code = []
        if self.language_code and text.startswith(">>"):
            end = text.find("<<")
            if end != -1:
                code, text = [text[: end + 2]], text[end + 2 :]
        return code + self._processor.encode(text, out_type=str)

    def tokenize(self, texts):
        """A list of `str` -> a list of id lists, nothing cut."""
        if isinstance(texts, (str, bytes)):
            raise TypeError("`texts` must be a list of str; received one string.")
        rows = []
        for text in texts:
            row = [self._index.get(p, self._unknown_id) for p in self.pieces(text)]
            rows.append(row + [self._end_id] if self.end and row else row)
        return rows

    def encode(self, texts):
        """A list of `str` -> (id lists cut to `max_length`, which were cut)."""
        rows = self.tokenize(texts)
        limit = self.max_length
        if limit is None:
            return rows, [False] * len(rows)
        cut = [len(row) > limit for row in rows]
        if self.end:
            rows = [
                row[: limit - 1] + [self._end_id] if c else row
                for row, c in zip(rows, cut)
            ]
        else:
            rows = [row[:limit] for row in rows]
        return rows, cut

    def id_to_token(self, ids):
        """Ids -> tokens."""
        return [self.vocabulary[i] for i in ids]

    def id_to_token_rows(self, rows):
        """Rows of ids -> rows of tokens."""
        return [self.id_to_token(row) for row in rows]

    def detokenize(self, rows):
        """Id rows -> `str`s: pieces up to `[END]`, the other reserved ids
        left out, joined, `▁` -> space, stripped."""
        texts = []
        for row in rows:
            pieces = []
            for token_id in row:
                token_id = int(token_id)
                if not 0 <= token_id < len(self.vocabulary):
                    raise ValueError(
                        f"`rows` must hold ids in [0, {len(self.vocabulary)}); "
                        f"received {token_id}."
                    )
                if token_id == self._end_id:
                    break
                if token_id not in self._skipped_ids:
                    pieces.append(self.vocabulary[token_id])
            texts.append(self.join(pieces))
        return texts

    def join(self, pieces):
        """Pieces (no special ones) -> readable text."""
        return "".join(pieces).replace(WORD_BOUNDARY, " ").strip()

"""SentencePiece tokenizers over a keras-seq vocabulary.

A SentencePiece model (Kudo & Richardson, 2018) cuts raw text into pieces,
marking each word start with `▁` (U+2581); it carries its own text
normalization (by default NFKC with Unicode spaces folded to one space and
control characters dropped), so text reaches it untouched. The vocabulary,
though, is the zoo's: the reserved tokens at ids 0..4 and then pieces, id =
index, as a Marian checkpoint's `vocab.json` maps pieces to ids on its own
(`zoo.pretrained.vocabulary`). So the model gives pieces, not its own ids,
and a lookup table gives each piece its id in the vocabulary, a piece the
vocabulary lacks `[UNK]`: what `transformers.MarianTokenizer` does.

    text -> [language code] -> SentencePiece pieces -> vocabulary ids
    ids  -> pieces (reserved ids skipped) -> joined, `▁` -> space, stripped

With `language_code`, a text starting with `>>xx<<` (a multilingual Marian
model's target-language token) keeps that code as one piece of its own,
looked up like any other, and the rest goes to SentencePiece, as
`MarianTokenizer.remove_language_code` does.

The tokenizer runs TensorFlow Text's SentencePiece op and a
`tf.lookup.StaticHashTable`, eagerly, inside `tf.data` and `tf.function`,
and in an exported SavedModel, where the model travels inside the graph
(and as an asset beside it). Training may sample a segmentation per pass
(subword regularization, Kudo, 2018) with `sampling`; every other path uses
the one best segmentation.

References:
    Kudo & Richardson (2018), "SentencePiece: A simple and language
    independent subword tokenizer and detokenizer for Neural Text
    Processing". Kudo (2018), "Subword Regularization".
"""

import io
import os

import tensorflow as tf

from keras_seq.text.dataset_ops import strings_graph
from keras_seq.text.vocabulary import (
    MASK_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    UNK_ID,
    _check_texts,
    _check_tokens,
    load_vocabulary,
)
from keras_seq.validation import check_rate

WORD_BOUNDARY = "\u2581"
# The model files a preprocessor directory holds, by side.
MODEL_FILES = {"source": "source.spm", "target": "target.spm"}
# The name `preprocessor.json` records under "tokenizer".
NAME = "sentencepiece"

# A Marian language code: `>>` up to the first `<<` at the start of a text
# (RE2; `(?s)` so that a newline inside does not end the match).
_CODE = r"(?s)^(>>.*?<<)"
# What Python's `str.strip` strips: ASCII spaces, the separators Zs, Zl and
# Zp, and the information separators and NEL.
_STRIP = r"^[\s\p{Z}\x1c-\x1f\x85]+|[\s\p{Z}\x1c-\x1f\x85]+$"


# TensorFlow Text's SentencePiece op keeps its parsed model in a resource
# its kernel owns, and `keras.utils.clear_session()` drops the eager kernel
# cache, and with it every such resource an eager op made. So the op is made
# inside each graph that tokenizes (an eager call runs through one
# `tf.function`): there the model resource lives with the graph's kernel and
# is made again whenever the kernel is, and an export holds the model as an
# attribute of the graph's own op.
def _model_op(proto, alpha=None):
    """A TensorFlow Text tokenizer of `proto` (pieces out), in the current
    graph; with `alpha`, sampling (`nbest_size=-1`)."""
    # Loaded on first use: `keras_seq.text` imports without TensorFlow Text.
    import tensorflow_text

    sampling = {} if alpha is None else {"nbest_size": -1, "alpha": alpha}
    return tensorflow_text.SentencepieceTokenizer(
        model=proto, out_type=tf.string, **sampling
    )


def check_model_proto(proto, where="`proto`"):
    """Refuses what is not a serialized SentencePiece model, in one line.

    Args:
        proto: bytes, the content of a `.spm` (`.model`) file.
        where: the name errors give, e.g. the file's path.

    Returns:
        `proto` as bytes.

    Raises:
        ValueError: naming `where`, for other types, empty bytes or bytes
            SentencePiece cannot parse.
    """
    if isinstance(proto, bytearray):
        proto = bytes(proto)
    if not isinstance(proto, bytes) or not proto:
        raise ValueError(
            f"{where} must hold a serialized SentencePiece model; received "
            f"{'empty bytes' if proto == b'' else type(proto).__name__}."
        )
    try:
        _model_op(proto).vocab_size()  # Parses the model: a bad one fails.
    except (tf.errors.OpError, ValueError) as error:
        message = str(error).strip().splitlines()[0] if str(error) else ""
        raise ValueError(
            f"{where} is not a SentencePiece model that can be read: {message}"
        ) from None
    return proto


def read_model(path):
    """The bytes of a `.spm` file, refused in one line naming it when it is
    missing or not a SentencePiece model."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"SentencePiece model {path} does not exist or is not a file.")
    with open(path, "rb") as file:
        return check_model_proto(file.read(), f"SentencePiece model {path}")


def write_model(proto, path):
    """Writes `proto` to `path` (a `.spm` file), creating its directory."""
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "wb") as file:
        file.write(check_model_proto(proto))


def make_sentencepiece_tokenizer(model, vocabulary=None, language_code=False):
    """A `SentencePieceTokenizer` from bytes or files.

    Args:
        model: bytes of a serialized SentencePiece model, or the path of a
            `.spm` file.
        vocabulary: a list of tokens starting with `RESERVED_TOKENS`, or the
            path of a vocabulary file; `None` for the model's own pieces
            (`model_vocabulary`).
        language_code: bool, see `SentencePieceTokenizer`.

    Returns:
        A `SentencePieceTokenizer`.
    """
    if isinstance(model, (bytes, bytearray)):
        proto = check_model_proto(model)
    else:
        proto = read_model(model)
    if vocabulary is None:
        vocabulary = model_vocabulary(proto)
    elif isinstance(vocabulary, str) or hasattr(vocabulary, "__fspath__"):
        vocabulary = load_vocabulary(vocabulary)
    return SentencePieceTokenizer(proto, vocabulary, language_code)


def model_vocabulary(proto):
    """The reserved tokens, then the model's pieces in its order.

    The model's unknown and control pieces (`<unk>`, `<s>`, `</s>`) are
    left out: the reserved tokens stand for them.
    """
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
    tokens = list(RESERVED_TOKENS)
    for index in range(processor.get_piece_size()):
        if processor.is_unknown(index) or processor.is_control(index):
            continue
        piece = processor.id_to_piece(index)
        if piece not in tokens:
            tokens.append(piece)
    return tokens


def train_sentencepiece(
    texts, vocabulary_size, model_type="unigram", character_coverage=0.9995, seed=0
):
    """Trains a SentencePiece model and its keras-seq vocabulary on `texts`.

    The model has no begin, end or padding pieces of its own (the reserved
    tokens serve), and its `<unk>` is the vocabulary's `[UNK]`, so the
    vocabulary is the 5 reserved tokens and the model's other pieces:
    `vocabulary_size` tokens in all.

    Args:
        texts: a list of strings.
        vocabulary_size: int, the vocabulary's size, reserved tokens included.
        model_type: `"unigram"` (Kudo, 2018) or `"bpe"` (Sennrich et al., 2016).
        character_coverage: float, the share of characters the model must
            cover; the rarest others become `[UNK]`.
        seed: int, SentencePiece's random seed (its sentence sampling).

    Returns:
        `(proto, vocabulary)`: the serialized model (bytes) and the tokens.

    Raises:
        ValueError: for a model type other than the two, a size the corpus
            cannot fill or one at most the reserved tokens.
    """
    import sentencepiece

    texts = _check_texts(texts)
    if model_type not in ("unigram", "bpe"):
        raise ValueError(
            f"`model_type` must be 'unigram' or 'bpe'; received {model_type!r}."
        )
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
    model = io.BytesIO()
    sentencepiece.set_random_generator_seed(seed)
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(texts),
            model_writer=model,
            # `<unk>` is one of the model's pieces; [UNK] stands for it.
            vocab_size=vocabulary_size - reserved + 1,
            model_type=model_type,
            character_coverage=character_coverage,
            unk_id=0,
            bos_id=-1,
            eos_id=-1,
            pad_id=-1,
            # A corpus that cannot fill the size gives a smaller vocabulary,
            # as WordPiece training does.
            hard_vocab_limit=False,
            minloglevel=2,
        )
    except RuntimeError as error:
        message = str(error).strip().splitlines()[-1]
        raise ValueError(
            f"SentencePiece could not train a vocabulary of {vocabulary_size} "
            f"tokens on `texts`: {message}"
        ) from None
    proto = model.getvalue()
    return proto, model_vocabulary(proto)


class ModelVocabulary(list):
    """A vocabulary (its tokens, a list) with the SentencePiece model whose
    pieces it lists, as a run learns and resumes them.

    Args:
        tokens: the tokens, reserved tokens first.
        proto: bytes, the serialized model.
    """

    def __init__(self, tokens, proto):
        super().__init__(tokens)
        self.proto = proto


def with_model(tokens, path):
    """`tokens` as a `ModelVocabulary` of the model at `path` when that file
    exists (a SentencePiece run's), else `tokens` unchanged."""
    if not os.path.isfile(os.fspath(path)):
        return tokens
    return ModelVocabulary(tokens, read_model(path))


class SentencePieceTokenizer(tf.Module):
    """SentencePiece pieces mapped to a keras-seq vocabulary's ids.

    It plugs in wherever a tokenizer of `make_tokenizer` does
    (`tokenize_graph`, `detokenize`, `detokenize_graph`, the
    preprocessors): `get_vocabulary()`, `vocabulary_size()`, `lowercase`
    and `strip_accents` (always False: the model's normalization rules
    are its own), and a call on a (B,) `tf.string` tensor giving ragged
    (B, None) int32 ids.

    Args:
        proto: bytes, the serialized SentencePiece model (a `.spm` file).
        vocabulary: the tokens, `RESERVED_TOKENS` first; id = index.
        language_code: bool, split a leading `>>xx<<` off as one piece.

    Example:

    >>> tokenizer = SentencePieceTokenizer(proto, vocabulary)  # doctest: +SKIP
    >>> tokenizer(tf.constant(["Hallo Welt"])).to_list()  # doctest: +SKIP
    [[57, 212]]
    """

    # `tokenize_graph` leaves the text to the model's normalization rules.
    normalizes_text = True
    lowercase = False
    strip_accents = False
    # What detokenization leaves out: every reserved id but [END], which
    # ends the text (`MarianTokenizer.decode(skip_special_tokens=True)`
    # drops `<pad>`, `<unk>` and `</s>`).
    skipped_ids = (PAD_ID, UNK_ID, START_ID, MASK_ID)

    def __init__(self, proto, vocabulary, language_code=False):
        super().__init__(name="sentencepiece_tokenizer")
        tokens = list(vocabulary)
        _check_tokens(tokens, "`vocabulary`")
        self.proto = check_model_proto(proto)
        self.language_code = bool(language_code)
        self._tokens = tokens
        self._eager_ids = strings_graph(self._graph_ids)
        # The reserved tokens are no keys: a text whose unknown characters
        # spell `[PAD]` must not become padding.
        reserved = len(RESERVED_TOKENS)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(tokens[reserved:], tf.string),
                tf.range(reserved, len(tokens), dtype="int32"),
            ),
            default_value=UNK_ID,
        )

    def get_vocabulary(self):
        """The tokens, id = index."""
        return list(self._tokens)

    def vocabulary_size(self):
        return len(self._tokens)

    def __call__(self, sentences):
        """(B,) `tf.string` -> ragged (B, None) int32 ids (the best
        segmentation); one string -> (None,) ids, as keras-hub's tokenizers."""
        sentences = tf.convert_to_tensor(sentences, tf.string)
        if sentences.shape.rank == 0:
            return self(sentences[tf.newaxis])[0]
        if tf.executing_eagerly():
            return self._eager_ids(sentences)
        return self._graph_ids(sentences)

    tokenize = __call__

    def _graph_ids(self, sentences, alpha=None):
        return self._ids(self.pieces(sentences, alpha))

    def pieces(self, sentences, alpha=None):
        """(B,) `tf.string` -> ragged (B, None) `tf.string` pieces, in a graph
        (`tf.function`, `tf.data`); `alpha`: sampled (`sampling`)."""
        model = _model_op(self.proto, alpha)
        sentences = tf.convert_to_tensor(sentences, tf.string)
        if not self.language_code:
            return model.tokenize(sentences)
        coded = tf.strings.regex_full_match(sentences, _CODE + ".*")  # (B,)
        codes = tf.strings.regex_replace(sentences, _CODE + ".*$", r"\1")
        rest = tf.where(
            coded, tf.strings.regex_replace(sentences, _CODE, ""), sentences
        )
        codes = tf.ragged.boolean_mask(codes[:, tf.newaxis], coded[:, tf.newaxis])
        return tf.concat([codes, model.tokenize(rest)], axis=1)

    def sampling(self, alpha):
        """A function drawing one segmentation per sentence, for training only.

        Unigram models sample from all segmentations with probabilities
        sharpened by `alpha` (Kudo, 2018); BPE models drop each merge with
        probability `alpha` (BPE-dropout, Provilkov et al., 2020). The op
        draws from TensorFlow Text's own generator, unseeded: a resumed run
        draws other segmentations than an uninterrupted one would have.

        Args:
            alpha: float in (0, 1).

        Returns:
            A function from (B,) `tf.string` to ragged (B, None) int32 ids.
        """
        check_rate(alpha, "alpha")
        if not alpha:
            raise ValueError(f"`alpha` must be in (0, 1); received {alpha!r}.")
        alpha = float(alpha)
        return strings_graph(lambda sentences: self._graph_ids(sentences, alpha))

    def _ids(self, pieces):
        return tf.ragged.map_flat_values(self._table.lookup, pieces)

    # Ids to text (the reserved ids already left out).

    def join_pieces(self, pieces):
        """A list of pieces -> text, as `MarianTokenizer.decode` writes it."""
        return "".join(pieces).replace(WORD_BOUNDARY, " ").strip()

    def join_pieces_graph(self, pieces):
        """Ragged (B, None) `tf.string` pieces -> (B,) `tf.string` text."""
        text = tf.strings.reduce_join(pieces, axis=-1)
        text = tf.strings.regex_replace(text, WORD_BOUNDARY, " ")
        return tf.strings.regex_replace(text, _STRIP, "")

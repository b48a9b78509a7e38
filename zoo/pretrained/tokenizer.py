"""A Marian checkpoint's tokenizer as the zoo's `TranslationPreprocessor`.

A Marian (OPUS-MT) directory holds two SentencePiece models, `source.spm`
and `target.spm`, and the vocabulary that gives their pieces Marian's ids
(`vocab.json`, and `target_vocab.json` when `tokenizer_config.json` sets
`separate_vocabs`). `transformers.MarianTokenizer` splits a leading
language code `>>xx<<` off as one token, cuts the rest into pieces with the
side's model, looks each piece up in the side's vocabulary (`<unk>` when
absent) and ends a source with `</s>`. The preprocessor built here does the
same in the zoo's ids (`zoo.pretrained.vocabulary`): `</s>` is `[END]`,
`<unk>` is `[UNK]`, so its ids are `MarianTokenizer`'s mapped by
`MarianVocabulary.zoo_id`. Two differences, both on purpose:

- a blank source (no piece at all) gives no ids instead of `[</s>]`, so
  every path answers it with an empty string, as for any zoo translator;
- text that spells a special token (`</s>`, `<unk>`, `<pad>`) is text,
  cut into pieces like any other; `MarianTokenizer` reads it as the token.
"""

import json
import os

from keras_seq.text import TranslationPreprocessor
from keras_seq.text.sentencepiece_tokenizer import (
    MODEL_FILES,
    SentencePieceTokenizer,
    read_model,
)

TOKENIZER_CONFIG_FILE = "tokenizer_config.json"


def read_tokenizer_config(directory):
    """`tokenizer_config.json` of a Marian directory, `{}` when absent.

    Raises:
        ValueError: naming the file, when it is not a JSON object.
    """
    path = os.path.join(os.fspath(directory), TOKENIZER_CONFIG_FILE)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as file:
            config = json.load(file)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} must hold a JSON object: {error}") from None
    if not isinstance(config, dict):
        raise ValueError(
            f"{path} must hold a JSON object; found a {type(config).__name__}."
        )
    return config


def marian_preprocessor(
    directory, source_vocabulary, target_vocabulary=None, max_length=None
):
    """The `TranslationPreprocessor` of a Marian checkpoint directory.

    Args:
        directory: the directory `save_pretrained` wrote (`source.spm`,
            `target.spm`, optionally `tokenizer_config.json`).
        source_vocabulary: the `MarianVocabulary` of `vocab.json`.
        target_vocabulary: the `MarianVocabulary` of `target_vocab.json`,
            or `None` (or the source's) when both sides share `vocab.json`.
        max_length: int, the model's longest sequence
            (`max_position_embeddings`).

    Returns:
        A `TranslationPreprocessor` with two `SentencePieceTokenizer`s and
        `source_end=True`; `save` writes it as any other.

    Raises:
        ValueError: in one line naming the file, for a missing or unreadable
            `.spm`, or naming `separate_vocabs` when the tokenizer config
            asks for separate vocabularies and only one is given.
    """
    directory = os.fspath(directory)
    config = read_tokenizer_config(directory)
    separate = config.get("separate_vocabs", False)
    if not isinstance(separate, bool):
        raise ValueError(
            f"{TOKENIZER_CONFIG_FILE}: `separate_vocabs` must be true or false; "
            f"received {separate!r}."
        )
    if separate and target_vocabulary is None:
        raise ValueError(
            f"{TOKENIZER_CONFIG_FILE} sets `separate_vocabs` true; the target's "
            "vocabulary (target_vocab.json) is needed."
        )
    protos = {
        side: read_model(os.path.join(directory, name))
        for side, name in MODEL_FILES.items()
    }
    target_vocabulary = target_vocabulary or source_vocabulary
    # MarianTokenizer splits a language code off every text, either side.
    source = SentencePieceTokenizer(
        protos["source"], source_vocabulary.tokens, language_code=True
    )
    target = SentencePieceTokenizer(
        protos["target"], target_vocabulary.tokens, language_code=True
    )
    return TranslationPreprocessor(source, target, max_length, source_end=True)

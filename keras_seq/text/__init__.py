"""Tokenizers, vocabularies and `tf.data` pipelines.

Vocabularies are WordPiece, trained with the `tensorflow_text` learner and
starting with `RESERVED_TOKENS` (`[PAD]` is id 0). Tokenizers are keras-hub
`WordPieceTokenizer`s; the pipelines turn texts into batches of int32 ids for
`model.fit`, with 0 as padding. Each text model's text goes in and out
through one preprocessor on every path (training, in-process use, export):
`TranslationPreprocessor`, `ClassificationPreprocessor`,
`LanguageModelPreprocessor` and `MaskedLanguageModelPreprocessor`. A
translator may tokenize with SentencePiece instead
(`SentencePieceTokenizer`, `train_sentencepiece`), as a Marian checkpoint
does.
"""

import importlib

from keras_seq.text.vocabulary import (
    END_ID,
    MASK_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    UNK_ID,
    UNSAMPLABLE_IDS,
    load_vocabulary,
    save_vocabulary,
    train_wordpiece_vocabulary,
)

# The tokenizers and pipelines need keras-hub and TensorFlow, which
# generation on JAX does not: they load on first use (PEP 562), so that
# the special-token ids above come without them.
_LAZY = {
    "ClassificationPreprocessor": "classification_preprocessor",
    "LanguageModelPreprocessor": "language_model_preprocessor",
    "MaskedLanguageModelPreprocessor": "language_model_preprocessor",
    "Preprocessor": "preprocessor",
    "TranslationPreprocessor": "translation_preprocessor",
    "TruncationWarning": "dataset_ops",
    "default_bucket_boundaries": "translation_preprocessor",
    "make_classification_dataset": "classification_preprocessor",
    "make_language_model_dataset": "language_model_preprocessor",
    "make_masked_language_model_dataset": "language_model_preprocessor",
    "make_translation_dataset": "translation_preprocessor",
    "clean_up_spacing": "tokenizers",
    "detokenize": "tokenizers",
    "detokenize_graph": "tokenizers",
    "make_tokenizer": "tokenizers",
    "normalize_graph": "tokenizers",
    "tokenize_graph": "tokenizers",
    "SentencePieceTokenizer": "sentencepiece_tokenizer",
    "make_sentencepiece_tokenizer": "sentencepiece_tokenizer",
    "train_sentencepiece": "sentencepiece_tokenizer",
}


def __getattr__(name):
    if name in _LAZY:
        module = importlib.import_module(f"keras_seq.text.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'keras_seq.text' has no attribute {name!r}")


__all__ = [
    "END_ID",
    "MASK_ID",
    "PAD_ID",
    "RESERVED_TOKENS",
    "START_ID",
    "UNK_ID",
    "UNSAMPLABLE_IDS",
    "ClassificationPreprocessor",
    "LanguageModelPreprocessor",
    "MaskedLanguageModelPreprocessor",
    "Preprocessor",
    "SentencePieceTokenizer",
    "TranslationPreprocessor",
    "TruncationWarning",
    "clean_up_spacing",
    "default_bucket_boundaries",
    "detokenize",
    "detokenize_graph",
    "load_vocabulary",
    "make_classification_dataset",
    "make_sentencepiece_tokenizer",
    "make_language_model_dataset",
    "make_masked_language_model_dataset",
    "make_tokenizer",
    "make_translation_dataset",
    "normalize_graph",
    "save_vocabulary",
    "tokenize_graph",
    "train_sentencepiece",
    "train_wordpiece_vocabulary",
]

"""Tokenizers, vocabularies and `tf.data` pipelines.

Vocabularies are WordPiece, trained with the `tensorflow_text` learner and
starting with `RESERVED_TOKENS` (`[PAD]` is id 0). Tokenizers are keras-hub
`WordPieceTokenizer`s; the pipelines turn texts into batches of int32 ids for
`model.fit`, with 0 as padding.
"""

from keras_seq.text.pipelines import (
    default_bucket_boundaries,
    make_classification_dataset,
    make_language_model_dataset,
    make_masked_language_model_dataset,
    make_translation_dataset,
)
from keras_seq.text.tokenizers import (
    clean_up_spacing,
    detokenize,
    detokenize_graph,
    make_tokenizer,
)
from keras_seq.text.vocabulary import (
    END_ID,
    MASK_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    UNK_ID,
    load_vocabulary,
    save_vocabulary,
    train_wordpiece_vocabulary,
)

__all__ = [
    "END_ID",
    "MASK_ID",
    "PAD_ID",
    "RESERVED_TOKENS",
    "START_ID",
    "UNK_ID",
    "clean_up_spacing",
    "default_bucket_boundaries",
    "detokenize",
    "detokenize_graph",
    "load_vocabulary",
    "make_classification_dataset",
    "make_language_model_dataset",
    "make_masked_language_model_dataset",
    "make_tokenizer",
    "make_translation_dataset",
    "save_vocabulary",
    "train_wordpiece_vocabulary",
]

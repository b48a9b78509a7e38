"""Loaders for the real corpora: translation, sentiment, language modelling.

Nothing is downloaded at run time: `scripts/install_corpora.sh` installs the
three corpora, and a missing one raises `CorpusNotFoundError` saying how to
install it. Splits are deterministic (no seed), so results are comparable.
"""

from keras_seq.data.errors import CorpusNotFoundError
from keras_seq.data.language_modeling import TextCorpus, load_shakespeare
from keras_seq.data.sentiment import SentimentCorpus, load_movie_review_snippets
from keras_seq.data.translation import (
    TranslationCorpus,
    load_trans_de_en,
    load_tsv_pairs,
    parse_trans_line,
    split_pairs,
)

__all__ = [
    "CorpusNotFoundError",
    "SentimentCorpus",
    "TextCorpus",
    "TranslationCorpus",
    "load_movie_review_snippets",
    "load_shakespeare",
    "load_trans_de_en",
    "load_tsv_pairs",
    "parse_trans_line",
    "split_pairs",
]

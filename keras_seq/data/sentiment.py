"""Movie-review snippets with human sentiment ratings, for classification.

The corpus is `movieReviewSnippets_GroundTruth.txt` of Hutto and Gilbert
(2014): 10,605 sentences from movie reviews, each rated by about 20 people on
a scale from -4 to +4. It ships only in the source distribution of
`vaderSentiment==3.3.2` (`additional_resources/hutto_ICWSM_2014.tar.gz`);
`scripts/install_corpora.sh` copies it to
`$KERAS_SEQ_DATA/corpora/` (by default `~/.cache/keras_seq/corpora/`).

The file is tab-separated, one snippet a line: `id<TAB>mean_score<TAB>text`.

References:
    Hutto, C. J. and Gilbert, E. (2014). VADER: A Parsimonious Rule-based
    Model for Sentiment Analysis of Social Media Text. ICWSM.
"""

import dataclasses
import os

from keras_seq.data.errors import INSTALL_SCRIPT, CorpusNotFoundError
from keras_seq.data.translation import (
    SPLIT_MODULUS,
    TEST_REMAINDER,
    VALIDATION_REMAINDER,
)

SNIPPETS_FILENAME = "movieReviewSnippets_GroundTruth.txt"


@dataclasses.dataclass(frozen=True)
class SentimentCorpus:
    """Training, validation and test splits of `(text, label)` pairs.

    Attributes:
        train: list of `(text, label)`; label 1 is positive, 0 negative.
        validation: list of `(text, label)`.
        test: list of `(text, label)`.
        neutral_dropped: how many snippets had a mean score of exactly 0
            and were left out.
        class_names: None, or the name of each label id (0 first) of a
            corpus whose labels were given as names.
    """

    train: list
    validation: list
    test: list
    neutral_dropped: int = 0
    class_names: tuple = None


def data_dir():
    """Where installed corpora live.

    Returns:
        `$KERAS_SEQ_DATA` when it is set and not empty, else
        `~/.cache/keras_seq`.
    """
    return os.environ.get("KERAS_SEQ_DATA") or os.path.join(
        os.path.expanduser("~"), ".cache", "keras_seq"
    )


def default_snippets_path():
    """Where `scripts/install_corpora.sh` puts the snippets file.

    Returns:
        `<data_dir()>/corpora/movieReviewSnippets_GroundTruth.txt`.
    """
    return os.path.join(data_dir(), "corpora", SNIPPETS_FILENAME)


def _parse_snippet(line, number, path):
    fields = line.split("\t", 2)
    try:
        score = float(fields[1])
        text = fields[2].strip()
    except (IndexError, ValueError):
        text = ""
    if not text:
        raise ValueError(
            f"{path}, line {number}: expected `id<TAB>mean_score<TAB>text`; "
            f"received {line[:80]!r}"
        )
    return score, text


def load_movie_review_snippets(path=None):
    """Loads the movie-review snippets as a binary sentiment corpus.

    A snippet whose mean score is above 0 gets label 1 (positive), below 0
    label 0 (negative); a mean of exactly 0 is dropped, and so is a repeated
    text (the first occurrence is kept). The kept snippets are numbered in
    file order from 0 and split by the same rule as the translation corpus:
    `n % 20 == 0` is the test set, `n % 20 == 1` the validation set, the rest
    the training set.

    The file of vaderSentiment 3.3.2 has 10,605 snippets; without the 37
    neutral ones and 2 repeated texts, 10,566 remain: 9,508 for training
    (4,708 positive), 529 for validation (266 positive) and 529 for test
    (267 positive).

    Args:
        path: the snippets file; by default
            `$KERAS_SEQ_DATA/corpora/movieReviewSnippets_GroundTruth.txt`.

    Returns:
        A `SentimentCorpus`.

    Raises:
        CorpusNotFoundError: when the file is missing.
        ValueError: when a line is not `id<TAB>mean_score<TAB>text`.

    Example:

    >>> corpus = load_movie_review_snippets()  # doctest: +SKIP
    >>> corpus.test[0]  # doctest: +SKIP
    ("The Rock is destined to be the 21st Century's new ''Conan'' ...", 1)
    """
    path = os.fspath(path) if path is not None else default_snippets_path()
    if not os.path.isfile(path):
        raise CorpusNotFoundError(
            "The movie-review snippets (Hutto and Gilbert, 2014)",
            path,
            f"run `{INSTALL_SCRIPT}` from the keras-seq repository, which "
            "runs `pip download --no-deps --no-binary :all: "
            "vadersentiment==3.3.2`, extracts "
            "additional_resources/hutto_ICWSM_2014.tar.gz from the sdist "
            f"and copies {SNIPPETS_FILENAME} from it to {path} "
            "(the directory follows $KERAS_SEQ_DATA)",
        )
    splits = {TEST_REMAINDER: [], VALIDATION_REMAINDER: []}
    train = []
    neutral = 0
    seen = set()
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            score, text = _parse_snippet(line, number, path)
            if score == 0:
                neutral += 1
                continue
            if text in seen:
                continue
            # The snippet's number among the kept ones decides its split.
            splits.get(len(seen) % SPLIT_MODULUS, train).append(
                (text, 1 if score > 0 else 0)
            )
            seen.add(text)
    return SentimentCorpus(
        train=train,
        validation=splits[VALIDATION_REMAINDER],
        test=splits[TEST_REMAINDER],
        neutral_dropped=neutral,
    )

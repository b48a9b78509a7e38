"""Tests for keras_seq.data.sentiment: labels, the split, a missing file, and
the real movie-review snippets."""

import os

import pytest

from keras_seq.data import CorpusNotFoundError, load_movie_review_snippets
from keras_seq.data.sentiment import default_snippets_path


def write_snippets(path, rows):
    # The real file has Windows line ends.
    text = "".join(f"{i}\t{score}\t{text}\r\n" for i, (score, text) in rows)
    path.write_text(text, encoding="utf-8", newline="")
    return path


def test_labels_neutral_and_repeated_snippets(tmp_path):
    rows = [
        (1, (2.26666666667, "A splash.")),
        (2, (-0.6, "Too tepid.")),
        (3, (0.0, "Neither here nor there.")),
        (4, (1.5, "A splash.")),
        (5, (-3.1, "''Horrible'' and dull.")),
    ]
    corpus = load_movie_review_snippets(write_snippets(tmp_path / "s.txt", rows))
    assert corpus.test == [("A splash.", 1)]
    assert corpus.validation == [("Too tepid.", 0)]
    assert corpus.train == [("''Horrible'' and dull.", 0)]
    assert corpus.neutral_dropped == 1


def test_split_rule(tmp_path):
    rows = [(i, (1.0 if i % 2 else -1.0, f"Snippet {i}.")) for i in range(45)]
    corpus = load_movie_review_snippets(write_snippets(tmp_path / "s.txt", rows))
    assert [text for text, _ in corpus.test] == [
        "Snippet 0.",
        "Snippet 20.",
        "Snippet 40.",
    ]
    assert [text for text, _ in corpus.validation] == [
        "Snippet 1.",
        "Snippet 21.",
        "Snippet 41.",
    ]
    assert len(corpus.train) == 39
    assert corpus.train[0] == ("Snippet 2.", 0)


def test_a_malformed_line_names_its_number(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("1\t1.0\tFine.\n2\tnot a score\tText.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        load_movie_review_snippets(path)


def test_missing_snippets_say_how_to_install_them(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_SEQ_DATA", os.fspath(tmp_path))
    expected = os.path.join(
        os.fspath(tmp_path), "corpora", "movieReviewSnippets_GroundTruth.txt"
    )
    assert default_snippets_path() == expected
    with pytest.raises(CorpusNotFoundError) as info:
        load_movie_review_snippets()
    assert isinstance(info.value, FileNotFoundError)
    message = str(info.value)
    assert expected in message
    assert "bash scripts/install_corpora.sh" in message
    assert "pip download --no-deps --no-binary :all: vadersentiment==3.3.2" in message


# The real corpus, from the vaderSentiment 3.3.2 sdist.


@pytest.fixture(scope="module")
def real_corpus():
    if not os.path.isfile(default_snippets_path()):
        pytest.skip(
            "movie-review snippets not installed: run scripts/install_corpora.sh"
        )
    return load_movie_review_snippets()


def test_real_counts(real_corpus):
    corpus = real_corpus
    sizes = (len(corpus.train), len(corpus.validation), len(corpus.test))
    assert sizes == (9_508, 529, 529)
    # 10,605 snippets: 37 neutral ones and 2 repeated texts are dropped.
    assert corpus.neutral_dropped == 37
    positives = tuple(
        sum(label for _, label in split)
        for split in (corpus.train, corpus.validation, corpus.test)
    )
    assert positives == (4_708, 266, 267)
    assert corpus.test[0][0].startswith("The Rock is destined to be the 21st")


def test_real_splits_are_disjoint(real_corpus):
    texts = [
        {text for text, _ in split}
        for split in (real_corpus.train, real_corpus.validation, real_corpus.test)
    ]
    assert not texts[0] & texts[1]
    assert not texts[0] & texts[2]
    assert not texts[1] & texts[2]

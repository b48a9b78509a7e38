"""Small corpora made in code, and tokenizers trained on them, for the
tests of `keras_seq.text`."""

import itertools

import pytest

from keras_seq.text import make_tokenizer, train_wordpiece_vocabulary

SUBJECTS = ("the cat", "a dog", "my friend", "the teacher", "our neighbour", "she")
VERBS = ("sees", "likes", "finds", "calls", "helps", "visits")
OBJECTS = ("the house", "a small bird", "the old man", "her brother", "the red car")
ENDINGS = (".", "!", "?")
# A word-for-word "German" for the targets: enough to give the two sides
# different vocabularies and lengths.
GERMAN = {
    "the": "die", "cat": "katze", "a": "ein", "dog": "hund", "my": "mein",
    "friend": "freund", "teacher": "lehrerin", "our": "unser",
    "neighbour": "nachbar", "she": "sie", "sees": "sieht", "likes": "mag",
    "finds": "findet", "calls": "ruft", "helps": "hilft", "visits": "besucht",
    "house": "haus", "small": "kleinen", "bird": "vogel", "old": "alten",
    "man": "mann", "her": "ihren", "brother": "bruder", "red": "rote",
    "car": "auto", "and": "und",
}  # fmt: skip

# Everyday sentences whose punctuation the detokenizer must put back.
SIMPLE_SENTENCES = (
    "I don't know, do you?",
    "The cat (a big one) sat on the mat.",
    "She sends an e-mail to her friend!",
    'He said "hello" to me.',
    "It costs 3.5 or 10,000 euros; that is 50% more.",
)


def english_sentences(count=180):
    """`count` sentences of one to four clauses (3 to 24 words) whose first
    clauses differ, so that they stay distinct when truncated."""
    clauses = list(itertools.product(SUBJECTS, VERBS, OBJECTS))
    assert count <= len(clauses)
    sentences = []
    for i in range(count):
        parts = [
            " ".join(clauses[(i + 37 * j) % len(clauses)]) for j in range(1 + i % 4)
        ]
        text = " and ".join(parts) + ENDINGS[i % len(ENDINGS)]
        sentences.append(text[0].upper() + text[1:])
    return sentences


def to_german(sentence):
    words = sentence[:-1].lower().split()
    text = " ".join(GERMAN[word] for word in words) + sentence[-1]
    return text[0].upper() + text[1:]


@pytest.fixture(scope="session")
def pairs():
    return [(english, to_german(english)) for english in english_sentences()]


@pytest.fixture(scope="session")
def english_vocabulary():
    # The pipelines' golden ids are of a lowercasing vocabulary and tokenizer
    # (case is kept by default).
    texts = english_sentences() + list(SIMPLE_SENTENCES) * 12
    return train_wordpiece_vocabulary(texts, 400, lowercase=True)


@pytest.fixture(scope="session")
def source_tokenizer(english_vocabulary):
    return make_tokenizer(english_vocabulary, lowercase=True)


@pytest.fixture(scope="session")
def target_tokenizer():
    german = [to_german(sentence) for sentence in english_sentences()]
    return make_tokenizer(
        train_wordpiece_vocabulary(german, 400, lowercase=True), lowercase=True
    )

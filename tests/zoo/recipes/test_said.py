"""The lines `train` says about the vocabularies and the model it chose."""

import keras

from zoo.recipes import said


def test_vocabularies_against_the_size_asked(capsys):
    said.announce_vocabularies({"source": ["a"] * 120, "target": 90}, 100)
    said.announce_vocabularies({"text": 100}, 100)
    said.announce_vocabularies({"text": 40}, 100, kept=True)
    assert capsys.readouterr().out.splitlines() == [
        "vocabularies learned: source 120, target 90 tokens, of at most 100 asked",
        "vocabularies learned: text 100 tokens, of at most 100 asked",
        "vocabularies kept from the interrupted run: text 40 tokens, of at most "
        "100 asked",
    ]
    said.announce_vocabularies({"text": 40}, 100)
    assert (
        capsys.readouterr()
        .out.strip()
        .endswith("(the training text holds no more word pieces)")
    )


def test_the_minimum_frequency_is_named_and_said_when_it_decided(capsys):
    said.announce_vocabularies({"text": 100}, 100, min_frequency=10)
    said.announce_vocabularies({"source": 40, "target": 90}, 100, min_frequency=2)
    said.announce_vocabularies({"text": 40}, 100, kept=True, min_frequency=2)
    assert capsys.readouterr().out.splitlines() == [
        "vocabularies learned: text 100 tokens, of at most 100 asked, of word "
        "pieces seen at least 10 times",
        "vocabularies learned: source 40, target 90 tokens, of at most 100 "
        "asked, of word pieces seen at least 2 times; the minimum frequency, "
        "not the size asked, decided the size: the training text holds no "
        "more word pieces seen 2 times (a lower --min-frequency learns more)",
        "vocabularies kept from the interrupted run: text 40 tokens, of at most "
        "100 asked",
    ]


def test_model_against_its_preset(capsys):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    presets = {"tiny": {"params": 1234, "config": {"vocabulary_size": 50, "width": 4}}}
    said.announce_model(model, "tiny", presets, {"width": 8})
    said.announce_model(model, "custom", presets, {})
    assert capsys.readouterr().out.splitlines() == [
        "model: 8 parameters; preset tiny lists 1,234 at vocabularies of 50, "
        "without width=8",
        "model: 8 parameters",
    ]

"""Decoding controls on an imported Marian checkpoint decode as transformers'
`generate` and CTranslate2's `translate_batch`.

One tiny random checkpoint (`marian_checkpoints.make_checkpoint`: a shared
vocabulary, as CTranslate2's converter needs), imported with
`zoo.pretrained.marian.load_marian` and converted by CTranslate2's own
`TransformersConverter`. For each control alone and for combinations, the
zoo's greedy ids (`generate`, 12 new tokens) are transformers' greedy ids
(`do_sample=False, num_beams=1`) with the same control, and CTranslate2's
(`beam_size=1`), all in zoo ids, up to and with the end token:

| zoo            | transformers            | CTranslate2                   |
|----------------|-------------------------|-------------------------------|
| `prefix_ids`   | `decoder_input_ids`     | `target_prefix`               |
| `min_new_tokens` | `min_new_tokens`      | `min_decoding_length`         |
| `no_repeat_ngram_size` | `no_repeat_ngram_size` | `no_repeat_ngram_size` |
| `repetition_penalty` | `repetition_penalty` | `repetition_penalty`        |
| `suppress_token_ids` | `suppress_tokens` | `suppress_sequences` (1 id)   |
| `suppress_unknown` | `suppress_tokens=[<unk>]` | `disable_unk`           |

Every control reads the same history in all three: the forced prefix and
the ids chosen (the zoo's and transformers' start token too, which none
of them can write). Where the definitions differ, `_transformers_options`
and the tests say how:

- transformers' `decoder_input_ids` are a prompt: its `max_new_tokens`
  and `min_new_tokens` count the tokens after them; the zoo's and
  CTranslate2's count the forced prefix too.
- transformers' beam search applies its processors to log-probabilities
  (`log_softmax` first): a ruled-out id's probability is not spread over
  the others unless `renormalize_logits=True`, and the repetition penalty
  scales log-probabilities, not logits. The zoo (and CTranslate2) apply
  every control to the logits and normalise after.

- CTranslate2's beam search gives </s> a score of -1e10 in every beam
  but the first at the first step after a target prefix, so a best
  hypothesis that ends right after its prefix can be lost.

With 4 beams at length penalty 0, the zoo's best hypothesis is
transformers' (`renormalize_logits=True`) for the controls that rule ids
out or force them, and CTranslate2's for every control but the prefix.
"""

import keras
import numpy as np
import pytest

from keras_seq.text import END_ID, PAD_ID, UNK_ID

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytest.importorskip("sentencepiece")
marian = pytest.importorskip("zoo.pretrained.marian")
from tests.zoo.pretrained.marian_checkpoints import (  # noqa: E402
    PAD,
    SOURCE_SIZE,
    make_checkpoint,
    pieces,
    write_sentencepiece,
)
from tests.zoo.pretrained.test_marian_model import (  # noqa: E402
    _marian_generate,
    _to_marian,
    _zoo_rows,
)

MAX_NEW_TOKENS = 12
BEAM_TOKENS = 10
# Ragged, rows forcing nothing among them.
PREFIXES = [[49, 21], [12], [], [13, 9, 11], [49], [21]]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """(directory, MarianMTModel, MarianCheckpoint), made once.

    An untied output layer (a tied random one repeats its input token
    whatever the source) and </s> and <unk> made likelier, so that plain
    greedy outputs of `_sources` end early and write <unk>, and each
    control has something to change.
    """
    directory = str(tmp_path_factory.mktemp("marian"))
    reference = make_checkpoint(directory, True, "swish", "safetensors", False, seed=0)
    with torch.no_grad():
        reference.final_logits_bias[0, 0] += 2.0  # </s>
        reference.final_logits_bias[0, 1] += 3.0  # <unk>
    reference.save_pretrained(directory)
    write_sentencepiece(directory)  # CTranslate2's converter loads the tokenizer.
    return directory, reference, marian.load_marian(directory)


@pytest.fixture(scope="module")
def converted(imported, tmp_path_factory):
    """CTranslate2's own conversion of the checkpoint directory."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    directory = str(tmp_path_factory.mktemp("ct2") / "model")
    converter = ctranslate2.converters.TransformersConverter(imported[0])
    converter.convert(directory, quantization="float32")
    return ctranslate2.Translator(directory, device="cpu", intra_threads=1)


def _sources(loaded):
    """(6, 10) zoo source ids, each row ending in [END] (Marian's tokenizer
    ends a source with </s>), padded with 0."""
    rng = np.random.default_rng(0)
    size = len(loaded.source_vocabulary.tokens)
    rows = [list(rng.integers(5, size, n)) + [END_ID] for n in (7, 4, 9, 2, 5, 6)]
    width = max(len(row) for row in rows)
    return np.array([row + [PAD_ID] * (width - len(row)) for row in rows], "int32")


def _zoo(loaded, source, **controls):
    ids = loaded.model.generate(source, max_new_tokens=MAX_NEW_TOKENS, **controls)
    return _zoo_rows(ids)


def _marian_id(vocabulary, ids):
    return [int(i) for i in _to_marian(vocabulary, np.asarray(ids, "int64"))]


def _transformers_options(loaded, controls, prefix=()):
    """transformers' `generate` options for the zoo's `controls`, for a
    row forcing `prefix`."""
    vocabulary = loaded.target_vocabulary
    options = {}
    if "min_new_tokens" in controls:
        # transformers counts the new tokens after `decoder_input_ids`, the
        # zoo the forced prefix too.
        options["min_new_tokens"] = max(controls["min_new_tokens"] - len(prefix), 0)
    for name in ("no_repeat_ngram_size", "repetition_penalty"):
        if name in controls:
            options[name] = controls[name]
    suppressed = list(controls.get("suppress_token_ids", []))
    if controls.get("suppress_unknown"):
        suppressed.append(UNK_ID)
    if suppressed:
        options["suppress_tokens"] = _marian_id(vocabulary, suppressed)
    return options


def _transformers(
    reference, loaded, source, controls, max_new_tokens=MAX_NEW_TOKENS, **options
):
    """transformers' ids for the zoo's `controls`, in zoo ids, `options`
    passed on to `generate`; with a prefix one row at a time, as
    `decoder_input_ids` are not ragged."""
    prefixes = controls.get("prefix_ids")
    if prefixes is None:
        options.update(_transformers_options(loaded, controls))
        return _marian_generate(
            reference, loaded, source, max_new_tokens=max_new_tokens, **options
        )
    rows = []
    for row, prefix in zip(source, prefixes, strict=True):
        start = [PAD] + _marian_id(loaded.target_vocabulary, prefix)
        rows += _marian_generate(
            reference,
            loaded,
            row[None],
            decoder_input_ids=torch.as_tensor([start]),
            # transformers' new tokens are those after `decoder_input_ids`.
            max_new_tokens=max_new_tokens - len(prefix),
            **options,
            **_transformers_options(loaded, controls, prefix),
        )
    return rows


def _ctranslate2(translator, loaded, source, controls, beam_size=1):
    """CTranslate2's ids for the zoo's `controls` (its best hypothesis at
    length penalty 0 with beams), in zoo ids."""
    vocabulary = loaded.target_vocabulary
    piece = {i: p for p, i in pieces(SOURCE_SIZE, "s").items()}
    index = {p: i for i, p in piece.items()}

    def tokens(zoo_ids):
        return [piece[i] for i in _marian_id(vocabulary, zoo_ids)]

    options = {}
    if "prefix_ids" in controls:
        options["target_prefix"] = [tokens(row) for row in controls["prefix_ids"]]
    if "min_new_tokens" in controls:
        options["min_decoding_length"] = controls["min_new_tokens"]
    for name in ("no_repeat_ngram_size", "repetition_penalty"):
        if name in controls:
            options[name] = controls[name]
    if "suppress_token_ids" in controls:
        suppressed = tokens(controls["suppress_token_ids"])
        options["suppress_sequences"] = [[token] for token in suppressed]
    if controls.get("suppress_unknown"):
        options["disable_unk"] = True
    results = translator.translate_batch(
        [
            [piece[i] for i in _marian_id(loaded.source_vocabulary, row[row > 0])]
            for row in source
        ],
        beam_size=beam_size,
        length_penalty=0.0,
        max_decoding_length=MAX_NEW_TOKENS if beam_size == 1 else BEAM_TOKENS,
        # Its default of 1 would rule out an end token first.
        min_decoding_length=options.pop("min_decoding_length", 0),
        return_end_token=True,
        **options,
    )
    return [
        [vocabulary.zoo_id(index[token]) for token in result.hypotheses[0]]
        for result in results
    ]


# Each control alone, then combinations; the suppressed ids are among the
# plain output's.
CASES = {
    "prefix": {"prefix_ids": PREFIXES},
    "min_new_tokens": {"min_new_tokens": 6},
    "no_repeat_ngram_1": {"no_repeat_ngram_size": 1},
    "no_repeat_ngram_2": {"no_repeat_ngram_size": 2},
    "repetition_penalty": {"repetition_penalty": 1.5},
    "repetition_reward": {"repetition_penalty": 0.7},
    "suppress": {"suppress_token_ids": [49, 5]},
    "unknown": {"suppress_unknown": True},
    "prefix_and_ngram": {"prefix_ids": PREFIXES, "no_repeat_ngram_size": 2},
    "min_penalty_suppress": {
        "min_new_tokens": 6,
        "repetition_penalty": 1.5,
        "suppress_token_ids": [49],
    },
    "prefix_and_min": {"prefix_ids": PREFIXES, "min_new_tokens": 6},
}


def _repeats(row, n):
    """Whether `row` holds some n-gram twice."""
    ngrams = [tuple(row[i : i + n]) for i in range(len(row) - n + 1)]
    return len(ngrams) != len(set(ngrams))


def _check_the_control_acts(plain, got, controls):
    """`got` obeys `controls`, and the plain output did not: no test
    passes because the control had nothing to change."""
    assert got != plain
    n = controls.get("no_repeat_ngram_size")
    if n:
        assert any(_repeats(row, n) for row in plain)
        assert not any(_repeats(row, n) for row in got)
    minimum = controls.get("min_new_tokens")
    if minimum:

        def early(row):
            return END_ID in row[:minimum]

        assert any(early(row) for row in plain)
        assert not any(early(row) for row in got)
    suppressed = set(controls.get("suppress_token_ids", []))
    if controls.get("suppress_unknown"):
        suppressed.add(UNK_ID)
    for i in suppressed:
        assert any(i in row for row in plain), i
        assert not any(i in row for row in got), i
    for row, prefix in zip(got, controls.get("prefix_ids", []), strict=False):
        assert row[: len(prefix)] == prefix


@pytest.mark.parametrize("case", CASES)
def test_greedy_controls_equal_transformers_generate(imported, case):
    _, reference, loaded = imported
    source = _sources(loaded)
    controls = CASES[case]
    got = _zoo(loaded, source, **controls)
    # What the other controls change is the output with the prefix alone.
    alone = {}
    if "prefix_ids" in controls and len(controls) > 1:
        alone = {"prefix_ids": PREFIXES}
    _check_the_control_acts(_zoo(loaded, source, **alone), got, controls)
    assert got == _transformers(reference, loaded, source, controls)


@pytest.mark.parametrize("case", CASES)
def test_greedy_controls_equal_ctranslate2(imported, converted, case):
    # CTranslate2 counts the forced prefix in `min_decoding_length` and
    # `max_decoding_length`, as the zoo does; its controls read the prefix
    # and the ids chosen, without the start token (the zoo's, never
    # written, changes nothing).
    _, _, loaded = imported
    source = _sources(loaded)
    got = _zoo(loaded, source, **CASES[case])
    assert got == _ctranslate2(converted, loaded, source, CASES[case])


def _prefix_rows_without_count(reference, loaded, source, prefixes, minimum):
    """transformers' ids with `min_new_tokens=minimum` as it is, after
    each row's `decoder_input_ids`."""
    rows = []
    for row, prefix in zip(source, prefixes, strict=True):
        start = [PAD] + _marian_id(loaded.target_vocabulary, prefix)
        rows += _marian_generate(
            reference,
            loaded,
            row[None],
            decoder_input_ids=torch.as_tensor([start]),
            max_new_tokens=MAX_NEW_TOKENS - len(prefix),
            min_new_tokens=minimum,
        )
    return rows


def test_min_new_tokens_counts_the_forced_prefix(imported):
    # A difference of definition: rows 0 and 4 force 2 and 1 ids and end
    # after 4 new tokens, which `min_new_tokens=4` allows in the zoo (the
    # prefix counts); transformers' `min_new_tokens=4` counts after its
    # `decoder_input_ids`, and keeps them going.
    _, reference, loaded = imported
    source = _sources(loaded)
    got = _zoo(loaded, source, prefix_ids=PREFIXES, min_new_tokens=4)
    assert got == _zoo(loaded, source, prefix_ids=PREFIXES)
    assert all(len(got[i]) == 5 and got[i][-1] == END_ID for i in (0, 4))
    theirs = _prefix_rows_without_count(reference, loaded, source, PREFIXES, 4)
    assert [theirs[i] == got[i] for i in range(len(got))] == [
        False, True, True, True, False, True,
    ]  # fmt: skip


def test_ctranslate2_min_decoding_length_counts_the_forced_prefix(imported, converted):
    # CTranslate2's `min_decoding_length` counts the target prefix, as the
    # zoo's `min_new_tokens` does (the rows of the test above).
    _, _, loaded = imported
    source = _sources(loaded)
    controls = {"prefix_ids": PREFIXES, "min_new_tokens": 4}
    got = _zoo(loaded, source, **controls)
    assert got == _ctranslate2(converted, loaded, source, controls)


def _zoo_beams(loaded, source, **controls):
    ids, _ = loaded.model.beam_search(
        source, max_new_tokens=BEAM_TOKENS, beam_width=4, length_penalty=0.0, **controls
    )
    return _zoo_rows(keras.ops.convert_to_numpy(ids)[:, 0])


def _transformers_beams(reference, loaded, source, controls, renormalize=True):
    return _transformers(
        reference,
        loaded,
        source,
        controls,
        max_new_tokens=BEAM_TOKENS,
        num_beams=4,
        length_penalty=0.0,
        renormalize_logits=renormalize,
    )


BEAM_CASES = {
    "prefix": {"prefix_ids": PREFIXES},
    "min_new_tokens": {"min_new_tokens": 6},
    "no_repeat_ngram_2": {"no_repeat_ngram_size": 2},
    "suppress_and_unknown": {"suppress_token_ids": [49, 5], "suppress_unknown": True},
    "repetition_penalty": {"repetition_penalty": 1.5},
    "repetition_reward": {"repetition_penalty": 0.7},
}
# The cases each reference defines as the zoo does (the tests of the
# others say how they differ).
TRANSFORMERS_BEAM_CASES = [c for c in BEAM_CASES if not c.startswith("repetition")]
CTRANSLATE2_BEAM_CASES = [c for c in BEAM_CASES if c != "prefix"]


@pytest.mark.parametrize("case", TRANSFORMERS_BEAM_CASES)
def test_four_beams_best_equals_generate_at_length_penalty_zero(imported, case):
    # transformers' beam search applies its processors to log-probabilities;
    # `renormalize_logits=True` normalises them again after ids are ruled
    # out, as the zoo's log-softmax of the controlled logits does (and
    # CTranslate2's). At length penalty 0 both rank by summed
    # log-probabilities; the zoo's sum also holds a forced prefix's, the
    # same for every beam of a row.
    _, reference, loaded = imported
    source = _sources(loaded)
    got = _zoo_beams(loaded, source, **BEAM_CASES[case])
    assert got != _zoo_beams(loaded, source)
    assert got == _transformers_beams(reference, loaded, source, BEAM_CASES[case])


def test_transformers_beams_without_renormalizing_score_ruled_out_mass(imported):
    # Without `renormalize_logits`, a hypothesis keeps the probability its
    # banned ids had: another best hypothesis than the zoo's.
    _, reference, loaded = imported
    source = _sources(loaded)
    controls = BEAM_CASES["no_repeat_ngram_2"]
    got = _zoo_beams(loaded, source, **controls)
    assert got != _transformers_beams(reference, loaded, source, controls, False)


@pytest.mark.parametrize("case", ["repetition_penalty", "repetition_reward"])
def test_transformers_beams_penalise_log_probabilities(imported, case):
    # A difference of definition: transformers' beam search applies
    # `repetition_penalty` to log-probabilities (all negative, so every seen
    # id's is multiplied by p), the zoo to the logits, before normalising,
    # as in greedy decoding and as CTranslate2 (whose beams equal the zoo's,
    # `test_four_beams_best_equals_ctranslate2`).
    _, reference, loaded = imported
    source = _sources(loaded)
    got = _zoo_beams(loaded, source, **BEAM_CASES[case])
    assert got != _transformers_beams(reference, loaded, source, BEAM_CASES[case])


@pytest.mark.parametrize("case", CTRANSLATE2_BEAM_CASES)
def test_four_beams_best_equals_ctranslate2(imported, converted, case):
    _, _, loaded = imported
    source = _sources(loaded)
    got = _zoo_beams(loaded, source, **BEAM_CASES[case])
    assert got != _zoo_beams(loaded, source)
    assert got == _ctranslate2(converted, loaded, source, BEAM_CASES[case], 4)


def test_ctranslate2_beams_drop_an_end_right_after_the_prefix(imported, converted):
    # A difference of definition: at the first step after a target prefix
    # CTranslate2 expands the first beam only and gives </s> in the other
    # beams a score of -1e10 (`update_sample_with_prefix` in decoding.cc,
    # against short outputs at length penalty 0, its issue #277). Row 4
    # forces [49]; the zoo's (and transformers') best hypothesis ends right
    # after it, with an </s> that was not the likeliest id there, so
    # CTranslate2 dropped it.
    _, _, loaded = imported
    source = _sources(loaded)
    controls = BEAM_CASES["prefix"]
    got = _zoo_beams(loaded, source, **controls)
    assert _zoo(loaded, source, **controls)[4][1] != END_ID  # Greedy goes on.
    theirs = _ctranslate2(converted, loaded, source, controls, 4)
    differ = [i for i in range(len(got)) if got[i] != theirs[i]]
    assert differ == [4] and got[4] == PREFIXES[4] + [END_ID]

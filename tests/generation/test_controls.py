"""Decoding controls of `generate` and `beam_search`, on every strategy.

Three kinds of evidence: a NumPy reference that decodes a Markov chain
with every control by its definition (greedy ids equal exactly); the
properties each control promises, on the zoo's tiny models with greedy,
sampling and beams; and CTranslate2's own options on an exported tiny
translator, greedy ids equal for each control alone and in combination.
Then the loops: a control's value is an input (no new trace), and a call
without controls traces none of their operations.
"""

import keras
import numpy as np
import pytest

import zoo
from keras_seq.generation import GenerativeModel, resolve_max_new_tokens
from keras_seq.text import END_ID, RESERVED_TOKENS, START_ID, UNK_ID

STRATEGIES = [
    {"strategy": "greedy"},
    {"strategy": "sample", "seed": 3, "temperature": 1.5},
    {"strategy": "beam", "beam_width": 3},
]
STRATEGY_IDS = ["greedy", "sample", "beam"]


def _numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def _until_end(row, end=END_ID):
    row = [int(t) for t in row]
    return row[: row.index(end) + 1] if end in row else row


# A Markov chain and its reference decoder.

V = 12
CHAIN_END = 3


class _Chain(GenerativeModel, keras.Model):
    """Next-id logits from a fixed table by the previous id."""

    def __init__(self, table, **kwargs):
        super().__init__(**kwargs)
        self.table = np.asarray(table, "float32")

    def label_size(self):
        return V, "vocabulary_size"

    def check_generate_input(self, token_ids, max_new_tokens=None):
        return resolve_max_new_tokens(max_new_tokens, limit=10)

    def start_decoding(self, token_ids, max_new_tokens, start_token_id):
        batch = keras.ops.shape(token_ids)[0]
        start = keras.ops.full((batch, 1), start_token_id, "int32")
        return start, (), keras.ops.zeros((batch,), "int32")

    def decoding_step(self, token_ids, index, context, cache):
        table = keras.ops.convert_to_tensor(self.table)
        return keras.ops.take(table, token_ids[:, 0], axis=0), cache + 1


def _chain_table():
    rng = np.random.default_rng(7)
    table = rng.normal(0.0, 2.0, (V, V)).astype("float32")
    table[:, CHAIN_END] += 1.5  # Some outputs end early.
    table[[4, 5], 4] += 6.0  # A loop: 4 4 4 ..., which the controls break.
    return table


def reference_greedy(table, start, steps, prefix=(), minimum=0, ngram=0,
                     penalty=None, suppressed=(), end=CHAIN_END):  # fmt: skip
    """Greedy decoding by the controls' definitions, one step at a time."""
    history = [start]
    for step in range(steps):
        logits = table[history[-1]].astype("float64").copy()
        if penalty is not None:
            for token in set(history):
                value = logits[token]
                logits[token] = value / penalty if value > 0 else value * penalty
        ruled_out = set(suppressed)
        if ngram:
            tail = tuple(history[len(history) - ngram + 1 :]) if ngram > 1 else ()
            for j in range(len(history) - ngram + 1):
                if tuple(history[j : j + ngram - 1]) == tail:
                    ruled_out.add(history[j + ngram - 1])
        if step < minimum:
            ruled_out.add(end)
        if step < len(prefix):
            token = prefix[step]
        else:
            logits[list(ruled_out)] = -np.inf
            token = int(np.argmax(logits))
        history.append(token)
        if token == end:
            break
    return history[1:]


CHAIN_CASES = {
    "prefix": {"prefix_ids": [[4, 4, 6], [], [7]]},
    "min": {"min_new_tokens": 4},
    "ngram1": {"no_repeat_ngram_size": 1},
    "ngram2": {"no_repeat_ngram_size": 2},
    "ngram3": {"no_repeat_ngram_size": 3},
    "penalty": {"repetition_penalty": 1.8},
    "penalty_below_1": {"repetition_penalty": 0.6},
    "suppress": {"suppress_token_ids": [4, 9]},
    "prefix_ngram": {"prefix_ids": [[4, 4], [6], []], "no_repeat_ngram_size": 2},
    "min_penalty": {"min_new_tokens": 3, "repetition_penalty": 2.0},
    "all": {
        "prefix_ids": [[4], [], [8, 8]],
        "min_new_tokens": 2,
        "no_repeat_ngram_size": 2,
        "repetition_penalty": 1.3,
        "suppress_token_ids": [9],
    },
}


@pytest.mark.parametrize("case", list(CHAIN_CASES), ids=list(CHAIN_CASES))
def test_greedy_controls_equal_their_definitions(case):
    options = CHAIN_CASES[case]
    table = _chain_table()
    starts = [4, 5, 7]
    model = _Chain(table)
    rows = []
    for start in starts:
        ids = model.generate(
            np.ones((1, 2), "int32"), 8, start_token_id=start,
            end_token_id=CHAIN_END, **_one_row(options, starts.index(start)),
        )  # fmt: skip
        rows.append(_until_end(_numpy(ids)[0], CHAIN_END))
    want = []
    for index, start in enumerate(starts):
        prefix = options.get("prefix_ids", [[]] * 3)[index]
        want.append(
            reference_greedy(
                table,
                start,
                8,
                prefix,
                options.get("min_new_tokens", 0),
                options.get("no_repeat_ngram_size", 0),
                options.get("repetition_penalty"),
                options.get("suppress_token_ids", ()),
            )  # fmt: skip
        )
    assert rows == want


def _one_row(options, index):
    options = dict(options)
    if "prefix_ids" in options:
        options["prefix_ids"] = [options["prefix_ids"][index]]
    return options


def test_plain_greedy_of_the_chain_loops_without_controls():
    # What the cases above change: without a control, a loop of 4s.
    ids = _Chain(_chain_table()).generate(
        np.ones((1, 2), "int32"), 8, start_token_id=4, end_token_id=CHAIN_END
    )
    assert _numpy(ids)[0].tolist() == [4] * 8


# The zoo's tiny models: the properties, on every strategy.


@pytest.fixture(scope="module")
def translator():
    keras.utils.set_random_seed(5)
    return zoo.build_translator("tiny", max_length=16)


@pytest.fixture(scope="module")
def language_model():
    keras.utils.set_random_seed(5)
    return zoo.build_language_model("tiny", max_length=24)


@pytest.fixture(scope="module")
def rnn_translator():
    keras.utils.set_random_seed(5)
    return zoo.build_rnn_translator("tiny")


SOURCES = np.array(
    [[5, 6, 7, 0, 0], [8, 9, 10, 11, 12], [13, 0, 0, 0, 0], [14, 15, 16, 17, 0]],
    "int32",
)
PROMPTS = np.array([[5, 6, 7], [8, 9, 10], [11, 12, 13], [30, 31, 32]], "int32")


def _models(request, names=("translator", "language_model", "rnn_translator")):
    return {name: request.getfixturevalue(name) for name in names}


def _inputs(name):
    return PROMPTS if name == "language_model" else SOURCES


def _outputs(model, name, **options):
    ids = _numpy(model.generate(_inputs(name), 12, **options))
    return [_until_end(row) for row in ids.tolist()]


@pytest.mark.parametrize("options", STRATEGIES, ids=STRATEGY_IDS)
@pytest.mark.parametrize("name", ["translator", "language_model", "rnn_translator"])
def test_a_forced_prefix_starts_every_output(request, name, options):
    model = request.getfixturevalue(name)
    prefixes = [[40, 41, 42], [], [43], [44, 44, 44, 44]]
    rows = _outputs(model, name, prefix_ids=prefixes, **options)
    for row, prefix in zip(rows, prefixes):
        assert row[: len(prefix)] == prefix
    # The same prefixes as a padded array: the same outputs.
    padded = np.zeros((4, 5), "int32")
    for index, prefix in enumerate(prefixes):
        padded[index, : len(prefix)] = prefix
    assert _outputs(model, name, prefix_ids=padded, **options) == rows


def _ngrams(row, n):
    return [tuple(row[i : i + n]) for i in range(len(row) - n + 1)]


# Each size on each model and with each strategy, each pair once (a Latin
# square): a size is a loop of its own, traced afresh.
NGRAM_CASES = [
    (name, n, STRATEGY_IDS[(n - 1 + shift) % 3])
    for shift, name in enumerate(["translator", "language_model", "rnn_translator"])
    for n in (1, 2, 3)
]


@pytest.mark.parametrize("name, n, strategy", NGRAM_CASES)
def test_no_repeat_ngram_size_leaves_no_repeated_ngram(request, name, n, strategy):
    model = request.getfixturevalue(name)
    options = STRATEGIES[STRATEGY_IDS.index(strategy)]
    rows = _outputs(model, name, no_repeat_ngram_size=n, end_token_id=None, **options)
    given = PROMPTS.tolist() if name == "language_model" else [[]] * len(rows)
    for prompt, row in zip(given, rows):
        grams = _ngrams(prompt + row, n)  # A prompt counts as output.
        assert len(grams) == len(set(grams)), (prompt, row)


def _favouring(model, token_id, bias):
    """A copy of `model` whose output bias favours `token_id`."""
    copy = model.__class__.from_config(model.get_config())
    copy.set_weights(model.get_weights())
    output = next(v for v in copy.weights if v.path == "logits/bias")
    values = _numpy(output).copy()
    values[token_id] += bias
    output.assign(values)
    return copy


@pytest.fixture(scope="module")
def ending_translator(translator):
    """A translator that wants to end at once, and to write [UNK]."""
    model = _favouring(translator, END_ID, 8.0)
    plain = _outputs(model, "translator")
    assert all(len(row) <= 2 for row in plain), plain
    return model


@pytest.mark.parametrize("options", STRATEGIES, ids=STRATEGY_IDS)
@pytest.mark.parametrize("minimum", [1, 3, 6])
def test_min_new_tokens_gives_no_end_token_before(ending_translator, minimum, options):
    rows = _outputs(ending_translator, "translator", min_new_tokens=minimum, **options)
    for row in rows:
        assert END_ID not in row[:minimum], row
    if options["strategy"] == "greedy":  # It ends as soon as it may.
        assert all(row[minimum] == END_ID for row in rows), rows


@pytest.mark.parametrize("options", STRATEGIES, ids=STRATEGY_IDS)
@pytest.mark.parametrize("name", ["translator", "language_model", "rnn_translator"])
def test_suppressed_ids_never_appear(request, name, options):
    model = request.getfixturevalue(name)
    plain = _outputs(model, name, end_token_id=None, **options)
    frequent = np.bincount([t for row in plain for t in row]).argsort()[::-1][:3]
    suppressed = [int(i) for i in frequent]
    rows = _outputs(
        model, name, suppress_token_ids=suppressed, end_token_id=None, **options
    )
    assert not set(suppressed) & {t for row in rows for t in row}, rows


@pytest.fixture(scope="module")
def unknown_translator(translator):
    """A translator that wants to write [UNK]."""
    return _favouring(translator, UNK_ID, 8.0)


@pytest.mark.parametrize("options", STRATEGIES, ids=STRATEGY_IDS)
def test_suppress_unknown_never_writes_the_unknown_token(unknown_translator, options):
    model = unknown_translator
    assert model.unknown_token_id == UNK_ID
    assert UNK_ID not in model.unsamplable_token_ids  # A translator writes it.
    plain = _outputs(model, "translator", **options)
    assert UNK_ID in {t for row in plain for t in row}
    rows = _outputs(model, "translator", suppress_unknown=True, **options)
    assert UNK_ID not in {t for row in rows for t in row}, rows


@pytest.mark.parametrize(
    "options", [STRATEGIES[0], STRATEGIES[2]], ids=["greedy", "beam"]
)
def test_a_repetition_penalty_repeats_less(translator, options):
    def repeats(rows):
        return sum(len(row) - len(set(row)) for row in rows)

    plain = _outputs(translator, "translator", end_token_id=None, **options)
    rows = _outputs(
        translator, "translator", repetition_penalty=5.0, end_token_id=None, **options
    )
    assert repeats(rows) < repeats(plain)


@pytest.mark.parametrize("options", STRATEGIES, ids=STRATEGY_IDS)
def test_every_control_together(translator, options):
    prefixes = [[40], [], [41, 42], [43]]
    rows = _outputs(
        translator,
        "translator",
        prefix_ids=prefixes,
        min_new_tokens=4,
        no_repeat_ngram_size=2,
        repetition_penalty=1.4,
        suppress_token_ids=[50, 51],
        suppress_unknown=True,
        **options,
    )
    for row, prefix in zip(rows, prefixes):
        assert row[: len(prefix)] == prefix
        assert END_ID not in row[:4]
        assert not {50, 51, UNK_ID} & set(row)
        assert len(_ngrams(row, 2)) == len(set(_ngrams(row, 2)))


def test_start_token_id_none_is_the_models_default(translator):
    class OtherStart(GenerativeModel):
        default_start_token_id = 7

    assert GenerativeModel.default_start_token_id.fget(translator) == START_ID
    a = translator.generate(SOURCES, 6)
    b = translator.generate(SOURCES, 6, start_token_id=START_ID)
    c = translator.generate(SOURCES, 6, start_token_id=None)
    np.testing.assert_array_equal(_numpy(a), _numpy(b))
    np.testing.assert_array_equal(_numpy(a), _numpy(c))
    assert OtherStart()._resolve_start(None) == 7


# The loops: values are inputs; no control, no operation.


def _counting_traces(model, monkeypatch):
    traced = []
    for name in ("_beam_search", "_sample"):
        original = getattr(model, name)

        def counting(*args, original=original, name=name, **kwargs):
            traced.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(model, name, counting)
    return traced


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="PyTorch decodes eagerly: no trace"
)
@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_changing_a_controls_value_compiles_nothing_new(monkeypatch, strategy):
    keras.utils.set_random_seed(3)
    model = zoo.build_translator("tiny", max_length=16)
    traced = _counting_traces(model, monkeypatch)
    outputs = []
    for penalty, minimum, prefix, suppressed in [
        (1.2, 2, [[40], [41, 42], [], [43]], [50]),
        (3.0, 5, [[44, 45], [], [46], []], [51]),
        (0.7, 1, [[], [], [], [47, 47, 47]], [52]),
    ]:
        ids = model.generate(
            SOURCES, 8, strategy=strategy, repetition_penalty=penalty,
            min_new_tokens=minimum, prefix_ids=prefix,
            suppress_token_ids=suppressed, no_repeat_ngram_size=2,
        )  # fmt: skip
        outputs.append(_numpy(ids).tolist())
    assert len(traced) == 1, traced
    assert outputs[0] != outputs[1]  # The values did change the output.


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="jaxprs")
def test_a_call_without_controls_traces_none_of_their_operations():
    import jax

    from keras_seq.generation import make_sampler
    from keras_seq.generation.controls import DecodingControls

    keras.utils.set_random_seed(3)
    model = zoo.build_translator("tiny", max_length=16)

    def primitives(**kwargs):
        def greedy(ids):
            return model._sample(
                ids, make_sampler("greedy"), 6, START_ID, END_ID, **kwargs
            )

        names = set()

        def visit(jaxpr):
            for eqn in jaxpr.eqns:
                names.add(eqn.primitive.name)
                for value in eqn.params.values():
                    for sub in value if isinstance(value, (tuple, list)) else (value,):
                        sub = getattr(sub, "jaxpr", sub)
                        if hasattr(sub, "eqns"):
                            visit(sub)

        visit(jax.make_jaxpr(greedy)(SOURCES).jaxpr)
        return names

    plain = primitives()
    controls = DecodingControls(no_repeat_ngram_size=2)
    controlled = primitives(controls=controls)
    assert "scatter-add" in controlled and "scatter-add" not in plain


# Every argument is checked, in one line naming it.


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"prefix_ids": [[5], [6]]}, ValueError, "`prefix_ids` must have one row"),
        ({"prefix_ids": [[5] * 7] * 4}, ValueError, "at most max_new_tokens=6"),
        (
            {"prefix_ids": [[5000]] * 4},
            ValueError,
            "`prefix_ids` must hold int ids in \\[1, ",
        ),
        ({"prefix_ids": [[-1]] * 4}, ValueError, "`prefix_ids` must hold int ids"),
        ({"prefix_ids": [[1.5]] * 4}, ValueError, "`prefix_ids` must hold int ids"),
        ({"prefix_ids": np.ones((4, 2))}, ValueError, "`prefix_ids` must be a list"),
        ({"prefix_ids": np.array([[0, 5]] * 4)}, ValueError, "padded with 0 at"),
        ({"prefix_ids": "ab"}, TypeError, "`prefix_ids` must be a list"),
        ({"min_new_tokens": 7}, ValueError, "`min_new_tokens` must be at most 6"),
        ({"min_new_tokens": -1}, ValueError, "`min_new_tokens` must be at least 0"),
        ({"min_new_tokens": 2.0}, TypeError, "`min_new_tokens` must be an int"),
        ({"no_repeat_ngram_size": -2}, ValueError, "`no_repeat_ngram_size` must be"),
        ({"no_repeat_ngram_size": True}, TypeError, "`no_repeat_ngram_size` must"),
        ({"repetition_penalty": float("nan")}, ValueError, "`repetition_penalty`"),
        ({"repetition_penalty": float("inf")}, ValueError, "`repetition_penalty`"),
        ({"repetition_penalty": 0.0}, ValueError, "a finite number above 0"),
        ({"repetition_penalty": "2"}, TypeError, "`repetition_penalty` must be"),
        (
            {"suppress_token_ids": [5000]},
            ValueError,
            "`suppress_token_ids` must hold int ids in",
        ),
        ({"suppress_token_ids": 5}, TypeError, "`suppress_token_ids` must be a"),
        ({"suppress_unknown": "yes"}, ValueError, "`suppress_unknown` must be True"),
        ({"return_scores": 1}, ValueError, "`return_scores` must be True or False"),
    ],
)
@pytest.mark.parametrize("method", ["generate", "beam_search"])
def test_bad_controls_are_refused_naming_the_argument(
    translator, method, options, error, message
):
    with pytest.raises(error, match=message) as raised:
        getattr(translator, method)(SOURCES, 6, **options)
    assert "\n" not in str(raised.value)


# CTranslate2's options on the same weights.


CT2_WORDS = ["ich", "du", "er", "sie", "wir", "sehe", "rufe", "kenne", "mag", "!"]
CT2_WORDS += [".", "i", "you", "he", "she", "we", "see", "call", "know", "like"]
CT2_WORDS += ["##s"]
CT2_VOCABULARY = list(RESERVED_TOKENS) + CT2_WORDS
CT2_LENGTH = 12
CT2_SOURCES = np.array(
    [
        [5, 10, 5, 0, 0, 0],
        [7, 11, 14, 15, 6, 0],
        [8, 9, 12, 13, 5, 6],
        [15, 0, 0, 0, 0, 0],
    ],
    "int32",
)
# The reserved tokens a translator never writes (CTranslate2 is told so).
CT2_NEVER = [["[PAD]"], ["[START]"], ["[MASK]"]]


def _ct2_translator(seed, end_bias, unknown_bias):
    """A pre-norm tiny translator with every weight drawn (outputs that vary
    and repeat), the reserved tokens out of reach but [END] and [UNK],
    whose output biases set how soon rows end and how often [UNK] comes."""
    size = len(CT2_VOCABULARY)
    keras.utils.set_random_seed(seed)
    model = zoo.build_translator(
        "tiny",
        source_vocabulary_size=size,
        target_vocabulary_size=size,
        max_length=CT2_LENGTH,
        norm_first=True,
    )
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        values = rng.normal(0.0, 0.3, variable.shape)
        if variable.path.endswith("gamma"):
            values = 1.0 + 0.2 * values
        variable.assign(values.astype("float32"))
    bias = next(v for v in model.weights if v.path == "logits/bias")
    values = _numpy(bias).copy()
    values[: len(RESERVED_TOKENS)] = -30.0
    values[END_ID] = end_bias
    values[UNK_ID] = unknown_bias
    bias.assign(values)
    return model


@pytest.fixture(scope="module")
def ct2_pair(tmp_path_factory):
    ctranslate2 = pytest.importorskip("ctranslate2")
    from keras_seq.export.ctranslate2 import export_ctranslate2
    from keras_seq.text import TranslationPreprocessor, make_tokenizer

    directory = tmp_path_factory.mktemp("ct2_controls")
    tokenizer = make_tokenizer(CT2_VOCABULARY)
    TranslationPreprocessor(tokenizer, max_length=CT2_LENGTH).save(directory / "pre")
    model = _ct2_translator(2, end_bias=2.0, unknown_bias=1.0)
    export_ctranslate2(model, directory / "pre", directory / "ct2")
    return model, ctranslate2.Translator(str(directory / "ct2"))


def _words(rows):
    return [[CT2_VOCABULARY[i] for i in row] for row in rows]


def _ct2_greedy(translator, **options):
    results = translator.translate_batch(
        _words([row[row > 0] for row in CT2_SOURCES]),
        beam_size=1,
        max_decoding_length=CT2_LENGTH - 1,
        min_decoding_length=options.pop("min_decoding_length", 0),
        suppress_sequences=CT2_NEVER + options.pop("suppress_sequences", []),
        return_end_token=True,
        **options,
    )
    return [[CT2_VOCABULARY.index(t) for t in r.hypotheses[0]] for r in results]


CT2_PREFIXES = [[5, 6], [7], [], [8, 9, 10]]
# (ours, CTranslate2's): each control alone, then two combinations.
CT2_CASES = {
    "prefix": (
        {"prefix_ids": CT2_PREFIXES},
        {"target_prefix": _words(CT2_PREFIXES)},
    ),
    "min_new_tokens": ({"min_new_tokens": 5}, {"min_decoding_length": 5}),
    "no_repeat_ngram_1": ({"no_repeat_ngram_size": 1}, {"no_repeat_ngram_size": 1}),
    "no_repeat_ngram_2": ({"no_repeat_ngram_size": 2}, {"no_repeat_ngram_size": 2}),
    "no_repeat_ngram_3": ({"no_repeat_ngram_size": 3}, {"no_repeat_ngram_size": 3}),
    "repetition_penalty": ({"repetition_penalty": 1.5}, {"repetition_penalty": 1.5}),
    "repetition_reward": ({"repetition_penalty": 0.5}, {"repetition_penalty": 0.5}),
    "suppress": (
        {"suppress_token_ids": [20, 15]},
        {"suppress_sequences": _words([[20], [15]])},
    ),
    "unknown": ({"suppress_unknown": True}, {"disable_unk": True}),
    "prefix_and_penalty": (
        {"prefix_ids": CT2_PREFIXES, "repetition_penalty": 2.0},
        {"target_prefix": _words(CT2_PREFIXES), "repetition_penalty": 2.0},
    ),
    "prefix_and_min": (
        {"prefix_ids": CT2_PREFIXES, "min_new_tokens": 5},
        {"target_prefix": _words(CT2_PREFIXES), "min_decoding_length": 5},
    ),
    "min_and_ngram": (
        {"min_new_tokens": 6, "no_repeat_ngram_size": 2},
        {"min_decoding_length": 6, "no_repeat_ngram_size": 2},
    ),
}


@pytest.mark.parametrize("case", list(CT2_CASES), ids=list(CT2_CASES))
def test_greedy_controls_equal_ctranslate2(ct2_pair, case):
    model, translator = ct2_pair
    ours, theirs = CT2_CASES[case]
    ids = _numpy(model.generate(CT2_SOURCES, CT2_LENGTH - 1, **ours))
    got = [_until_end(row) for row in ids.tolist()]
    assert got == _ct2_greedy(translator, **theirs)
    assert got != [_until_end(r) for r in _numpy(model.generate(CT2_SOURCES, 11))]


def test_the_ctranslate2_model_ends_and_writes_unknown_tokens(ct2_pair):
    # What makes `min_new_tokens` and `suppress_unknown` comparable above.
    model, _ = ct2_pair
    rows = [_until_end(r) for r in _numpy(model.generate(CT2_SOURCES, 11)).tolist()]
    assert any(len(row) < 6 and row[-1] == END_ID for row in rows), rows
    assert any(UNK_ID in row for row in rows), rows

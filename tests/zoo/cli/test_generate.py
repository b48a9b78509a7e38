"""`keras-seq generate` and `TrainedModel.generate`: a seed that repeats,
each prompt drawn as if alone, and every bound checked before any work."""

import pytest

from tests.zoo.conftest import run_cli
from zoo.recipes import model_dir


def _generate(out, *args, in_process=False):
    result = run_cli("generate", "--model-dir", out, *args, in_process=in_process)
    return result.returncode, result.stdout.splitlines(), result.stderr


@pytest.fixture(scope="module")
def trained(language_model_run):
    return model_dir.load_model_dir(str(language_model_run[0]))


def test_each_prompts_draw_comes_from_the_seed_and_the_prompt(
    language_model_run, trained
):
    out = language_model_run[0]
    status, lines, stderr = _generate(out, "--seed", "0", "you he", "she", "you he")
    assert status == 0, stderr[-2000:]
    assert len(lines) == 3 and lines[0] == lines[2] and lines[0] != lines[1]
    assert lines[0].startswith("you he") and len(lines[0].split()) > 2
    # Alone, in another process, "she" draws what it drew second.
    assert trained.generate("she", seed=0) == lines[1]


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--top-k", "100000", "--top-k must be at most {size} (the vocabulary "
                              "size); received 100000."),
        ("--top-p", "nan", "--top-p must be in (0, 1]; received nan."),
    ],
)  # fmt: skip
def test_a_bound_of_the_model_is_one_line(language_model_run, flag, value, message):
    status, lines, stderr = _generate(
        language_model_run[0], flag, value, "you", in_process=True
    )
    assert status == 1 and lines == [] and "Traceback" not in stderr
    size = len((language_model_run[0] / "vocabulary.txt").read_text().splitlines())
    assert stderr.strip().splitlines()[-1] == "keras-seq: " + message.format(size=size)


def test_the_same_seed_gives_the_same_text_on_every_call(trained):
    first = [trained.generate("you he", seed=5) for _ in range(3)]
    assert first[0] == first[1] == first[2]
    # A list is each prompt on its own; another seed draws another text.
    assert trained.generate(["we", "you he"], seed=5) == [
        trained.generate("we", seed=5),
        first[0],
    ]
    assert trained.generate("you he", seed=6) != first[0]


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"top_k": 10**6}, ValueError, "`top_k` must be at most {size} (the "
                                       "vocabulary size); received 1000000."),
        ({"max_new_tokens": 32}, ValueError, "`max_new_tokens` must be at most "
                                             "31 (the model's max_length - 1); "
                                             "received 32."),
        ({"top_p": float("nan")}, ValueError, "`top_p` must be in (0, 1]; "
                                              "received nan."),
        ({"top_k": 0}, ValueError, "`top_k` must be at least 1; received 0."),
        ({"top_p": float("inf")}, ValueError, "`top_p` must be in (0, 1]; "
                                              "received inf."),
        ({"top_p": 1.5}, ValueError, "`top_p` must be in (0, 1]; received 1.5."),
        ({"seed": -1}, ValueError, "`seed` must be at least 0; received -1."),
        ({"seed": 1.5}, TypeError, "`seed` must be an int; received 1.5."),
        ({"max_new_tokens": 0}, ValueError, "`max_new_tokens` must be at least 1; "
                                            "received 0."),
        ({"prompt": b"you"}, TypeError, "`prompt` must be a list of str; received "
                                        "bytes."),
        ({"prompt": ["you", 3]}, TypeError, "`prompt[1]` must be a str; received "
                                            "int."),
        ({"repetition_penalty": 0.0}, ValueError, "`repetition_penalty` must be "
                                                  "a finite number above 0; "
                                                  "received 0.0."),
        ({"no_repeat_ngram_size": -1}, ValueError, "`no_repeat_ngram_size` must "
                                                   "be at least 0; received -1."),
        ({"suppress": ["nowhere"]}, ValueError, "`suppress` names 'nowhere', which "
                                                "is no token of the output "
                                                "vocabulary ({size} tokens)."),
        ({"return_scores": 1}, ValueError, "`return_scores` must be True or "
                                           "False; received 1."),
    ],
)  # fmt: skip
def test_generate_refuses_bad_options_in_one_line(trained, options, error, message):
    options = {"prompt": "you", **options}
    with pytest.raises(error) as raised:
        trained.generate(**options)
    assert str(raised.value) == message.format(size=trained.output_vocabulary_size)


def test_a_cut_prompt_is_one_note_for_all_prompts(language_model_run):
    long = " ".join(["you"] * 80)
    status, lines, stderr = _generate(
        language_model_run[0], "--max-new-tokens", "4", long, "she", long,
        in_process=True,
    )  # fmt: skip
    assert status == 0 and len(lines) == 3, stderr[-2000:]
    assert stderr.splitlines()[-1] == (
        "keras-seq: note: 2 of 3 prompts are longer than the 28 tokens "
        "max_length=32 leaves for 4 new tokens; each kept its last tokens."
    )
    assert "Warning" not in stderr


def _ngrams(tokens, n):
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def test_the_controls_reach_the_sampler(trained, language_model_run):
    """The decoding controls of `generate` on a language model: scores that
    are the log-probabilities of the tokens written, suppressed tokens and
    repeated n-grams that never appear, and the command line's flags giving
    what the API gives."""
    plain = trained.generate("you he", max_new_tokens=12, seed=3, return_scores=True)
    assert plain.text == trained.generate("you he", max_new_tokens=12, seed=3)
    assert len(plain.tokens) == len(plain.log_probs) == 12
    assert all(v <= 0 for v in plain.log_probs)
    assert plain.log_prob == pytest.approx(sum(plain.log_probs))
    # The most written token of the plain draw, then suppressed.
    written = [t for t in plain.tokens if not t.startswith("[")]
    common = max(set(written), key=written.count)
    controlled = trained.generate(
        "you he", max_new_tokens=12, seed=3, top_k=20, suppress=[common],
        no_repeat_ngram_size=1, return_scores=True,
    )  # fmt: skip
    assert common not in controlled.tokens
    prompt_and_new = ["you", "he", *controlled.tokens]
    # n = 1: no id twice, the prompt's included (the end token too).
    assert len(set(prompt_and_new)) == len(prompt_and_new), prompt_and_new
    status, lines, stderr = _generate(
        language_model_run[0], "--max-new-tokens", "12", "--seed", "3",
        "--top-k", "20", "--suppress", common, "--no-repeat-ngram-size", "1",
        "--scores", "you he", in_process=True,
    )  # fmt: skip
    assert status == 0, stderr[-2000:]
    text, log_prob = lines[0].rsplit("\t", 1)
    assert text == controlled.text
    assert float(log_prob) == pytest.approx(controlled.log_prob, abs=1e-3)
    refused = _generate(
        language_model_run[0], "--repetition-penalty", "-1", "you", in_process=True
    )
    assert refused[0] == 1
    assert refused[2].splitlines()[-1].startswith("keras-seq: --repetition-penalty")


def test_the_control_flags_are_one_table():
    """`translate` and `generate` take their decoding-control flags from the
    one table, `zoo.cli.translate.CONTROLS`: a flag the two share is the
    same flag (argument, type, help) in both."""
    from zoo.cli.main import build_parser
    from zoo.cli.translate import CONTROLS

    commands = build_parser()._subparsers._group_actions[0].choices

    def controls(command):
        return {
            action.option_strings[0]: (action.dest, action.type, action.help)
            for action in commands[command]._actions
            if action.option_strings and action.option_strings[0] in CONTROLS
        }

    translate, generate = controls("translate"), controls("generate")
    assert set(translate) == set(CONTROLS)
    assert generate and set(generate) < set(translate)
    for flag, (name, options) in CONTROLS.items():
        assert translate[flag] == (name, options.get("type"), options["help"])
        assert generate.get(flag, translate[flag]) == translate[flag]


def test_generate_streams_each_continuation(language_model_run):
    out = language_model_run[0]
    flags = ("--max-new-tokens", "10", "--seed", "4", "--no-repeat-ngram-size", "2")
    streamed = _generate(out, *flags, "--stream", "you he", "she", in_process=True)
    assert streamed[0] == 0, streamed[2][-2000:]
    assert streamed[1] == _generate(out, *flags, "you he", "she", in_process=True)[1]
    assert len(streamed[1]) == 2 and streamed[1][0].startswith("you he")
    refused = _generate(out, "--stream", "--scores", "you", in_process=True)
    assert refused[0] != 0 and "--stream writes text as it comes" in refused[2]

"""A new user's path through `keras-seq`, in real processes of the command.

Nothing is lost (arguments and data are checked before anything is
written; a finished run or another run's backup is kept), every mistake is
one line naming the flag or file, every answer lines up with its question,
and the commands people expect exist (`--version`, `presets`, `classify`,
`generate`, help with defaults). `zoo.recipes.model_dir` is the same from
Python, with messages that name no flag.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from keras_seq import text
from tests.reliability.conftest import (
    VOCABULARY,
    requires_tensorflow,
    run_cli,
)
from zoo.recipes import model_dir

pytestmark = requires_tensorflow()

PAIRS = [f"w{i} w{i + 1} w{i + 2}.\tw{i + 2} w{i}." for i in range(20)]


def _digest(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def paths(tmp_path_factory, translator_dir):
    root = tmp_path_factory.mktemp("new_user")
    (root / "pairs.tsv").write_text("\n".join(PAIRS) + "\n", encoding="utf-8")
    (root / "empty.tsv").write_text("", encoding="utf-8")
    (root / "no_tabs.tsv").write_text("w1 w2\nw3 w4\n", encoding="utf-8")
    (root / "a_file").write_text("not a directory")
    finished = root / "finished"
    shutil.copytree(translator_dir, finished)
    other = root / "other_backup"
    (other / "backup").mkdir(parents=True)
    (other / "training.json").write_text(
        json.dumps({"command": "train", "family": "classifier"})
    )
    truncated = root / "truncated"
    shutil.copytree(translator_dir, truncated)
    model = (truncated / "model.keras").read_bytes()
    (truncated / "model.keras").write_bytes(model[: len(model) // 2])
    return {
        "root": root,
        "pairs": root / "pairs.tsv",
        "empty": root / "empty.tsv",
        "no_tabs": root / "no_tabs.tsv",
        "a_file": root / "a_file",
        "finished": finished,
        "other": other,
        "truncated": truncated,
        "model": translator_dir,
    }


TRAIN = ["train", "translator", "--preset", "tiny", "--data", "{pairs}"]

# (what is wrong, arguments, the one stderr line expected). Each exits with
# status 1 and writes nothing.
ONE_LINE_CASES = [
    ("--epochs 0", [*TRAIN, "--epochs", "0", "--output-dir", "{finished}"],
     r"^keras-seq: --epochs must be at least 1; received 0$"),
    ("--epochs -1", [*TRAIN, "--epochs", "-1"],
     r"^keras-seq: --epochs must be at least 1; received -1$"),
    ("--minutes 0 into a finished run", [*TRAIN, "--minutes", "0", "--output-dir",
                                         "{finished}"],
     r"^keras-seq: --minutes must be a finite number above 0; received 0.0$"),
    ("--minutes nan", [*TRAIN, "--minutes", "nan"],
     r"^keras-seq: --minutes must be a finite number above 0; received nan$"),
    ("--vocabulary-size below the reserved tokens",
     [*TRAIN, "--vocabulary-size", "5"],
     r"^keras-seq: --vocabulary-size must be at least 6; received 5$"),
    ("a finished run without --overwrite", [*TRAIN, "--output-dir", "{finished}"],
     r"^keras-seq: --output-dir .*finished holds a finished translator run "
     r"\(run.json, model.keras\); pass --overwrite to replace it"),
    ("another run's backup", [*TRAIN, "--output-dir", "{other}"],
     r"^keras-seq: --output-dir .*other_backup holds the backup of an interrupted "
     r"run with other settings \(.*family 'classifier' there, 'translator' now"),
    ("--output-dir a file", [*TRAIN, "--output-dir", "{a_file}"],
     r"^keras-seq: --output-dir .*a_file is a file; expected a directory\.$"),
    ("--output-dir not writable", [*TRAIN, "--output-dir", "/proc/sys/run"],
     r"^keras-seq: --output-dir /proc/sys/run: /proc/sys is not writable"),
    ("--data empty", ["train", "translator", "--data", "{empty}"],
     r"^keras-seq: --data .*empty.tsv: 0 `source<TAB>target` lines; expected at "
     r"least 3, one each for the training, validation and test splits\.$"),
    ("--data without tabs", ["train", "translator", "--data", "{no_tabs}"],
     r"^keras-seq: --data .*no_tabs.tsv: 0 `source<TAB>target` lines \(skipped 2 "
     r"malformed line\(s\) .*: lines 1, 2\); expected at least 3"),
    ("--beam-width for a classifier", ["train", "classifier", "--beam-width", "2"],
     r"^keras-seq: --beam-width applies to translator, rnn-translator and rnn-seq2seq"),
    ("--export-dir a file", ["export", "--model-dir", "{model}", "--export-dir",
                             "{a_file}"],
     r"^keras-seq: --export-dir .*a_file is a file; expected a directory\.$"),
    ("--export-dir not writable", ["export", "--model-dir", "{model}",
                                   "--export-dir", "/proc/sys/served"],
     r"^keras-seq: --export-dir /proc/sys/served: /proc/sys is not writable"),
    ("a truncated model.keras", ["translate", "--model-dir", "{truncated}", "w1."],
     r"^keras-seq: --model-dir .*model.keras: not a whole .keras archive"),
    ("--beam-width above the vocabulary", ["translate", "--model-dir", "{model}",
                                           "--beam-width", "36", "w1."],
     r"^keras-seq: --beam-width must be at most 35 \(the target vocabulary size\); "
     r"received 36\.$"),
    ("translate a classifier directory", ["classify", "--model-dir", "{model}",
                                          "w1."],
     r"^keras-seq: --model-dir .* holds a translator; `classify` needs a "
     r"classifier\.$"),
]  # fmt: skip


@pytest.mark.parametrize(
    "problem, arguments, match", ONE_LINE_CASES, ids=[c[0] for c in ONE_LINE_CASES]
)
def test_a_mistake_is_one_line_and_nothing_is_written(paths, problem, arguments, match):
    before = {k: _digest(v) for k, v in paths.items() if k in ("finished", "other")}
    arguments = [a.format(**paths) for a in arguments]
    status, lines, stderr = run_cli(*arguments, cwd=paths["root"], in_process=True)
    assert "Traceback" not in stderr, stderr[-3000:]
    assert status == 1, stderr[-3000:]
    assert len(lines) == 1 or lines[0].startswith("loading "), lines
    assert re.search(match, lines[-1]), lines[-1]
    assert {k: _digest(paths[k]) for k in before} == before
    assert not (paths["root"] / "runs").exists()


def test_translate_keeps_blank_lines_warns_on_truncation_and_names_bad_utf8(paths):
    long = " ".join(["w1"] * 40)  # 40 tokens, past the tiny max_length of 32
    command = [sys.executable, "-m", "zoo.cli", "translate", "--model-dir",
               str(paths["model"]), "--beam-width", "1"]  # fmt: skip
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    result = subprocess.run(
        command,
        input=f"w1 w2.\n\n{long}\n   \n".encode(),
        capture_output=True,
        env=env,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    outputs = result.stdout.decode().split("\n")
    assert len(outputs) == 5 and outputs[-1] == ""  # 4 lines in, 4 lines out
    assert outputs[1] == "" and outputs[3] == ""
    assert outputs[0] and outputs[2]
    loading, translating, done, note = result.stderr.decode().splitlines()
    assert loading == f"loading {paths['model']}..."
    assert translating == (
        "translating 4 sentences (each new batch size compiles its decoding "
        "loop first)..."
    )
    assert re.fullmatch(r"done in \d+\.\d s, compiling included", done), done
    assert note == (
        "keras-seq: note: 1 of 4 sentences are longer than the model's "
        "max_length (32 tokens); each was cut to it."
    )
    bad = subprocess.run(
        command, input=b"w1 w2.\nw\xff\xfe.\n", capture_output=True, env=env,
        timeout=240,
    )  # fmt: skip
    assert bad.returncode == 1
    # The model loads first: its bounds (--beam-width) are checked before
    # stdin is read, so no one types sentences into a refused command.
    assert bad.stderr.decode().splitlines() == [
        f"loading {paths['model']}...",
        "keras-seq: stdin is not valid UTF-8: invalid start byte at byte 1 (line 2).",
    ]


def test_version_presets_and_help_with_defaults():
    import keras_seq

    result = subprocess.run(
        [sys.executable, "-m", "zoo.cli", "presets", "translator"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0 and result.stderr == ""
    assert "small       4,005,696 parameters with vocabularies of 8,000 / 8,000" in (
        result.stdout
    )
    helped = subprocess.run(
        [sys.executable, "-m", "zoo.cli", "train", "--help"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert helped.stderr == ""  # no TensorFlow start-up lines
    flat = " ".join(helped.stdout.split())
    assert "the most epochs (default: 10)" in flat
    assert "--overwrite" in flat and "(default: 4)" in flat
    version = subprocess.run(
        [sys.executable, "-m", "zoo.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert version.stdout == f"keras-seq {keras_seq.__version__}\n"
    assert version.returncode == 0 and version.stderr == ""


def test_a_same_size_vocabulary_of_another_run_is_refused(translator_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(translator_dir, copy)
    tokens = list(VOCABULARY)
    words = tokens[len(text.RESERVED_TOKENS) :]
    tokens[len(text.RESERVED_TOKENS) :] = words[::-1]  # same size, same specials
    text.save_vocabulary(tokens, copy / "target_vocabulary.txt")
    with pytest.raises(ValueError) as error:
        model_dir.load_model_dir(str(copy))
    message = str(error.value)
    assert message == (
        f"{copy / 'target_vocabulary.txt'} is not the vocabulary this model "
        "was trained with: its SHA-256 differs from the one run.json records "
        "(a vocabulary of the same size from another run?)."
    )
    assert "--" not in message  # From Python, no flags.


def test_one_python_call_loads_a_directory_and_uses_it(translator_dir, tmp_path):
    trained = model_dir.load_model_dir(str(translator_dir))
    assert trained.family == "translator"
    greedy = trained.translate(["w1 w2.", "", "w3."], beam_width=1)
    assert len(greedy) == 3 and greedy[1] == "" and greedy[0]
    beam = trained.translate(["w1 w2."], beam_width=2)
    assert len(beam) == 1 and beam[0]
    with pytest.raises(ValueError) as error:
        trained.classify(["w1"])
    assert str(error.value) == (
        f"{translator_dir} holds a translator; classify needs a classifier."
    )
    with pytest.raises(ValueError) as error:
        model_dir.load_model_dir(str(tmp_path))
    assert str(error.value).startswith(f"{tmp_path} has no run.json; expected")


def test_num_return_beyond_the_beams_is_one_plain_error(translator):
    ids = np.asarray([[5, 6, 7]], "int32")
    with pytest.raises(ValueError) as error:
        translator.beam_search(ids, 4, beam_width=2, num_return=3)
    assert str(error.value) == "`num_return` must be in [1, beam_width=2]; received 3."


def test_a_str_is_one_text_and_bounds_are_checked_first(
    translator_dir, classifier, tokenizer
):
    from zoo.recipes import inference

    trained = model_dir.load_model_dir(str(translator_dir))
    options = {"beam_width": 1, "max_new_tokens": 4}
    one = trained.translate("w1 w2.", **options)
    assert isinstance(one, str)
    assert [one] == trained.translate(["w1 w2."], **options)
    for options, error, message in [
        ({"beam_width": 36}, ValueError, "`beam_width` must be at most 35 (the "
                                         "target vocabulary size); received 36."),
        ({"max_new_tokens": 32}, ValueError, "`max_new_tokens` must be at most 31 "
                                             "(the model's max_length - 1); "
                                             "received 32."),
        ({"beam_width": 2.0}, TypeError, "`beam_width` must be an int; received "
                                         "2.0."),
        ({"beam_width": 2, "length_penalty": float("nan")}, ValueError,
         "`length_penalty` must be a finite number; received nan."),
    ]:  # fmt: skip
        with pytest.raises(error) as raised:
            trained.translate("w1.", **options)
        assert str(raised.value) == message
    with pytest.raises(TypeError, match=r"^`texts\[0\]` must be a str; received int"):
        trained.translate([1])
    classifier_dir = model_dir.TrainedModel(
        "classifier_dir", "classifier", classifier, {"max_length": 16},
        {"text": tokenizer},
    )  # fmt: skip
    row = classifier_dir.probabilities("w1 w2 w3")
    np.testing.assert_allclose(row, classifier_dir.probabilities(["w1 w2 w3"])[0])
    assert row.shape == (classifier.get_config()["num_classes"],)
    # The list APIs below take no str: one would be read as its characters.
    sentences = "w1 w2."
    with pytest.raises(TypeError, match=r"^`texts` must be a list of str; received"):
        inference.translate_texts(trained.model, trained.preprocessor, sentences)
    with pytest.raises(TypeError, match=r"^`texts` must be a list of str; received"):
        inference.classify_texts(classifier, classifier_dir.preprocessor, sentences)

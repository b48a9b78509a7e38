"""`keras-seq train translator --tokenizer sentencepiece`: a tiny run that
learns a SentencePiece model per side, samples subwords in training, saves
the models with the run, resumes with them and loads like any other run."""

import hashlib
import json

import pytest

from tests.zoo.conftest import run_cli, write_pairs

pytest.importorskip("sentencepiece")

TINY = [
    "--preset", "tiny", "--set", "model_dim=16", "--set", "num_heads=2",
    "--set", "ff_dim=32", "--set", "num_encoder_layers=1",
    "--set", "num_decoder_layers=1", "--set", "max_length=24",
    "--beam-width", "1", "--vocabulary-size", "60",
]  # fmt: skip


class _Interrupted(Exception):
    pass


def _interrupt_after_first_epoch(monkeypatch):
    from keras_seq import callbacks
    from keras_seq.callbacks import ShuffleEpoch

    class Interrupting(ShuffleEpoch):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch >= 1:  # Epoch 0 is backed up by now.
                raise _Interrupted
            super().on_epoch_begin(epoch, logs)

    monkeypatch.setattr(callbacks, "ShuffleEpoch", Interrupting)


def _train(data, out, *flags):
    return run_cli(
        "train", "translator", "--data", data, "--epochs", "2", *TINY,
        "--output-dir", out, *flags, in_process=True,
    )  # fmt: skip


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_sentencepiece_run_trains_resumes_and_loads(tmp_path, monkeypatch):
    data = write_pairs(tmp_path / "pairs.tsv")
    out = tmp_path / "run"
    flags = ("--tokenizer", "sentencepiece", "--sentencepiece-model", "bpe")
    flags += ("--subword-sampling", "0.2")
    with monkeypatch.context() as patch:
        _interrupt_after_first_epoch(patch)
        with pytest.raises(_Interrupted):
            _train(data, out, *flags)
    assert (out / "backup").is_dir()
    models = {name: _digest(out / name) for name in ("source.spm", "target.spm")}

    from keras_seq.text import sentencepiece_tokenizer

    def relearned(*args, **kwargs):
        raise AssertionError("a resumed run learned its models again")

    monkeypatch.setattr(sentencepiece_tokenizer, "train_sentencepiece", relearned)
    resumed = _train(data, out, *flags)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "vocabularies kept from the interrupted run" in resumed.stdout
    assert {name: _digest(out / name) for name in models} == models
    settings = json.loads((out / "preprocessor.json").read_text())
    assert settings["tokenizer"] == "sentencepiece"

    from zoo.recipes.model_dir import load_model_dir

    trained = load_model_dir(out)
    tokenizer = trained.preprocessor.source_tokenizer
    assert tokenizer.proto == (out / "source.spm").read_bytes()
    [translation] = trained.translate(["Ich sehe du 000."], beam_width=1)
    assert isinstance(translation, str)


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--subword-sampling", "0.2"],
            "--subword-sampling applies to --tokenizer sentencepiece; received "
            "0.2 with wordpiece",
        ),
        (
            ["--tokenizer", "sentencepiece", "--lowercase"],
            "--lowercase applies to WordPiece; a SentencePiece model keeps its "
            "text as it is",
        ),
        (
            ["--tokenizer", "sentencepiece", "--subword-sampling", "1"],
            "--subword-sampling must be in [0, 1); received 1.0",
        ),
    ],
)
def test_sentencepiece_flags_are_refused_in_one_line(tmp_path, flags, message):
    result = run_cli(
        "train", "translator", *flags, "--output-dir", tmp_path, in_process=True
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == f"keras-seq: {message}"
    assert not any(tmp_path.iterdir())

"""`keras_seq.defaults`: each decoding and batching default written once and
read by every signature that has it."""

import inspect

from keras_seq import defaults
from keras_seq.export import saved_model
from keras_seq.generation import DEFAULT_MAX_NEW_TOKENS, GenerativeModel, beam
from keras_seq.text import translation_preprocessor
from zoo.recipes import settings, translator
from zoo.serving import ctranslate2_model


def _default(function, name):
    return inspect.signature(function).parameters[name].default


def test_every_signature_reads_the_one_default():
    beams = (
        GenerativeModel.generate, GenerativeModel.beam_search, beam.beam_search,
        saved_model.export_translator, ctranslate2_model.CTranslate2Servable,
    )  # fmt: skip
    for function in beams:
        assert _default(function, "beam_width") == defaults.BEAM_WIDTH, function
        assert _default(function, "length_penalty") == defaults.LENGTH_PENALTY
    assert settings.TranslatorSettings.beam_width == defaults.BEAM_WIDTH
    dataset = translation_preprocessor.TranslationPreprocessor.dataset
    assert _default(dataset, "batch_tokens") == defaults.BATCH_TOKENS
    assert settings.TranslatorSettings.batch_tokens == defaults.BATCH_TOKENS
    unbounded = (
        DEFAULT_MAX_NEW_TOKENS, translation_preprocessor.UNBOUNDED_LENGTH,
        translator.RNN_MAX_LENGTH,
    )  # fmt: skip
    assert unbounded == (defaults.UNBOUNDED_LENGTH,) * 3


def test_the_defaults_import_nothing():
    source = inspect.getsource(defaults)
    assert "import " not in source.replace("imports nothing", "")


# Every translating path, read in a process whose `keras_seq.defaults` were
# changed before anything else was imported: a path that keeps a literal of
# its own keeps the old value and shows here.
_PATHS_SCRIPT = r"""
import inspect, json, sys, types
from keras_seq import defaults
defaults.BEAM_WIDTH, defaults.LENGTH_PENALTY = 3, 0.35
defaults.TRANSLATION_UNSAMPLABLE_TOKENS = ("[PAD]", "[MASK]")

import zoo
from keras_seq.export import saved_model
from zoo.cli import translate
from zoo.cli.main import build_parser
from zoo.recipes import settings
from zoo.recipes.model_dir import TrainedModel
from zoo.serving import ModelServer, ctranslate2_model, page

def default(function, name):
    return inspect.signature(function).parameters[name].default

found = {"beam_width": {}, "length_penalty": {}, "max_new_tokens": {}}
for name, function in [
    ("TrainedModel.translate", TrainedModel.translate),
    ("TrainedModel.check_translate_options", TrainedModel.check_translate_options),
    ("CTranslate2Model.translate", ctranslate2_model.CTranslate2Model.translate),
    ("CTranslate2Model.search", ctranslate2_model.CTranslate2Model.search),
    ("translate_command", ctranslate2_model.translate_command),
    ("CTranslate2Servable", ctranslate2_model.CTranslate2Servable),
    ("export_translator", saved_model.export_translator),
]:
    for option in found:
        parameters = inspect.signature(function).parameters
        if option in parameters:
            found[option][name] = parameters[option].default
found["length_penalty"]["CTranslate2Model.translate_ids"] = default(
    ctranslate2_model.CTranslate2Model.translate_ids, "length_penalty"
)
found["beam_width"]["TranslatorSettings"] = settings.TranslatorSettings.beam_width

# `keras-seq translate` left without --beam-width: what each path is handed.
parser = build_parser()
calls = {}
class Trained:
    def check_translate_options(self, **options):
        calls["check"] = options
    def translate(self, texts, **options):
        calls["model-dir"] = options
        return []
translate.load_model_dir = lambda *args: Trained()
def fake_command(directory, texts, **options):
    calls["ctranslate2"] = options
    return 0
translate.ctranslate2_model = types.SimpleNamespace(translate_command=fake_command)
for flag in ("--model-dir", "--ctranslate2"):
    args = parser.parse_args(["translate", flag, "x", "hallo"])
    args.run(args)
bound = inspect.signature(TrainedModel.translate).bind(None, [], **calls["model-dir"])
bound.apply_defaults()
found["beam_width"]["translate --model-dir"] = bound.arguments["beam_width"]
found["length_penalty"]["translate --model-dir"] = bound.arguments["length_penalty"]
bound = inspect.signature(ctranslate2_model.translate_command).bind(
    "x", [], **calls["ctranslate2"]
)
bound.apply_defaults()
found["beam_width"]["translate --ctranslate2"] = bound.arguments["beam_width"]
found["length_penalty"]["translate --ctranslate2"] = bound.arguments["length_penalty"]
help_text = parser._subparsers._group_actions[0].choices["translate"].format_help()
found["help"] = " ".join(help_text.split())

# The CTranslate2 server makes its servable with no option of its own.
made = []
class Servable:
    signatures = {}
    def __init__(self, *args, **kwargs):
        made.append([list(map(str, args)), kwargs])
server = ModelServer("x", 1, "m", port=0, servable_class=Servable).load()
server.stop(grace=0)
found["servable_call"] = made
found["page_body"] = page._PAGE.split("JSON.stringify(")[1].split(")")[0]
found["suppressed"] = {
    "Translator": list(zoo.Translator.unsamplable_token_ids),
    "RNNTranslator": list(zoo.RNNTranslator.unsamplable_token_ids),
    "CTranslate2": ctranslate2_model.CTranslate2Model.decoding_options(
        types.SimpleNamespace(max_decoding_length=5), 3
    )["suppress_sequences"],
}
print(json.dumps(found))
"""


def test_every_translating_path_reads_the_one_home():
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(
        [sys.executable, "-c", _PATHS_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env=dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.splitlines()[-1])
    beams, penalties = found["beam_width"], found["length_penalty"]
    assert len(beams) == 10 and len(penalties) == 10, found
    assert beams == dict.fromkeys(beams, 3), beams
    assert penalties == dict.fromkeys(penalties, 0.35), penalties
    # The length: the model's own (None: its max_length - 1) on every path.
    assert set(found["max_new_tokens"].values()) == {None}, found["max_new_tokens"]
    assert "(1: greedy) (default: 3)" in found["help"]
    assert found["servable_call"] == [[["x", "1"], {}]]
    # The page asks each signature as any client does, with no option.
    assert found["page_body"] == "{signature_name: signature, instances: lines}"
    assert found["suppressed"] == {
        "Translator": [0, 4],
        "RNNTranslator": [0, 4],
        "CTranslate2": [["[PAD]"], ["[MASK]"]],
    }

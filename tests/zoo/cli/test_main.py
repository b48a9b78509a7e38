"""`zoo.cli.main`: the parser built from the command modules, and errors."""

import os
import subprocess
import sys

import pytest

from tests.zoo.conftest import run_cli
from zoo.cli.main import (
    COMMANDS,
    _HelpFormatter,
    build_parser,
    command_module,
    command_name,
    main,
)


def test_every_command_module_is_a_subcommand():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert sorted(commands) == sorted(command_name(module) for module in COMMANDS)
    for name in ("train", "evaluate", "translate", "export", "demo"):
        assert commands[name].formatter_class is _HelpFormatter


def test_a_usage_error_is_one_line_and_status_1(capsys):
    assert main(["presets", "translator"]) == 0
    assert "tiny" in capsys.readouterr().out
    assert main(["train", "translator", "--epochs", "0"]) == 1
    assert capsys.readouterr().err == (
        "keras-seq: --epochs must be at least 1; received 0\n"
    )


def test_unknown_command_is_one_line_and_status_1():
    result = run_cli("fly", in_process=True)
    assert result.returncode == 1
    assert result.stderr.startswith("keras-seq: argument command: invalid choice")
    assert result.stderr.endswith("; see keras-seq --help\n")
    assert result.stderr.count("\n") == 1


# Each command with the flags it requires, so that only the unknown one is wrong.
_REQUIRED = {
    "train": ["translator"],
    "evaluate": ["--model-dir", "m"],
    "classify": ["--model-dir", "m"],
    "generate": ["--model-dir", "m"],
    "score": ["--model-dir", "m"],
    "export": ["--model-dir", "m", "--export-dir", "e"],
    "import": ["d", "--output-dir", "o"],
}


@pytest.mark.parametrize("command", [command_name(m) for m in COMMANDS])
def test_an_unknown_flag_is_one_line_and_status_1(command):
    argv = [command, *_REQUIRED.get(command, []), "--no-such-flag"]
    result = run_cli(*argv, in_process=True)
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        f"keras-seq: unrecognized arguments: --no-such-flag; see keras-seq "
        f"{command} --help\n",
    )


def test_a_value_of_the_wrong_type_is_one_line_and_status_1():
    result = run_cli("train", "translator", "--epochs", "x", in_process=True)
    assert (result.returncode, result.stderr) == (
        1,
        "keras-seq: argument --epochs: invalid int value: 'x'; see keras-seq "
        "train --help\n",
    )


def test_help_version_and_presets_start_without_keras():
    """`--help`, `--version`, `presets` and every `COMMAND --help` build the
    parser from light modules: neither Keras nor TensorFlow is imported."""
    names = [command_name(m) for m in COMMANDS]
    code = f"""
import contextlib, io, sys
from zoo.cli.main import main
helps = [[name, "--help"] for name in {names!r}]
for argv in [["--help"], ["--version"], ["presets"], *helps]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main(argv)
        except SystemExit:
            pass
    assert out.getvalue(), argv
heavy = {{"keras", "tensorflow", "jax", "torch", "keras_hub", "keras_seq.layers"}}
print(sorted(heavy & set(sys.modules)))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stderr


def _settings_of_commands():
    """The settings each command's flags take their defaults from."""
    from zoo.recipes import settings
    from zoo.recipes.families import FAMILIES

    recipes = [r.default_settings() for r in FAMILIES.values()]
    return {
        "train": [*recipes, settings.RuntimeSettings()],
        "demo": [settings.DEMO],
        "evaluate": [settings.TranslatorSettings()],
        "translate": [settings.TranslatorSettings()],
        "generate": [settings.GenerateSettings()],
        "serve": [settings.ServeSettings()],
    }


# Flags whose setting is named otherwise.
_SETTING_OF_FLAG = {"average_epochs": "average_last_epochs"}


def test_every_flag_with_a_setting_defaults_to_none_and_shows_the_setting():
    """A flag left out takes the recipe's setting (each default written once,
    in `zoo.recipes.settings`), and its help shows that value."""
    import dataclasses

    commands = build_parser()._subparsers._group_actions[0].choices
    checked = []
    for command, values in _settings_of_commands().items():
        for action in commands[command]._actions:
            name = _SETTING_OF_FLAG.get(action.dest, action.dest)
            owners = [
                v for v in values if name in {f.name for f in dataclasses.fields(v)}
            ]
            # `--set` adds builder arguments to the recipe's, not a default.
            if not owners or action.dest in ("help", "overrides"):
                continue
            checked.append(f"{command} {action.option_strings[0]}")
            assert action.default is None, (command, action.dest, action.default)
            shown = {f"(default: {getattr(v, name)}" for v in owners}
            if all(getattr(v, name) is None for v in owners):
                continue  # Nothing to show: the help says what None means.
            assert any(s in (action.help or "") for s in shown), (
                command, action.dest, action.help, shown,
            )  # fmt: skip
    assert "train --epochs" in checked and "serve --port" in checked
    assert "train --strategy" in checked and "generate --top-k" in checked
    assert len(checked) >= 25, checked


def _parsed(*argv):
    return build_parser().parse_args(list(argv))


def test_each_command_says_whether_it_needs_tensorflow():
    """The command modules, not a table in the entry point, say which parsed
    commands load TensorFlow: only presets and the CTranslate2 paths don't."""
    for module in COMMANDS:
        assert callable(module.needs_tensorflow), module.__name__
    light = [
        _parsed("presets"),
        _parsed("translate", "--ctranslate2", "d", "Hallo"),
        _parsed("serve", "--ctranslate2", "d"),
    ]
    heavy = [
        _parsed("translate", "--model-dir", "m", "Hallo"),
        _parsed("translate", "--saved-model", "s", "Hallo"),
        _parsed("serve", "--saved-model", "s"),
        _parsed("train", "translator"),
        _parsed("evaluate", "--model-dir", "m"),
        _parsed("export", "--model-dir", "m", "--export-dir", "e"),
    ]
    assert [command_module(a.command).needs_tensorflow(a) for a in light] == [
        False
    ] * len(light)
    assert all(command_module(a.command).needs_tensorflow(a) for a in heavy)


def test_the_console_script_and_python_m_zoo_cli_behave_alike():
    script = os.path.join(os.path.dirname(sys.executable), "keras-seq")
    assert os.path.exists(script), "the package is installed with its script"
    for argv in (["--version"], ["presets", "translator"], ["translate"]):
        results = [
            subprocess.run([*entry, *argv], capture_output=True, text=True)
            for entry in ([script], [sys.executable, "-m", "zoo.cli"])
        ]
        installed, module = [(r.returncode, r.stdout, r.stderr) for r in results]
        assert installed == module, argv
    assert installed[0] == 1 and installed[2].startswith("keras-seq: give exactly")


def test_a_closed_pipe_ends_quietly():
    """`keras-seq presets | head -1`: the reader closes the pipe; the command
    ends with status 1 and nothing on stderr, not a BrokenPipeError."""
    read, write = os.pipe()
    os.close(read)  # Every write the command makes meets a closed pipe.
    try:
        result = subprocess.run(
            [sys.executable, "-m", "zoo.cli", "presets"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (1, "")

"""`zoo.cli.inputs`: arguments, or stdin's lines, one output a line."""

import io
import sys
import types

import pytest

from zoo.cli.errors import UsageError
from zoo.cli.inputs import read_texts


def _stdin(monkeypatch, data):
    stream = types.SimpleNamespace(buffer=io.BytesIO(data), isatty=lambda: False)
    monkeypatch.setattr(sys, "stdin", stream)


def test_arguments_win_and_stdin_keeps_blank_lines(monkeypatch):
    _stdin(monkeypatch, b"not read\n")
    assert read_texts(["a", "b"]) == ["a", "b"]
    _stdin(monkeypatch, b"one\r\n\n  \nlast")
    assert read_texts([]) == ["one", "", "  ", "last"]


def test_bad_utf8_names_the_line(monkeypatch):
    _stdin(monkeypatch, b"fine\nw\xff.\n")
    with pytest.raises(UsageError, match=r"invalid start byte at byte 1 \(line 2\)"):
        read_texts([])

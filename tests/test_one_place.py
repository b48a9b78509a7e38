"""The ideas written once: what `docs/architecture.md` calls "the one
place" of each, held by a search of the code."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python(*folders):
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _matches(pattern, *folders, skip=()):
    return [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _python(*folders)
        if path.relative_to(ROOT).as_posix() not in skip
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(pattern, line)
    ]


def test_padding_masks_come_from_the_one_helper():
    """`keras_seq.masks.padding_mask` builds every padding mask."""
    found = _matches(r"not_equal\(", "keras_seq", "zoo", skip={"keras_seq/masks.py"})
    assert found == []


def test_the_library_never_imports_the_zoo():
    assert _matches(r"^\s*(from|import) zoo\b", "keras_seq") == []


def test_decoding_defaults_are_written_once():
    """`keras_seq.defaults` holds the beam width (4) and the length penalty
    (0.6); no signature or setting restates them as numbers."""
    found = _matches(
        r"^\s*(def .*)?(beam_width|length_penalty)(: \w+)?\s*=\s*(4|0\.6)\b",
        "keras_seq",
        "zoo",
    )
    assert found == []

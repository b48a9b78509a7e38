"""`zoo.recipes.saved_model`: which version `--saved-model` means, and its
refusals (serving itself: tests/zoo/cli/test_export.py and test_demo.py)."""

import pytest

from zoo.recipes.inputs import UsageError
from zoo.recipes.saved_model import latest_version, serve


def _version(root, number):
    (root / str(number)).mkdir(parents=True)
    (root / str(number) / "saved_model.pb").write_bytes(b"")


def test_the_newest_numbered_version_is_taken(tmp_path):
    for number in (1, 2, 10):
        _version(tmp_path, number)
    (tmp_path / "11").mkdir()  # no saved_model.pb: not a version
    assert latest_version(str(tmp_path)) == str(tmp_path / "10")
    assert latest_version(str(tmp_path / "2")) == str(tmp_path / "2")


def test_a_directory_without_versions_is_one_line(tmp_path):
    with pytest.raises(UsageError, match="no saved_model.pb in it or in a numbered"):
        latest_version(str(tmp_path))
    _version(tmp_path, 1)
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"not a protocol buffer")
    with pytest.raises(UsageError, match=r"cannot load .*1/saved_model.pb"):
        serve(str(tmp_path), ["hallo."])

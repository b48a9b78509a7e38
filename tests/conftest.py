"""Shared test set-up: quiet logs, bounded hypothesis runs, gradients."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# On JAX, XLA's LLVM optimisation passes cost a quarter of the stage's
# processor time, compiling every tiny test program afresh, and buy nothing
# at these sizes: the same XLA programs, compiled with less LLVM
# optimisation (fresh processes the tests start inherit it). TensorFlow's
# stage runs its compiled loops and training steps far more, and is slower
# without them.
if os.environ["KERAS_BACKEND"] == "jax":
    os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")

# The commands the tests start keep JAX's compiled loops in this run's own
# directory, not in the user's cache (`zoo.cli.startup`).
if "KERAS_SEQ_COMPILATION_CACHE" not in os.environ:
    import atexit  # noqa: E402
    import shutil  # noqa: E402
    import tempfile  # noqa: E402

    _cache = tempfile.mkdtemp(prefix="keras-seq-compilation-")
    os.environ["KERAS_SEQ_COMPILATION_CACHE"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)

import keras  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# Property tests run a bounded, reproducible number of examples so that CI
# time stays predictable on two cores.
settings.register_profile(
    "ci",
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


if keras.backend.backend() == "torch":
    import torch  # noqa: E402

    _tensor_to_array = torch.Tensor.__array__

    def _detached_array(self, *args, **kwargs):
        # Tests read outputs with `np.asarray`, as on the other backends;
        # PyTorch refuses that for a tensor autograd tracks (every layer
        # output outside `torch.no_grad()`), so the tests read it detached.
        return _tensor_to_array(self.detach().cpu(), *args, **kwargs)

    torch.Tensor.__array__ = _detached_array


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Each test starts with float32 and fresh layer names."""
    keras.config.set_dtype_policy("float32")
    keras.utils.clear_session(free_memory=False)
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


# Test files that share a session fixture training a run in a fresh process
# (tests/zoo/conftest.py, tests/reliability/conftest.py, the served
# translator of tests/zoo/serving) go to one xdist worker together, so each
# run is made once, not once per worker; every other file goes whole to one
# worker, as `--dist loadfile` sends it. The groups are handed out first, in
# this order, so that no long group starts last.
SHARED_RUNS = {
    "cli-runs": (
        "tests/zoo/cli/test_train.py",
        "tests/zoo/cli/test_evaluate.py",
        "tests/zoo/cli/test_translate.py",
        "tests/zoo/cli/test_export.py",
        "tests/zoo/cli/test_generate.py",
        "tests/zoo/cli/test_classify.py",
        "tests/zoo/cli/test_score.py",
    ),
    "reliability": (
        "tests/reliability/test_new_user_path.py",
        "tests/reliability/test_bad_inputs.py",
        "tests/reliability/test_fuzz.py",
        "tests/reliability/test_safe_loading.py",
    ),
    "serving": (
        "tests/zoo/serving/test_api.py",
        "tests/zoo/serving/test_bad_requests.py",
        "tests/zoo/serving/test_batching.py",
        "tests/zoo/serving/test_page.py",
        "tests/zoo/serving/test_streaming.py",
    ),
}
_GROUP_OF = {path: group for group, paths in SHARED_RUNS.items() for path in paths}


def _group(nodeid):
    path = nodeid.split("::")[0]
    return _GROUP_OF.get(path, path)


def pytest_collection_modifyitems(items):
    """The shared groups' tests first (the order xdist hands groups out in,
    with `--no-loadscope-reorder`)."""
    rank = {group: i for i, group in enumerate(SHARED_RUNS)}
    items.sort(key=lambda item: rank.get(_group(item.nodeid), len(rank)))


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with the files of a `SHARED_RUNS` group as one."""
    from xdist.scheduler import LoadScopeScheduling

    class SharedRunsScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return _group(nodeid)

    return SharedRunsScheduling(config, log)

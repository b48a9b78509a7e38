"""Shared test set-up: quiet logs, bounded hypothesis runs, gradients."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

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

"""Learning-rate schedules."""

import keras
from keras import ops

from keras_seq.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_seq")
class InverseSquareRootWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """The warm-up schedule of Vaswani et al. (2017), Eq. (3).

    `lr(step) = scale * model_dim^-0.5 * min(step^-0.5, step * warmup^-1.5)`:
    linear growth for `warmup_steps`, then decay with the inverse square
    root of the step. The peak, reached at `warmup_steps`, is
    `scale / sqrt(model_dim * warmup_steps)`. The paper counts steps from
    1 and Keras' optimizer from 0, so Keras' step `s` is the paper's `s + 1`.

    Args:
        model_dim: int, the model width d_model.
        warmup_steps: int, steps of linear warm-up.
        scale: float, multiplies the whole schedule (1.0 in the paper).

    Returns:
        Called with the optimizer's step, a float32 scalar learning rate.

    Example:

    >>> schedule = InverseSquareRootWarmup(model_dim=512, warmup_steps=4000)
    >>> optimizer = keras.optimizers.Adam(schedule, 0.9, 0.98, 1e-9)
    >>> round(schedule.peak_learning_rate, 6)
    0.000699

    References:
        Vaswani et al. (2017), Attention Is All You Need, Sec. 5.3.
    """

    def __init__(self, model_dim, warmup_steps=4000, scale=1.0):
        check_positive_int(model_dim, "model_dim")
        check_positive_int(warmup_steps, "warmup_steps")
        self.model_dim = model_dim
        self.warmup_steps = warmup_steps
        self.scale = scale

    @property
    def peak_learning_rate(self):
        """The largest rate of the schedule, reached at `warmup_steps`."""
        return self.scale / (self.model_dim * self.warmup_steps) ** 0.5

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0  # Keras counts from 0.
        warmup = float(self.warmup_steps)
        rate = ops.minimum(ops.rsqrt(step), step * warmup**-1.5)
        return self.scale * float(self.model_dim) ** -0.5 * rate

    def get_config(self):
        return {
            "model_dim": self.model_dim,
            "warmup_steps": self.warmup_steps,
            "scale": self.scale,
        }

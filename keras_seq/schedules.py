"""Learning-rate schedules."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_seq")
class InverseSquareRootWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """The warm-up schedule of Vaswani et al. (2017), Eq. (3).

    `lr(step) = scale * model_dim^-0.5 * min(step^-0.5, step * warmup^-1.5)`:
    linear growth for `warmup_steps`, then decay with the inverse square
    root of the step. The peak, reached at `warmup_steps`, is
    `scale / sqrt(model_dim * warmup_steps)`.

    Args:
        model_dim: int, the model width d_model.
        warmup_steps: int, steps of linear warm-up.
        scale: float, multiplies the whole schedule (1.0 in the paper).
    """

    def __init__(self, model_dim, warmup_steps=4000, scale=1.0):
        if not isinstance(model_dim, int) or model_dim <= 0:
            raise ValueError(
                f"`model_dim` must be a positive integer; received {model_dim!r}."
            )
        if not isinstance(warmup_steps, int) or warmup_steps <= 0:
            raise ValueError(
                f"`warmup_steps` must be a positive integer; received {warmup_steps!r}."
            )
        self.model_dim = model_dim
        self.warmup_steps = warmup_steps
        self.scale = scale

    @property
    def peak_learning_rate(self):
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

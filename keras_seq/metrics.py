"""Padding-masked metrics for token predictions.

Shape legend:
    B: batch size
    T: target length
    V: vocabulary size
"""

import keras
from keras import ops

from keras_seq.masks import PADDING_ID, padding_mask


@keras.saving.register_keras_serializable(package="keras_seq")
class MaskedAccuracy(keras.metrics.Mean):
    """Share of real (non-padding) target tokens predicted exactly.

    Within a batch every real token counts once. Across batches this is
    `keras.metrics.Mean` with the padding mask as sample weight, which
    reduces each row to its mean over the T positions first: a token of a
    batch padded to length T weighs 1/T, so batches of one length average
    exactly over tokens, and with length buckets shorter buckets weigh more.

    Args:
        padding_id: int, the target id that is ignored.
        name: metric name.

    Call arguments:
        y_true: (B, T) integer targets.
        y_pred: (B, T, V) logits or probabilities; the argmax is compared.
        sample_weight: optional (B, T) weights of the tokens.

    Returns:
        `result()` is a scalar in [0, 1]; 0 before any real token is seen.

    Example:

    >>> import numpy as np
    >>> metric = MaskedAccuracy()
    >>> y_true = np.array([[1, 2, 0]])  # The last position is padding.
    >>> y_pred = np.eye(4)[[[1, 3, 0]]]  # (1, 3, 4): right, wrong, padding.
    >>> metric.update_state(y_true, y_pred)
    >>> float(metric.result())
    0.5
    """

    def __init__(self, padding_id=PADDING_ID, name="masked_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.padding_id = padding_id

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")  # (B, T)
        mask = ops.cast(padding_mask(y_true, self.padding_id), "float32")
        if sample_weight is not None:
            mask = mask * ops.cast(sample_weight, "float32")
        correct = ops.cast(ops.equal(y_true, predicted), "float32")
        return super().update_state(correct, sample_weight=mask)

    def get_config(self):
        return {**super().get_config(), "padding_id": self.padding_id}


def perplexity(padding_id=PADDING_ID, name="perplexity"):
    """keras-hub's perplexity over real tokens: exp(mean token NLL).

    Args:
        padding_id: int, the target id that is ignored.
        name: metric name.

    Returns:
        A `keras_hub.metrics.Perplexity` that reads logits and skips targets
        equal to `padding_id`.

    Example:

    >>> import numpy as np
    >>> metric = perplexity()
    >>> metric.update_state(np.array([[5, 0]]), np.zeros((1, 2, 8), "float32"))
    >>> round(float(metric.result()), 4)  # Uniform over 8 tokens.
    8.0
    """
    # keras-hub imports TensorFlow, which `import keras_seq` must not.
    import keras_hub

    return keras_hub.metrics.Perplexity(
        from_logits=True, mask_token_id=padding_id, name=name
    )

"""Padding-masked metrics for token predictions."""

import keras
from keras import ops

from keras_seq.masks import PADDING_ID


@keras.saving.register_keras_serializable(package="keras_seq")
class MaskedAccuracy(keras.metrics.Mean):
    """Share of real (non-padding) target tokens predicted exactly.

    Args:
        padding_id: int, the target id that is ignored.
        name: metric name.
    """

    def __init__(self, padding_id=PADDING_ID, name="masked_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.padding_id = padding_id

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        mask = ops.cast(ops.not_equal(y_true, self.padding_id), "float32")
        if sample_weight is not None:
            mask = mask * ops.cast(sample_weight, "float32")
        correct = ops.cast(ops.equal(y_true, predicted), "float32")
        return super().update_state(correct, sample_weight=mask)

    def get_config(self):
        return {**super().get_config(), "padding_id": self.padding_id}


def perplexity(padding_id=PADDING_ID, name="perplexity"):
    """keras-hub's perplexity over real tokens, exp(mean token NLL)."""
    import keras_hub

    return keras_hub.metrics.Perplexity(
        from_logits=True, mask_token_id=padding_id, name=name
    )

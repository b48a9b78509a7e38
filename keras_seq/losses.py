"""Padding-masked sequence losses.

Shape legend:
    B: batch size
    T: target length
    V: vocabulary size
"""

import keras
from keras import ops

from keras_seq.masks import PADDING_ID, padding_mask
from keras_seq.validation import check_bool, check_rate


@keras.saving.register_keras_serializable(package="keras_seq")
class MaskedSparseCategoricalCrossentropy(keras.losses.Loss):
    """Token cross-entropy with label smoothing, averaged over real tokens.

    Keras' `SparseCategoricalCrossentropy` has no label smoothing, and its
    `ignore_class` averages over the batch rather than over tokens; this
    loss does both as translation training needs (Vaswani et al. 2017 use
    smoothing 0.1). Targets equal to `padding_id` contribute nothing, so
    batches padded to a bucket length give the same loss as unpadded ones.

    Args:
        label_smoothing: float in [0, 1), mass spread uniformly over the
            vocabulary.
        padding_id: int, the target id that is ignored.
        from_logits: bool, whether predictions are logits.
        name: loss name.

    Call arguments:
        y_true: (B, T) integer targets.
        y_pred: (B, T, V) logits or probabilities.

    Returns:
        A scalar: the mean loss per real target token.

    Example:

    >>> import numpy as np
    >>> loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    >>> y_true = np.array([[5, 6, 0]])  # The last position is padding.
    >>> y_pred = np.zeros((1, 3, 8), "float32")  # Uniform over 8 tokens.
    >>> round(float(loss(y_true, y_pred)), 4)  # log(8)
    2.0794

    References:
        Vaswani et al. (2017), Attention Is All You Need, Sec. 5.4.
    """

    def __init__(
        self,
        label_smoothing=0.0,
        padding_id=PADDING_ID,
        from_logits=True,
        name="masked_sparse_categorical_crossentropy",
        **kwargs,
    ):
        super().__init__(name=name, reduction=None, **kwargs)
        check_rate(label_smoothing, "label_smoothing")
        check_bool(from_logits, "from_logits")
        self.label_smoothing = label_smoothing
        self.padding_id = padding_id
        self.from_logits = from_logits

    def __call__(self, y_true, y_pred, sample_weight=None):
        # Keras' `Loss.__call__` multiplies by the mask that the model's
        # output carries and by `sample_weight` *after* `call`, which turns
        # an already averaged scalar into a (B, T) array. The padding mask
        # is read from `y_true` here instead, and sample weights join the
        # token average, so the result is always a scalar per-token mean.
        loss = self.call(y_true, y_pred, sample_weight=sample_weight)
        return _scale_for_replicas(loss)

    def _fused_cross_entropy(self, y_true, logits, vocabulary_size):
        """(B, T) token losses through the backends' fused softmax kernels.

        The same value as `(1 - eps) nll + eps mean(-log p)` below: that is
        the cross-entropy against the smoothed target `(1 - eps) one_hot +
        eps / V`. A gather from `log_softmax` has a gradient that scatters
        into a (B, T, V) tensor, and the smoothing term is a second pass
        over the logits; the fused kernels make one pass for both.
        """
        if keras.backend.backend() == "torch":
            return _torch_cross_entropy(y_true, logits, self.label_smoothing)
        if not self.label_smoothing:
            return ops.sparse_categorical_crossentropy(y_true, logits, from_logits=True)
        eps = self.label_smoothing
        targets = ops.one_hot(y_true, vocabulary_size) * (1.0 - eps)  # (B, T, V)
        targets = targets + eps / vocabulary_size
        return ops.categorical_crossentropy(targets, logits, from_logits=True)

    def call(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        y_pred = ops.cast(y_pred, "float32")  # Softmax in float32.
        vocabulary_size = y_pred.shape[-1]
        if self.from_logits and vocabulary_size is not None:
            loss = self._fused_cross_entropy(y_true, y_pred, vocabulary_size)
        else:
            if self.from_logits:
                log_probs = ops.log_softmax(y_pred, axis=-1)
            else:
                log_probs = ops.log(ops.clip(y_pred, 1e-7, 1.0))
            # (B, T, V) -> (B, T)
            nll = -ops.take_along_axis(log_probs, y_true[..., None], axis=-1)[..., 0]
            loss = nll
            if self.label_smoothing:
                uniform = -ops.mean(log_probs, axis=-1)  # (B, T)
                eps = self.label_smoothing
                loss = (1.0 - eps) * nll + eps * uniform
        mask = ops.cast(padding_mask(y_true, self.padding_id), "float32")
        if sample_weight is not None:
            weight = ops.cast(sample_weight, "float32")
            while len(weight.shape) < len(mask.shape):
                weight = weight[..., None]  # (B,) -> (B, 1)
            mask = mask * weight
        return ops.sum(loss * mask) / ops.maximum(ops.sum(mask), 1e-9)

    def get_config(self):
        config = super().get_config()
        config.pop("reduction", None)
        config.update(
            {
                "label_smoothing": self.label_smoothing,
                "padding_id": self.padding_id,
                "from_logits": self.from_logits,
            }
        )
        return config


def _torch_cross_entropy(y_true, logits, label_smoothing):
    """(B, T) token losses by PyTorch's `cross_entropy`, smoothing included.

    PyTorch's label smoothing is the same mixture, `(1 - eps) nll + eps
    mean(-log p)`, in one pass over the logits and one back; Keras' torch
    `one_hot` and `categorical_crossentropy` make four, each over a
    (B, T, V) tensor (`benchmarks/history.md`, "Training on PyTorch").
    """
    import torch  # The PyTorch backend only.

    return torch.nn.functional.cross_entropy(
        torch.movedim(logits, -1, 1),  # (B, V, T), classes on the second axis
        y_true.long(),
        reduction="none",
        label_smoothing=label_smoothing,
    )  # (B, T)


def _scale_for_replicas(loss):
    """Divide by the replicas in sync, as Keras' `Loss.__call__` does.

    Under a `tf.distribute` strategy each replica's gradients are summed and
    Keras multiplies the reported loss back by the number of replicas; the
    division lives in the `Loss.__call__` this loss bypasses, so it is here.
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf  # Only this backend has `tf.distribute`.

        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        if replicas > 1:
            loss = ops.multiply(loss, ops.cast(1.0 / replicas, loss.dtype))
    return loss

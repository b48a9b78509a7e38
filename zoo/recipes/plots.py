"""Figures written by the demo: learning curves and attention heat maps."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_learning_curves(history, bleu_points, path):
    """Plots the loss per epoch and the validation BLEU against minutes.

    Args:
        history: Keras' history dict, with `loss` (and `val_loss`).
        bleu_points: list of `(minutes, epoch, BLEU)` (`BleuHistory.points`).
        path: str, the image file to write.

    A resumed run's `fit` sees only the epochs after the interruption; they
    are numbered from the first BLEU point's epoch, and its minutes count
    from the resumption.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    first_epoch = bleu_points[0][1] if bleu_points else 1
    epochs = np.arange(first_epoch, first_epoch + len(history["loss"]))
    left.plot(epochs, history["loss"], "o-", label="training")
    if "val_loss" in history:
        left.plot(epochs, history["val_loss"], "s-", label="validation")
    left.set(xlabel="epoch", ylabel="smoothed cross-entropy per token", title="Loss")
    left.legend()
    if bleu_points:
        minutes, _, bleu = zip(*bleu_points)
        right.plot(minutes, bleu, "o-", color="tab:green")
    right.set(xlabel="training minutes", ylabel="BLEU", title="Validation BLEU")
    for axis in (left, right):
        axis.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_attention(weights, source_tokens, target_tokens, path, title=None):
    """Plots an attention matrix in the style of Fig. 7.11: rows are outputs.

    Args:
        weights: array (T, S), attention of each output on each source token.
        source_tokens: list of S str, the column labels.
        target_tokens: list of T str, the row labels.
        path: str, the image file to write.
        title: str or None.
    """
    weights = np.asarray(weights)
    fig, axis = plt.subplots(
        figsize=(
            max(4.0, 1.0 + 0.45 * len(source_tokens)),
            max(3.0, 1.0 + 0.4 * len(target_tokens)),
        )
    )
    axis.imshow(weights, cmap="gray_r", vmin=0.0, vmax=max(weights.max(), 1e-6))
    axis.set_xticks(range(len(source_tokens)), source_tokens, rotation=60, ha="right")
    axis.set_yticks(range(len(target_tokens)), target_tokens)
    axis.set_xlabel("source")
    axis.set_ylabel("output")
    if title:
        axis.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)

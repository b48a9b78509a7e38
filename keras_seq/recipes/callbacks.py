"""Callbacks for long runs: a wall-clock budget and a BLEU curve."""

import time

import keras


class TimeBudget(keras.callbacks.Callback):
    """Stop training once `minutes` of wall-clock time have passed.

    The check runs after every batch, so a run ends within one batch of its
    budget; `None` means no budget.
    """

    def __init__(self, minutes=None):
        super().__init__()
        if minutes is not None and minutes <= 0:
            raise ValueError(f"`minutes` must be > 0 or None; received {minutes}.")
        self.minutes = minutes
        self._start = None
        self._stop = None

    def on_train_begin(self, logs=None):
        self._start = time.time()

    def on_train_batch_end(self, batch, logs=None):
        if self.minutes is not None and self.elapsed_minutes() >= self.minutes:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        self._stop = time.time()

    def elapsed_minutes(self):
        if self._start is None:
            return 0.0
        return ((self._stop or time.time()) - self._start) / 60.0


class BleuHistory(keras.callbacks.Callback):
    """Score BLEU after every epoch; `points` holds (minutes, epoch, BLEU).

    The minutes count training time only: the time spent scoring is
    subtracted, so the curve shows what training buys.
    """

    def __init__(self, score_fn):
        super().__init__()
        self.score_fn = score_fn
        self.points = []
        self._start = None
        self._scoring = 0.0

    def on_train_begin(self, logs=None):
        self._start = time.time()

    def on_epoch_end(self, epoch, logs=None):
        began = time.time()
        score = float(self.score_fn())
        minutes = (began - self._start - self._scoring) / 60.0
        self._scoring += time.time() - began
        self.points.append((round(minutes, 2), epoch + 1, round(score, 2)))
        if logs is not None:
            logs["val_bleu"] = score
        print(f"  validation BLEU after epoch {epoch + 1}: {score:.2f}", flush=True)

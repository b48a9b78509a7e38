"""Callbacks for long runs: a wall-clock budget, a BLEU curve, and resuming.

A run killed at any moment and started again with the same command resumes
from its last finished epoch (`checkpoint_callbacks`) and, with fixed seeds
and TensorFlow's op determinism, ends with the weights an uninterrupted run
ends with: the shuffled order of each epoch is a function of the epoch
number (`ShuffleEpoch`), the optimizer state comes back with the weights,
and the history and best-epoch bookkeeping pick up where they stopped.
"""

import collections
import csv
import json
import os
import shutil
import time

import keras
import numpy as np
import tensorflow as tf

from keras_seq.validation import check_positive_int

# The first epoch's end compiles the validation pass over the shapes training
# compiled (the forward pass only: about a fifth of a training step's compile
# for the `small` translator) and a scoring callback's decoding loop (about as
# much again), so half of training's compile time prices it until measured
# (docs/training.md, "Compiling and the budget").
EPOCH_END_COMPILE_SHARE = 0.5
# A batch that takes this many times a typical batch, and at least
# `_COMPILE_MIN_SECONDS` more, is one that compiled.
_COMPILE_FACTOR = 3.0
_COMPILE_MIN_SECONDS = 1.0
_BATCHES_FOR_MEDIAN = 5


class TimeBudget(keras.callbacks.Callback):
    """Stop training once `minutes` of wall-clock time have passed.

    The check runs after every batch, so a run ends within one batch of its
    budget. A stop inside an epoch still runs that epoch's end (Keras'
    validation pass and every `on_epoch_end`: scoring, checkpoints), so the
    check also keeps the time the latest epoch end took. A budget that
    should hold for a whole run, not only for `fit`, starts `since` the run
    began and keeps a `reserve` for what comes after training (scoring the
    test split): training stops once the minutes spent, the epoch end and
    the reserve reach the budget.

    Compiling is what a short budget meets first: the first batch waits for
    the training step to compile, each new batch shape compiles again, and
    the first epoch's end compiles the validation pass (and any decoding a
    callback scores with) for those shapes. Until an epoch end has been
    measured, its time is priced from the compiling seen so far (a batch's
    excess over the median batch), `EPOCH_END_COMPILE_SHARE` of it.

    Args:
        minutes: float > 0, the budget, or `None` for no budget.
        since: float or None, the `time.time()` at which the budget began
            (None: when training begins).
        reserve: None, or a function of no arguments returning the minutes
            to keep for after training; it is called after every batch, so
            it should return a number computed beforehand.
        announce: None, or a function of one string that says when the
            training step starts compiling and how long the first batch,
            compiling included, took (`keras-seq train` prints them).

    Example:

    >>> budget = TimeBudget(minutes=30)
    >>> model.fit(dataset, epochs=100, callbacks=[budget])  # doctest: +SKIP
    >>> budget.elapsed_minutes()  # doctest: +SKIP
    30.02
    """

    def __init__(self, minutes=None, since=None, reserve=None, announce=None):
        super().__init__()
        if minutes is not None and minutes <= 0:
            raise ValueError(f"`minutes` must be > 0 or None; received {minutes}.")
        self.minutes = minutes
        self.since = since
        self.reserve = reserve
        self.announce = announce
        self.epoch_end_seconds = 0.0
        self._epoch_end_measured = False
        self._batch_seconds = []
        self._start = None
        self._stop = None
        self._last_batch = None
        self._batch_began = None

    def on_train_begin(self, logs=None):
        self._start = time.time()
        self._last_batch = None
        self._batch_seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        # From the last batch of the epoch before to here: its validation
        # pass and the epoch-end callbacks, all of which a stop still runs.
        if self._last_batch is not None:
            self.epoch_end_seconds = time.time() - self._last_batch
            self._epoch_end_measured = True
            self._last_batch = None

    def on_train_batch_begin(self, batch, logs=None):
        self._batch_began = time.time()
        if self.announce and not self._batch_seconds:
            self.announce("compiling the training step; the first batch waits for it")

    def compile_seconds(self):
        """Seconds the batches so far spent compiling: each compiling
        batch's excess over a typical batch (the median, the fastest while
        there are few). The first batch alone cannot tell its step from its
        compiling, so all of it counts until a second batch is measured."""
        if not self._batch_seconds:
            return 0.0
        if len(self._batch_seconds) == 1:
            return self._batch_seconds[0]
        if len(self._batch_seconds) < _BATCHES_FOR_MEDIAN:
            typical = min(self._batch_seconds)
        else:
            typical = float(np.median(self._batch_seconds))
        return sum(
            seconds - typical
            for seconds in self._batch_seconds
            if seconds > _COMPILE_FACTOR * typical
            and seconds - typical > _COMPILE_MIN_SECONDS
        )

    def on_train_batch_end(self, batch, logs=None):
        self._last_batch = time.time()
        if self._batch_began is not None:
            self._batch_seconds.append(self._last_batch - self._batch_began)
            if self.announce and len(self._batch_seconds) == 1:
                self.announce(
                    f"the first batch took {self._batch_seconds[0]:.1f} s, "
                    "compiling included"
                )
        if self.minutes is None:
            return
        spent = (self._last_batch - (self.since or self._start)) / 60.0
        if self._epoch_end_measured:
            after = self.epoch_end_seconds / 60.0
        else:
            after = EPOCH_END_COMPILE_SHARE * self.compile_seconds() / 60.0
        if self.reserve:
            after += self.reserve()
        if spent + after >= self.minutes:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        self._stop = time.time()

    def elapsed_minutes(self):
        """Minutes since training began (until it ended, once it has)."""
        if self._start is None:
            return 0.0
        return ((self._stop or time.time()) - self._start) / 60.0


class BleuHistory(keras.callbacks.Callback):
    """Score BLEU after epochs; `points` holds (minutes, epoch, BLEU).

    The minutes count training time only: the time spent scoring is
    subtracted, so the curve shows what training buys. The score is also
    put in the epoch's logs as `val_bleu`, so that callbacks after this one
    (`checkpoint_callbacks(..., monitor="val_bleu")`) can use it.

    Scoring costs translating, so it can run every `every` epochs; the
    first epoch of a `fit` (so that a CSV log has the column from its first
    row) and the last (planned, or stopped by a callback before this one)
    are always scored. An epoch not scored has no `val_bleu`.

    Args:
        score_fn: a function of no arguments returning the BLEU score of
            the model as it is now, e.g. on the validation pairs.
        every: int, score every that many epochs.

    Example:

    >>> history = BleuHistory(lambda: score_validation(model))  # doctest: +SKIP
    >>> model.fit(dataset, epochs=3, callbacks=[history])  # doctest: +SKIP
    >>> history.points  # doctest: +SKIP
    [(1.2, 1, 3.5), (2.4, 2, 7.9), (3.6, 3, 10.1)]
    """

    def __init__(self, score_fn, every=1):
        super().__init__()
        check_positive_int(every, "every")
        self.score_fn = score_fn
        self.every = every
        self.points = []
        self._start = None
        self._scoring = 0.0
        self._first = True

    def on_train_begin(self, logs=None):
        self._start = time.time()
        self._first = True

    def on_epoch_end(self, epoch, logs=None):
        first, self._first = self._first, False
        last = self.model.stop_training or epoch + 1 == self.params.get("epochs")
        if not (first or last or (epoch + 1) % self.every == 0):
            return
        began = time.time()
        score = float(self.score_fn())
        minutes = (began - self._start - self._scoring) / 60.0
        self._scoring += time.time() - began
        self.points.append((round(minutes, 2), epoch + 1, round(score, 2)))
        if logs is not None:
            logs["val_bleu"] = score
        print(f"  validation BLEU after epoch {epoch + 1}: {score:.2f}", flush=True)


class EmaWeights(keras.callbacks.SwapEMAWeights):
    """Score and keep the optimizer's moving average of the weights.

    Keras' `SwapEMAWeights(swap_on_epoch=True)` puts the averaged weights in
    the model at every epoch end (so that `BleuHistory` and the checkpoints
    after it see them) and hands the averages back to the optimizer only
    when the last planned epoch ends. A run stopped earlier (`TimeBudget`,
    `EarlyStopping`) would then end with the raw weights: `fit` finishes by
    copying the optimizer's averages into the model, and those slots hold
    the raw weights while the averages are in the model. This callback also
    hands them back when training stops early. Put it before the callbacks
    that should see the averaged weights and after `TimeBudget`.

    Example:

    >>> optimizer = keras.optimizers.Adam(use_ema=True)
    >>> callbacks = [TimeBudget(30), EmaWeights()]
    >>> model.fit(dataset, epochs=10, callbacks=callbacks)  # doctest: +SKIP
    """

    def __init__(self):
        super().__init__(swap_on_epoch=True)

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if self.model.stop_training and epoch != self.params["epochs"] - 1:
            self._finalize_ema_values()


class AverageLastEpochs(keras.callbacks.Callback):
    """End training with the mean of the weights of the last `epochs` epochs.

    Checkpoint averaging as Vaswani et al. (2017) did it (the mean of the
    last 5 checkpoints), with an epoch end as the checkpoint: the trainable
    weights are copied at every epoch end (a run stopped by `TimeBudget`
    ends its last, partial epoch too) and, when training ends, the model
    gets their element-wise mean. Non-trainable weights keep their last
    values. Callbacks see the raw weights during training; the returned
    model, and whatever is saved after `fit`, holds the average.

    With a `directory`, each epoch's copy is also written there (one
    `epoch-NNNNN.npz` a epoch, the last `epochs` of them kept), so that a
    run killed and resumed (`BackupAndRestore`) averages the same epochs an
    uninterrupted run averages: when the first epoch of a resumed `fit`
    begins, the copies of the epochs before it come back and any later ones
    (written after the last backup) go. The directory is removed when
    training ends.

    An average over epochs that were still learning fast (a short run
    stopped by its budget) can score below the last weights. With a
    `score_fn`, the average is kept only when it scores at least what the
    last weights score; otherwise the model ends with the last weights.
    `kept` says which (`"average"` or `"last"`) and `scores` gives both.

    Args:
        epochs: int, how many of the last epoch ends are averaged.
        directory: optional path where each epoch's copy is written.
        score_fn: optional function of no arguments returning a score of
            the model as it is now, higher is better (e.g. validation
            BLEU).
        monitor: optional name of the log entry that holds the score of an
            epoch's last weights (e.g. `"val_bleu"` of a `BleuHistory` put
            before this callback); when the last epoch logged it, the last
            weights are not scored again.

    Example:

    >>> average = AverageLastEpochs(epochs=5, directory="run/averaging")
    >>> model.fit(dataset, epochs=20, callbacks=[average])  # doctest: +SKIP
    >>> average.averaged_epochs  # doctest: +SKIP
    5
    """

    def __init__(self, epochs=5, directory=None, score_fn=None, monitor=None):
        super().__init__()
        check_positive_int(epochs, "epochs")
        self.epochs = epochs
        self.directory = directory
        self.score_fn = score_fn
        self.monitor = monitor
        self.kept = None
        self.scores = {}
        self._kept = collections.deque(maxlen=epochs)
        self._loaded = False
        self._last_score = None

    def _path(self, epoch):
        return os.path.join(self.directory, f"epoch-{epoch:05d}.npz")

    def _saved_epochs(self):
        if not self.directory or not os.path.isdir(self.directory):
            return []
        names = os.listdir(self.directory)
        return sorted(
            int(name[6:-4])
            for name in names
            if name.startswith("epoch-") and name.endswith(".npz")
        )

    def on_train_begin(self, logs=None):
        self._kept.clear()
        self._loaded = False
        self.kept, self.scores = None, {}

    def on_epoch_begin(self, epoch, logs=None):
        # Only the first epoch of a `fit` says where a resumed run starts.
        if self._loaded:
            return
        self._loaded = True
        for saved in self._saved_epochs():
            if saved < epoch:
                with np.load(self._path(saved)) as arrays:
                    self._kept.append([arrays[f"w{i}"] for i in range(len(arrays))])
            else:  # Written after the last backup: that epoch runs again.
                os.remove(self._path(saved))

    def on_epoch_end(self, epoch, logs=None):
        weights = [np.array(v) for v in self.model.trainable_variables]
        self._kept.append(weights)
        self._last_score = (logs or {}).get(self.monitor) if self.monitor else None
        if not self.directory:
            return
        os.makedirs(self.directory, exist_ok=True)
        partial = os.path.join(self.directory, "partial.npz")
        np.savez(partial, **{f"w{i}": w for i, w in enumerate(weights)})
        os.replace(partial, self._path(epoch))  # Atomic: never half a file.
        for saved in self._saved_epochs():
            if saved <= epoch - self.epochs:
                os.remove(self._path(saved))

    def on_train_end(self, logs=None):
        if len(self._kept) >= 2:
            self._average()
        if self.directory and os.path.isdir(self.directory):
            shutil.rmtree(self.directory)

    def _assign(self, weights):
        for variable, value in zip(self.model.trainable_variables, weights):
            variable.assign(value.astype(variable.dtype))

    def _average(self):
        """Puts the mean in the model, unless it scores below the last weights."""
        last = self._kept[-1]
        if self.score_fn is not None:
            score = self._last_score
            self.scores["last"] = float(self.score_fn() if score is None else score)
        self._assign([np.mean(np.stack(ws), axis=0) for ws in zip(*self._kept)])
        self.kept = "average"
        if self.score_fn is not None:
            self.scores["average"] = float(self.score_fn())
            if self.scores["average"] < self.scores["last"]:
                self._assign(last)
                self.kept = "last"

    @property
    def averaged_epochs(self):
        """How many epoch ends the last average was taken over."""
        return len(self._kept)

    @property
    def kept_epochs(self):
        """How many epoch ends the model's final weights are the mean of: 1
        when the last weights were kept."""
        return self.averaged_epochs if self.kept == "average" else 1


class ShuffleEpoch(keras.callbacks.Callback):
    """Tell a training pipeline which epoch begins.

    Pass `callback.epoch` as the `epoch` argument of a `keras_seq.text`
    pipeline and the callback to `fit`: the pipeline's order of each epoch
    is then a function of `(seed, epoch)`, the same in a resumed run.

    Example:

    >>> shuffle_epoch = ShuffleEpoch()
    >>> dataset = keras_seq.text.make_language_model_dataset(
    ...     texts, tokenizer, 64, 32, shuffle=True, epoch=shuffle_epoch.epoch
    ... )  # doctest: +SKIP
    >>> model.fit(dataset, epochs=5, callbacks=[shuffle_epoch])  # doctest: +SKIP
    """

    def __init__(self):
        super().__init__()
        self.epoch = tf.Variable(0, dtype="int64", trainable=False, name="epoch")

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch.assign(epoch)


def finished_epochs(backup_dir):
    """Epochs a previous, interrupted run finished, from its backup.

    `BackupAndRestore(double_checkpoint=True)` keeps two copies of its
    state; when the newest cannot be read (a kill or a full disk while it
    was written, a damaged file) it loads the older one, an epoch earlier.
    The choice is made here, once, by putting the older copy in the
    newest's place, so that the history kept and the message shown name
    the epoch training really resumes after.

    Args:
        backup_dir: str, the directory of `keras.callbacks.BackupAndRestore`.

    Returns:
        int, 0 when there is no backup.
    """
    newest = _backup_copy(backup_dir, "")
    epoch = _readable_epoch(*newest)
    if epoch is not None:
        return epoch
    older = _backup_copy(backup_dir, ".bkp")
    epoch = _readable_epoch(*older)
    if epoch is None:
        return 0
    for source, target in zip(older, newest):
        shutil.copyfile(source, target)
    return epoch


def _backup_copy(backup_dir, suffix):
    """(weights, metadata) paths of one copy, as `BackupAndRestore` names them."""
    return (
        os.path.join(backup_dir, "latest.weights.h5" + suffix),
        os.path.join(backup_dir, "training_metadata.json" + suffix),
    )


def _readable_epoch(weights_path, metadata_path):
    """The epoch of a backup copy whose files both read whole, else None."""
    try:
        with open(metadata_path, encoding="utf-8") as file:
            epoch = json.load(file)["epoch"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        return None
    if not _readable_weights(weights_path):
        return None
    return epoch


def _readable_weights(path):
    """Whether every array of a `.weights.h5` file reads."""
    import h5py  # Keras' own dependency for `.weights.h5`.

    def read(name, item):
        if isinstance(item, h5py.Dataset):
            item[()]

    try:
        with h5py.File(path, "r") as file:
            file.visititems(read)
    except (OSError, ValueError, KeyError, RuntimeError):
        return False
    return True


def _resume_history(path, epochs, monitor, mode):
    """Keep the first `epochs` rows of a CSV history; the best `monitor`.

    A run killed after logging an epoch but before backing it up logged a
    row that the resumed run logs again, so rows past the backup go.
    """
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    rows = rows[:epochs]
    if rows:
        with open(path, "w", encoding="utf-8", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    # `CSVLogger` writes "NA" where an epoch logged no such value (a fit
    # without validation data has no `val_loss`).
    values = [
        float(row[monitor]) for row in rows if row.get(monitor) not in ("", "NA", None)
    ]
    if not values:
        return None
    return max(values) if mode == "max" else min(values)


def checkpoint_callbacks(
    output_dir,
    monitor="val_loss",
    *,
    history_path=None,
    backup_dir=None,
    best_weights_path=None,
):
    """Log, back up and keep the best epoch, resuming after an interruption.

    - `CSVLogger` writes `<output_dir>/history.csv` (appending when the run
      resumes).
    - `BackupAndRestore` saves the weights and optimizer state at every
      epoch end under `<output_dir>/backup` and, when the same command runs
      again after a crash or a kill, resumes from the last finished epoch
      (it removes the backup once training ends normally).
    - `ModelCheckpoint` keeps the weights of the best epoch on `monitor` in
      `<output_dir>/best.weights.h5`; a resumed run starts from the best
      value logged before the interruption.

    Put callbacks that add to the logs (such as `BleuHistory`) before these.

    Args:
        output_dir: the run's directory.
        monitor: the logged quantity that picks the best epoch; one whose
            name holds `"acc"` or `"bleu"` is maximised, others minimised.
        history_path, backup_dir, best_weights_path: str or None, where
            each goes when not under the names above (a run directory
            object names its own files).

    Returns:
        A list of the three callbacks, in the order above.

    Example:

    >>> callbacks = checkpoint_callbacks("runs/small", monitor="val_loss")
    >>> model.fit(dataset, epochs=10, callbacks=callbacks)  # doctest: +SKIP
    """
    backup_dir = backup_dir or os.path.join(output_dir, "backup")
    history = history_path or os.path.join(output_dir, "history.csv")
    mode = "max" if "acc" in monitor or "bleu" in monitor else "min"
    finished = finished_epochs(backup_dir)
    best = _resume_history(history, finished, monitor, mode) if finished else None
    return [
        keras.callbacks.CSVLogger(history, append=finished > 0),
        # Two copies: a kill while one is written leaves the other to load.
        keras.callbacks.BackupAndRestore(backup_dir, double_checkpoint=True),
        keras.callbacks.ModelCheckpoint(
            best_weights_path or os.path.join(output_dir, "best.weights.h5"),
            monitor=monitor,
            mode=mode,
            save_best_only=True,
            save_weights_only=True,
            initial_value_threshold=best,
        ),
    ]

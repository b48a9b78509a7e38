"""`EmaWeights`: the averaged weights are scored at epoch ends and kept.
`AverageLastEpochs`: training ends with the mean of the last epoch ends,
unless it scores below the last weights. `BleuHistory` every few epochs;
`TimeBudget` counting what came before `fit` and keeping a reserve."""

import csv
import os

import keras
import numpy as np
import pytest

from keras_seq.callbacks import (
    AverageLastEpochs,
    BleuHistory,
    EmaWeights,
    TimeBudget,
    checkpoint_callbacks,
    finished_epochs,
)

MOMENTUM = 0.8
BATCHES = 4


class _Record(keras.callbacks.Callback):
    """The raw weights after every step, and what later callbacks see."""

    def __init__(self):
        super().__init__()
        self.steps, self.epoch_ends = [], []

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append([np.array(w) for w in self.model.get_weights()])


class _EpochEnds(keras.callbacks.Callback):
    def __init__(self, record):
        super().__init__()
        self.record = record

    def on_epoch_end(self, epoch, logs=None):
        weights = [np.array(w) for w in self.model.get_weights()]
        self.record.epoch_ends.append(weights)


class _StopAfter(keras.callbacks.Callback):
    """Stop in the last batch of epoch `epochs`, as `TimeBudget` does."""

    def __init__(self, epochs):
        super().__init__()
        self.epochs, self._epoch = epochs, 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._epoch + 1 == self.epochs and batch + 1 == BATCHES:
            self.model.stop_training = True


def _moving_average(steps):
    """Keras' update: the first step copies, then m * average + (1 - m) * w."""
    average = [w.copy() for w in steps[0]]
    for weights in steps[1:]:
        average = [MOMENTUM * a + (1 - MOMENTUM) * w for a, w in zip(average, weights)]
    return average


def _fit(callback, epochs=5, stop_after=2):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(
        optimizer=keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=MOMENTUM),
        loss="mse",
    )
    x = np.random.default_rng(0).normal(size=(8 * BATCHES, 3)).astype("float32")
    y = x[:, :2] * 2.0 - 1.0
    record = _Record()
    model.fit(
        x,
        y,
        batch_size=8,
        epochs=epochs,
        shuffle=False,
        verbose=0,
        callbacks=[record, _StopAfter(stop_after), callback, _EpochEnds(record)],
    )
    return model, record


@pytest.mark.parametrize("epochs,stop_after", [(5, 2), (2, 2)])
def test_ema_weights_are_kept_when_training_stops(epochs, stop_after):
    model, record = _fit(EmaWeights(), epochs, stop_after)
    assert len(record.steps) == BATCHES * stop_after
    expected = _moving_average(record.steps)
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # Callbacks after it see the averages at every epoch end.
    first = _moving_average(record.steps[:BATCHES])
    for got, want in zip(record.epoch_ends[0], first):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # And training goes on from the raw weights, not from the averages.
    assert not np.allclose(record.steps[-1][0], expected[0])


def test_keras_callback_alone_loses_the_averages_on_an_early_stop():
    # Why EmaWeights exists: with the plain callback an early stop ends
    # with the raw weights of the last step.
    model, record = _fit(keras.callbacks.SwapEMAWeights(swap_on_epoch=True))
    for got, want in zip(model.get_weights(), record.steps[-1]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("keep,epochs,stop_after", [(3, 5, 5), (3, 5, 2), (2, 2, 2)])
def test_average_last_epochs_is_the_mean_of_the_last_epoch_ends(
    keep, epochs, stop_after
):
    callback = AverageLastEpochs(keep)
    model = _fit_plain(callback, epochs, stop_after)
    ends = model.record.epoch_ends
    assert len(ends) == stop_after and callback.averaged_epochs == min(keep, stop_after)
    expected = [np.mean(ws, axis=0) for ws in zip(*ends[-keep:])]
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # Not the last weights: the average differs from them.
    assert not np.allclose(model.get_weights()[0], ends[-1][0])


def test_average_of_one_epoch_leaves_the_weights():
    model = _fit_plain(AverageLastEpochs(1), epochs=3, stop_after=3)
    for got, want in zip(model.get_weights(), model.record.epoch_ends[-1]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("epochs", [0, 2.5, -1])
def test_average_last_epochs_refuses_a_bad_count(epochs):
    with pytest.raises(ValueError, match="`epochs` must be a positive integer"):
        AverageLastEpochs(epochs)


def _fit_plain(callback, epochs, stop_after, extra=()):
    """Plain SGD; `record.epoch_ends` holds the raw weights at epoch ends."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x = np.random.default_rng(0).normal(size=(8 * BATCHES, 3)).astype("float32")
    record = _Record()
    model.fit(
        x,
        x[:, :2] * 2.0 - 1.0,
        batch_size=8,
        epochs=epochs,
        shuffle=False,
        verbose=0,
        # The recorder runs first, so it sees the raw weights at epoch ends.
        callbacks=[_StopAfter(stop_after), _EpochEnds(record), callback, *extra],
    )
    model.record = record
    return model


class _Clock:
    """A clock a callback moves: `seconds` a batch, `epoch_end` an epoch end."""

    def __init__(self, seconds, epoch_end):
        self.now, self.seconds, self.epoch_end = 0.0, seconds, epoch_end

    def time(self):
        return self.now


class _Spend(keras.callbacks.Callback):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock

    def on_train_batch_begin(self, batch, logs=None):
        self.clock.now += self.clock.seconds

    def on_epoch_end(self, epoch, logs=None):
        self.clock.now += self.clock.epoch_end


@pytest.mark.parametrize("epoch_end,epochs_run", [(0.0, 3), (15.0, 2)])
def test_time_budget_keeps_the_time_an_epoch_end_takes(
    monkeypatch, epoch_end, epochs_run
):
    # Batches of 5 s, 4 an epoch, in a 1-minute budget. A stop still runs
    # the epoch's end (validation, scoring, checkpoints): with 15 s of it,
    # the budget stops at 45 s, in epoch 2 (45 s + 15 s of end reach 60 s),
    # and the run ends at 60 s; without the epoch end kept it would finish
    # epoch 2 at 70 s and stop in epoch 3, ending at 90 s.
    from keras_seq import callbacks

    clock = _Clock(5.0, epoch_end)
    monkeypatch.setattr(callbacks, "time", clock)
    budget = TimeBudget(1.0)
    model = _fit_plain(budget, 5, 5, extra=[_Spend(clock)])
    assert len(model.record.epoch_ends) == epochs_run
    assert budget.epoch_end_seconds == epoch_end
    assert clock.now == 60.0


def test_average_last_epochs_resumes_from_its_directory(tmp_path):
    directory = tmp_path / "average"
    seen = []

    class Look(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(sorted(os.listdir(directory)))

    model = _fit_plain(AverageLastEpochs(2, str(directory)), 3, 3, extra=[Look()])
    # Only the last 2 epochs' copies are on disk; none once training ends.
    assert seen == [
        ["epoch-00000.npz"],
        ["epoch-00000.npz", "epoch-00001.npz"],
        ["epoch-00001.npz", "epoch-00002.npz"],
    ]
    assert not directory.exists()

    # A run killed after epoch 1 was backed up and after epoch 2's copy was
    # written: resuming at epoch 2 reads epoch 1's copy and drops epoch 2's.
    ends = model.record.epoch_ends
    directory.mkdir()
    stale = [w + 1.0 for w in ends[2]]
    for epoch, weights in enumerate((ends[0], ends[1], stale)):
        arrays = {f"w{i}": w for i, w in enumerate(weights)}
        np.savez(directory / f"epoch-{epoch:05d}.npz", **arrays)
    model.set_weights(ends[1])
    record = _Record()
    callback = AverageLastEpochs(2, str(directory))
    x = np.random.default_rng(0).normal(size=(8 * BATCHES, 3)).astype("float32")
    model.fit(
        x,
        x[:, :2] * 2.0 - 1.0,
        batch_size=8,
        epochs=3,
        initial_epoch=2,
        shuffle=False,
        verbose=0,
        callbacks=[_EpochEnds(record), callback],
    )
    assert callback.averaged_epochs == 2
    expected = [(a + b) / 2 for a, b in zip(ends[1], record.epoch_ends[0])]
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not directory.exists()


class _Interrupt(keras.callbacks.Callback):
    """Stops a run as a kill would: in epoch `epoch`, after it began."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise KeyboardInterrupt


def _fit_with_backup(tmp_path, epochs, extra=()):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x = np.random.default_rng(0).normal(size=(8 * BATCHES, 3)).astype("float32")
    model.fit(
        x,
        x[:, :2],
        batch_size=8,
        epochs=epochs,
        verbose=0,
        callbacks=[*checkpoint_callbacks(str(tmp_path)), *extra],
    )


def test_resuming_from_the_older_backup_copy_logs_each_epoch_once(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _fit_with_backup(tmp_path, 5, extra=[_Interrupt(3)])
    backup = tmp_path / "backup"
    assert finished_epochs(str(backup)) == 3
    # The newest copy is damaged: the older one, of epoch 2, is what loads.
    weights = backup / "latest.weights.h5"
    weights.write_bytes(weights.read_bytes()[:100])
    assert finished_epochs(str(backup)) == 2
    _fit_with_backup(tmp_path, 5)
    with open(tmp_path / "history.csv", encoding="utf-8") as file:
        epochs = [row["epoch"] for row in csv.DictReader(file)]
    assert epochs == ["0", "1", "2", "3", "4"]
    assert not backup.exists()


def test_an_unreadable_backup_without_an_older_copy_starts_afresh(tmp_path):
    backup = tmp_path / "backup"
    backup.mkdir()
    (backup / "training_metadata.json").write_text('{"epoch": 2')
    assert finished_epochs(str(backup)) == 0


class _LogScore(keras.callbacks.Callback):
    """Logs `val_bleu` = 1.0 for every epoch's weights."""

    def on_epoch_end(self, epoch, logs=None):
        logs["val_bleu"] = 1.0


@pytest.mark.parametrize("average_score,kept", [(1.0, "average"), (0.5, "last")])
def test_average_is_kept_only_when_it_scores_at_least_the_last_weights(
    average_score, kept
):
    calls = []

    def score():
        calls.append(1)
        return average_score

    callback = AverageLastEpochs(3, score_fn=score, monitor="val_bleu")
    model = _fit_plain(_LogScore(), epochs=3, stop_after=3, extra=[callback])
    ends = model.record.epoch_ends
    # The last weights' score comes from the log: only the mean is scored.
    assert len(calls) == 1
    assert callback.kept == kept
    assert callback.scores == {"last": 1.0, "average": average_score}
    assert callback.kept_epochs == (3 if kept == "average" else 1)
    expected = (
        [np.mean(ws, axis=0) for ws in zip(*ends)] if kept == "average" else ends[-1]
    )
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_average_without_a_logged_score_scores_both_weights():
    # A real score (minus the training loss): the last weights of this
    # fit are better than the mean of its first, poorer epochs.
    x = np.random.default_rng(0).normal(size=(8 * BATCHES, 3)).astype("float32")
    models = []

    def score():
        return -float(models[0].evaluate(x, x[:, :2] * 2.0 - 1.0, verbose=0))

    class Hold(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            models.append(self.model)

    callback = AverageLastEpochs(3, score_fn=score)
    model = _fit_plain(Hold(), epochs=3, stop_after=3, extra=[callback])
    assert callback.scores["average"] < callback.scores["last"]
    assert callback.kept == "last"
    for got, want in zip(model.get_weights(), model.record.epoch_ends[-1]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "every,epochs,stop_after,scored",
    [(1, 3, 3, [1, 2, 3]), (2, 5, 5, [1, 2, 4, 5]), (3, 5, 2, [1, 2])],
)
def test_bleu_history_scores_every_few_epochs_and_the_last(
    every, epochs, stop_after, scored
):
    history = BleuHistory(lambda: 7.0, every=every)
    model = _fit_plain(history, epochs, stop_after)
    assert len(model.record.epoch_ends) == stop_after
    assert [epoch for _, epoch, _ in history.points] == scored


def test_bleu_history_refuses_a_bad_interval():
    with pytest.raises(ValueError, match="`every` must be a positive integer"):
        BleuHistory(lambda: 0.0, every=0)


@pytest.mark.parametrize(
    "since,reserve,epochs_run",
    [
        (None, None, 3),  # An hour's budget: every epoch runs.
        (None, lambda: 60.0, 1),  # The reserve fills the budget.
        (-3600.0, None, 1),  # An hour went by before `fit`.
        (3600.0, lambda: 59.0, 3),  # `since` says when the budget began.
    ],
)
def test_time_budget_counts_from_since_and_keeps_the_reserve(
    since, reserve, epochs_run
):
    import time

    since = None if since is None else time.time() + since
    model = _fit_plain(TimeBudget(60.0, since=since, reserve=reserve), 3, 3)
    # Stopped in the first epoch, or not at all (far from the limits).
    assert len(model.record.epoch_ends) == epochs_run


class _CompilingRun(keras.callbacks.Callback):
    """A fake clock moved as a run that compiles moves time: the first
    batch compiles the step, three later batches compile new shapes, and
    the first epoch's end compiles the validation pass and decoding for
    them (half of training's compiling, as `EPOCH_END_COMPILE_SHARE` says)
    plus its 3 s of running; `scale` 2 is a machine twice as slow."""

    STEP, COMPILES, EPOCH_END = 0.5, {0: 20.0, 3: 10.0, 7: 10.0, 12: 10.0}, 3.0

    def __init__(self, scale):
        super().__init__()
        self.now, self.scale, self._epoch = 0.0, scale, 0

    def time(self):
        return self.now

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        compiles = self.COMPILES.get(batch, 0.0) if self._epoch == 0 else 0.0
        self.now += self.scale * (self.STEP + compiles)

    def on_epoch_end(self, epoch, logs=None):
        compiling = 0.5 * sum(self.COMPILES.values()) if epoch == 0 else 0.0
        self.now += self.scale * (compiling + self.EPOCH_END)


@pytest.mark.parametrize("minutes,scale", [(2.0, 1), (4.0, 2)])
def test_time_budget_prices_compiling_before_the_first_epoch_end(
    monkeypatch, minutes, scale
):
    # 100 batches an epoch: the first epoch does not fit in the budget.
    # Without pricing its end the run stops at the budget and then spends
    # the epoch end's 28 s (56 s at scale 2): 9.6% over. Priced from the
    # compiling seen, it stops early enough to hold within 5%.
    from keras_seq import callbacks

    share = callbacks.EPOCH_END_COMPILE_SHARE

    def run(share):
        clock = _CompilingRun(scale)
        monkeypatch.setattr(callbacks, "time", clock)
        monkeypatch.setattr(callbacks, "EPOCH_END_COMPILE_SHARE", share)
        said = []
        budget = TimeBudget(minutes, announce=said.append)
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        x = np.zeros((8 * 100, 3), "float32")
        model.fit(x, x[:, :2], batch_size=8, epochs=3, verbose=0,
                  callbacks=[budget, clock])  # fmt: skip
        return clock.now / (60.0 * minutes), said, budget

    unpriced, _, _ = run(0.0)
    assert unpriced > 1.09
    priced, said, budget = run(share)
    assert priced <= 1.05
    assert budget.compile_seconds() == pytest.approx(scale * 50.0)
    assert said == [
        "compiling the training step; the first batch waits for it",
        f"the first batch took {scale * 20.5:.1f} s, compiling included",
    ]

"""`zoo.recipes.plots`: the learning curves of a fresh and a resumed run."""

import numpy as np
import pytest

from zoo.recipes import plots


@pytest.mark.parametrize("first_epoch", [1, 17])
def test_learning_curves_number_a_resumed_run_from_its_first_epoch(
    tmp_path, monkeypatch, first_epoch
):
    figures = []
    monkeypatch.setattr(plots.plt, "close", figures.append)
    history = {"loss": [3.0, 2.5, 2.2], "val_loss": [3.1, 2.8, 2.7]}
    points = [(1.0 * i, first_epoch + i, 2.0 + i) for i in range(3)]
    path = tmp_path / "curves.png"
    plots.plot_learning_curves(history, points, str(path))
    loss_axis, bleu_axis = figures[0].axes
    for line in loss_axis.get_lines():
        np.testing.assert_array_equal(line.get_xdata(), first_epoch + np.arange(3))
    np.testing.assert_array_equal(bleu_axis.get_lines()[0].get_ydata(), [2, 3, 4])
    assert path.stat().st_size > 1000

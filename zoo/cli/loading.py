"""Loading a model directory named by `--model-dir`."""

from zoo.cli.errors import reported_as_usage
from zoo.recipes import model_dir


def load_model_dir(path):
    """`zoo.recipes.model_dir.load_model_dir`, its refusals as `UsageError`.

    A missing file, an unknown family, a vocabulary that does not match the
    model or a model that is unsafe to load are all about the directory the
    user named.

    Args:
        path: str, the `--model-dir`.

    Returns:
        The dict of `load_model_dir`.
    """
    with reported_as_usage(ValueError):
        return model_dir.load_model_dir(path)

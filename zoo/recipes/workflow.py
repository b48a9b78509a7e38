"""What the commands call: `train`, `evaluate` and `export` a family.

Each step looks the family up in `zoo.recipes.families.FAMILIES` and calls
its `Recipe`'s hooks around the run directory (`zoo.recipes.run_dir`).
"""

import contextlib
import os
import sys
import time

from zoo.recipes import run_dir, runtime
from zoo.recipes.families import FAMILIES, listed
from zoo.recipes.inputs import UsageError, reported_as_usage
from zoo.recipes.recipe import Execution
from zoo.recipes.settings import RuntimeSettings

# The old name of `RuntimeSettings`.
Runtime = RuntimeSettings


def verbose():
    """Keras' `verbose`: a progress bar on a terminal, one line per epoch in a log."""
    return 1 if sys.stdout.isatty() else 2


def announce_resume(output_dir, resumed, epochs):
    """Says that training picks up an interrupted run, and where.

    Raises:
        UsageError: when the interrupted run already finished `epochs`.
    """
    if resumed >= epochs:
        raise UsageError(
            f"--epochs {epochs}: the interrupted run in {output_dir} already "
            f"finished {resumed} epochs; pass a larger --epochs to go on."
        )
    if resumed:
        print(
            f"resuming the interrupted run in {output_dir} after epoch "
            f"{resumed} (of at most {epochs})",
            flush=True,
        )


def train(name, data, output_dir, chosen, *, overwrite=False, machine=None,
          corpus=None):  # fmt: skip
    """Trains family `name` on `data` and writes its run directory.

    The data is read and checked, and `output_dir` claimed
    (`RunDir.claim`), before anything is written; no other run may use the
    directory until this one ends. The recipe trains, scores the test split
    and draws its figures; `RunDir.save` then writes the model and
    `run.json`.

    `run.json` keeps the data by its absolute path and the SHA-256 of its
    bytes (`corpora.data_record`); the settings that make the run resumable
    name it by content alone, so a run resumes from any working directory,
    and data whose content changed is refused before anything is written.

    Args:
        name: str, a key of `FAMILIES`.
        data: str or None, what `--data` names (None: the family's corpus),
            or a list of pairs or texts from Python (`zoo.train`).
        output_dir: str.
        chosen: the family's settings (`Recipe.settings`).
        overwrite: bool, replace a finished run or another run's backup.
        machine: a `RuntimeSettings`, or None for its defaults.
        corpus: the corpus already read, or None to read `data`.

    Returns:
        The recipe's typed result.

    Raises:
        UsageError: for data, a directory or a strategy the user must fix.
    """
    from zoo.recipes import corpora

    recipe = FAMILIES[name]
    if getattr(chosen, "init_from", None):
        from zoo.recipes import importing

        recipe = importing.started_from(recipe, chosen.init_from)
    machine = machine or RuntimeSettings()
    began = machine.began or time.time()
    # A directory that can never hold the run is refused before the data
    # is read and said (claim checks it again, under its lock).
    run_dir.check_writable(output_dir, "--output-dir")
    corpus = corpus or recipe.read_corpus(data, chosen)
    data_record = corpora.data_record(data)
    by_content = dict(data_record)
    if by_content[run_dir.DATA_SHA256]:
        # The same bytes from another place (or from Python) are the same run.
        by_content[run_dir.DATA] = None
    identity = {
        "family": name, **by_content, "precision": machine.precision,
        **chosen.identity(),
    }  # fmt: skip
    run = run_dir.RunDir(output_dir)
    # A run interrupted before the data's fingerprint was kept named a
    # corpus (no fingerprint) or a file, which is not known to be this one.
    legacy = {run_dir.DATA_SHA256: None, **chosen.legacy_identity()}
    resumes = run.claim(
        identity, overwrite, data=corpora.described(data), legacy=legacy
    )
    try:
        resumed = 0
        if resumes:
            from keras_seq.callbacks import finished_epochs

            resumed = finished_epochs(run.backup_dir)
        # A strategy the backend cannot run (mirrored on JAX) is the user's
        # to fix; it is made before any other op.
        with reported_as_usage(ValueError):
            strategy = runtime.make_strategy(machine.strategy)
        if machine.deterministic:
            runtime.make_deterministic(chosen.seed)
        runtime.set_precision(machine.precision)
        announce_resume(output_dir, resumed, chosen.epochs)
        execution = Execution(verbose(), strategy, began)
        result = recipe.train(corpus, run, chosen, execution)
        record = run_record(data_record, chosen, result, resumed)
        run.save(name, result.model, record, recipe.vocabularies)
        return result
    finally:
        run.release()


def run_record(data_record, chosen, result, resumed):
    """What `run.json` keeps of a run beside its family and vocabulary
    fingerprints (`RunDir.save`): the data, preset, seed, `--set`'s
    changes, the result's figures (rounded to 4 places), the parameters and
    the epochs trained in all."""
    record = {**data_record, "preset": chosen.preset, "seed": chosen.seed}
    if chosen.overrides:
        record["overrides"] = chosen.overrides
    if getattr(chosen, "init_from", None):
        record["init_from"] = chosen.init_from
    for key, value in result.record().items():
        record[key] = round(value, 4) if isinstance(value, float) else value
    record["params"] = int(result.model.count_params())
    record["epochs"] = resumed + len(result.history.get("loss", ()))
    return record


def evaluate(trained, data, chosen):
    """The test figures of a loaded run directory on `data`'s test split
    (None: the data it was trained on, `corpora.recorded_data`), rounded to
    4 places.

    Raises:
        UsageError: when `data` is None and the run's data cannot be read
            as it was (moved, changed, or given from Python).
    """
    from zoo.recipes import corpora

    recipe = FAMILIES[trained.family]
    data = data or corpora.recorded_data(trained.run, trained.path)
    # What was read is said on stderr: `evaluate`'s output is its figures.
    with contextlib.redirect_stdout(sys.stderr):
        corpus = recipe.read_corpus(data, chosen)
    figures = recipe.evaluate(trained, corpus, chosen)
    return {k: round(v, 4) for k, v in figures.items()}


def export(trained, export_dir, version):
    """Writes `<export_dir>/<version>/` from a loaded run directory.

    Returns:
        The version's path.

    Raises:
        ValueError: when the family is not served, or the version exists.
    """
    recipe = FAMILIES[trained.family]
    if not recipe.supports("export"):
        raise ValueError(
            f"`export` serves {listed('export')} directories; "
            f"{trained.path} holds a {trained.family}."
        )
    return recipe.export(trained, export_dir, version)


def export_ctranslate2(trained, export_dir, quantization="float32"):
    """Writes a CTranslate2 model directory from a loaded run directory.

    The run's preprocessor is saved beside the model as it was loaded (so a
    directory written before `preprocessor.json` existed exports its
    settings too).

    Returns:
        `export_dir`.

    Raises:
        ValueError: for a family CTranslate2 has no specification for, or
            what `keras_seq.export.export_ctranslate2` refuses.
    """
    import tempfile

    from keras_seq.export.ctranslate2 import export_ctranslate2 as export

    if not FAMILIES[trained.family].supports("ctranslate2"):
        raise ValueError(
            f"CTranslate2 export takes {listed('ctranslate2')} "
            f"directories; {trained.path} holds a {trained.family} (CTranslate2 "
            "has no specification for it)."
        )
    with tempfile.TemporaryDirectory() as preprocessor_dir:
        trained.preprocessor.save(preprocessor_dir)
        return export(
            trained.model, preprocessor_dir, os.fspath(export_dir), quantization
        )

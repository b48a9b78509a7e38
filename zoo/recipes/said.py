"""The lines `train` says about what it chose, shared by the families'
training code; below the family table and the orchestration, importing
neither."""


def announce_vocabularies(learned, asked, kept=False, min_frequency=None):
    """Says the size of each vocabulary against the size asked, and the
    minimum frequency of its word pieces.

    A vocabulary smaller than the size asked was decided by the minimum
    frequency: the training text holds no more word pieces that occur that
    often (`keras_seq.text.train_wordpiece_vocabulary` learns at that
    floor first, and keeps what it learned when it fits).

    Args:
        learned: dict of side (`"source"`, `"target"`, `"text"`) -> the
            tokens (a list, or its size).
        asked: int, `--vocabulary-size`.
        kept: bool, the vocabularies are those of the run being resumed.
        min_frequency: int or None, `--min-frequency` (None: not said).
    """
    sizes = {k: v if isinstance(v, int) else len(v) for k, v in learned.items()}
    words = ", ".join(f"{side} {size:,}" for side, size in sizes.items())
    how = "kept from the interrupted run" if kept else "learned"
    line = f"vocabularies {how}: {words} tokens, of at most {asked:,} asked"
    if kept:
        print(line, flush=True)
        return
    if min_frequency is not None:
        line += f", of word pieces seen at least {min_frequency:,} times"
    if max(sizes.values()) < asked:
        if min_frequency is None:
            line += " (the training text holds no more word pieces)"
        else:
            line += (
                f"; the minimum frequency, not the size asked, decided the "
                f"size: the training text holds no more word pieces seen "
                f"{min_frequency:,} times (a lower --min-frequency learns more)"
            )
    print(line, flush=True)


def announce_model(model, preset, presets, overrides):
    """Says the parameters of the model built against the count its preset
    lists (at the preset's own vocabulary sizes, without `--set`'s
    changes)."""
    line = f"model: {int(model.count_params()):,} parameters"
    entry = presets.get(preset, {})
    if "params" in entry:
        sizes = " / ".join(
            f"{size:,}"
            for key, size in entry["config"].items()
            if key.endswith("vocabulary_size")
        )
        line += (
            f"; preset {preset} lists {entry['params']:,} at vocabularies of {sizes}"
        )
        if overrides:
            changes = ", ".join(f"{k}={v}" for k, v in overrides.items())
            line += f", without {changes}"
    print(line, flush=True)


def announce_result(family, result, chosen, output_dir):
    """Says the lines a finished `train` ends with, on the command line and
    in `zoo.train` alike: the test figures, the recipe's notes, the
    parameters and where the run was saved.

    Args:
        family: str, the family's name.
        result: the recipe's typed result (`summary(chosen)`, `notes`,
            `model`).
        chosen: the recipe's settings of the run.
        output_dir: str, the run directory.
    """
    params = result.model.count_params()
    print(f"{family}: {result.summary(chosen)}; {params:,} parameters")
    for note in result.notes:
        print(note)
    print(f"saved to {output_dir}", flush=True)


def compiling(verbose):
    """What `TimeBudget` says about compiling the training step (a line
    each), or None when training runs silently (`verbose` 0)."""
    if not verbose:
        return None
    return lambda line: print(line, flush=True)

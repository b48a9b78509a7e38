"""The lines `train` says about what it chose, shared by the families'
training code; below the family table and the orchestration, importing
neither."""


def announce_vocabularies(learned, asked, kept=False):
    """Says the size of each vocabulary against the size asked.

    Args:
        learned: dict of side (`"source"`, `"target"`, `"text"`) -> the
            tokens (a list, or its size).
        asked: int, `--vocabulary-size`.
        kept: bool, the vocabularies are those of the run being resumed.
    """
    sizes = {k: v if isinstance(v, int) else len(v) for k, v in learned.items()}
    words = ", ".join(f"{side} {size:,}" for side, size in sizes.items())
    how = "kept from the interrupted run" if kept else "learned"
    line = f"vocabularies {how}: {words} tokens, of at most {asked:,} asked"
    if not kept and max(sizes.values()) < asked:
        line += " (the training text holds no more word pieces)"
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

"""Training a family from Python: `zoo.train`, what `keras-seq train` does,
and `zoo.import_transformers`, what `keras-seq import` does.

`train` takes a file or lists of pairs or texts, runs the recipe through
`zoo.recipes.workflow.train` (the command's own path: the same checks, run
directory, resuming and lines said), and returns the run directory loaded
as `zoo.recipes.model_dir.load_model_dir` loads it.
"""

import os


def train(
    family,
    data,
    output_dir,
    *,
    preset=None,
    recipe=None,
    epochs=None,
    minutes=None,
    seed=None,
    vocabulary_size=None,
    min_frequency=None,
    validation_data=None,
    test_data=None,
    beam_width=None,
    tokenizer=None,
    sentencepiece_model=None,
    subword_sampling=None,
    overwrite=False,
    init_from=None,
    **overrides,
):
    """Trains a model family and writes its run directory, as `keras-seq
    train` does; the trained model, loaded from that directory.

    A translator trains on `(source, target)` pairs, the classifier on
    `(text, class id)` pairs, the language models on texts. Data given
    alone is split as a file is: duplicate pairs dropped, then the unique
    items numbered from 0, n % 20 == 0 to the test split, 1 to validation,
    the rest to training; with `validation_data` and `test_data`, `data`
    is the training split, and each is kept as given. What was read, the
    split, the vocabulary sizes and the parameters are said in one line
    each.

    Args:
        family: str, one of `zoo.recipes.families.FAMILIES`
            (`"translator"`, `"classifier"`, ...).
        data: a file path (`source<TAB>target`, `text<TAB>label`, or one
            text a line), a corpus name (`"trans-de-en"`, ...), or a list
            of pairs or texts.
        output_dir: str or `os.PathLike`, the run directory (an
            interrupted run of the same settings there resumes).
        preset: str or None, a preset of the family's builder (None: the
            recipe's).
        recipe: str or None, translators: a name of
            `zoo.recipes.settings.TRANSLATOR_RECIPES` (`"low-resource"`).
        epochs: int or None, the most epochs.
        minutes: float or None, a training time budget.
        seed: int or None, of every random draw.
        vocabulary_size: int or None, the most WordPiece tokens of each
            vocabulary (smaller when the text holds fewer word pieces).
        min_frequency: int or None, the fewest times a word piece occurs
            in the training text to be learned (None: the recipe's); on a
            small text it, not `vocabulary_size`, decides the vocabulary.
        validation_data: list or None, the validation items; given with
            `test_data`, `data` must be a list too.
        test_data: list or None, the test items.
        beam_width: int or None, translators: beams of the test
            translations.
        tokenizer: str or None, translators: `"wordpiece"` (the default)
            or `"sentencepiece"`, as `--tokenizer`.
        sentencepiece_model: str or None, with `tokenizer="sentencepiece"`:
            `"unigram"` (the default) or `"bpe"`.
        subword_sampling: float in [0, 1) or None, with
            `tokenizer="sentencepiece"`: the sampling smoothing of the
            training batches' segmentations (0: off).
        overwrite: bool, replace a finished run in `output_dir`.
        init_from: str, `os.PathLike` or None, translators: a finished run
            directory (trained, or written by `import_transformers`) to
            start from, keeping its model, vocabularies and tokenizer (no
            `preset`, `recipe`, `vocabulary_size`, `min_frequency` or
            builder argument then).
        **overrides: builder arguments over the preset's, as `--set`
            gives them (`dropout=0.2`).

    Returns:
        A `zoo.recipes.model_dir.TrainedModel`.

    Raises:
        ValueError: for an unknown family, preset or recipe, an option out
            of its bounds, data that cannot be read, or a directory that
            holds another run; before anything is written.
        TypeError: for an option or item of the wrong type.

    Example:

    >>> pairs = [("Ich sehe dich.", "I see you."), ...]  # doctest: +SKIP
    >>> trained = zoo.train(
    ...     "translator", pairs, "runs/mine", preset="tiny", epochs=2
    ... )  # doctest: +SKIP
    >>> trained.translate("Ich sehe dich.")  # doctest: +SKIP
    'i see you.'
    """
    from keras_seq import validation
    from zoo.recipes import model_dir, said, settings, workflow
    from zoo.recipes.families import FAMILIES
    from zoo.recipes.inputs import UsageError

    validation.check_choice(family, "family", tuple(FAMILIES))
    chosen_recipe = FAMILIES[family]
    if recipe is not None and not chosen_recipe.translates:
        raise ValueError(
            f"`recipe` applies to translators; received {recipe!r} for {family}."
        )
    if recipe is not None:
        validation.check_choice(recipe, "recipe", tuple(settings.TRANSLATOR_RECIPES))
    defaults = chosen_recipe.default_settings(recipe)
    if init_from is not None:
        defaults = _started(
            chosen_recipe, defaults, init_from, output_dir,
            preset=preset, recipe=recipe, vocabulary_size=vocabulary_size,
            min_frequency=min_frequency, overrides=overrides,
        )  # fmt: skip
    else:
        validation.check_choice(
            preset or defaults.preset, "preset", tuple(chosen_recipe.presets)
        )
    # The command line's check, naming the arguments instead of its flags.
    tokenizers = {
        "tokenizer": tokenizer, "sentencepiece_model": sentencepiece_model,
        "subword_sampling": subword_sampling,
    }  # fmt: skip
    settings.check_training(
        epochs=epochs, seed=seed, vocabulary_size=vocabulary_size,
        beam_width=beam_width, minutes=minutes, min_frequency=min_frequency,
        **tokenizers,
    )  # fmt: skip
    for name, value in {"beam_width": beam_width, **tokenizers}.items():
        if value is not None and not chosen_recipe.translates:
            raise ValueError(
                f"`{name}` applies to translators; received {value!r} for {family}."
            )
    # A run started from another has no preset of the table (an imported one).
    entry = chosen_recipe.presets.get(preset or defaults.preset, {})
    config = entry.get("config", {})
    settable = sorted(k for k in config if not k.endswith("vocabulary_size"))
    unknown = sorted(set(overrides) - set(settable))
    if unknown:
        raise TypeError(
            f"`train` got unknown arguments {unknown}; builder arguments over "
            f"the preset are {settable}."
        )
    data = _data(chosen_recipe.data_help, data, validation_data, test_data)
    given = {
        "preset": preset, "epochs": epochs, "minutes": minutes, "seed": seed,
        "vocabulary_size": vocabulary_size, "beam_width": beam_width,
        "min_frequency": min_frequency, **tokenizers,
    }  # fmt: skip
    chosen = defaults.replace(
        **{k: v for k, v in given.items() if v is not None}, overrides=overrides
    )
    output_dir = os.fspath(output_dir)
    try:
        result = workflow.train(family, data, output_dir, chosen, overwrite=overwrite)
        said.announce_result(family, result, chosen, output_dir)
        return model_dir.load_model_dir(output_dir)
    except UsageError as error:
        # The command line's refusals, whose messages name the fix.
        raise ValueError(str(error)) from None


def import_transformers(directory, output_dir, overwrite=False):
    """Writes a Marian (OPUS-MT) checkpoint directory as a translator run
    directory, as `keras-seq import DIR --output-dir RUN` does; the model,
    loaded from that directory.

    The checkpoint is read and checked before `output_dir` is created or
    claimed: a wrong `model_type`, missing or truncated weights, or a config
    field the zoo's layers cannot mirror are refused in one line naming it
    (docs/pretrained.md lists them). The run directory holds the model, the
    SentencePiece preprocessor and `run.json` (family `"translator"`, the
    checkpoint's absolute path and the SHA-256 of its `config.json` and
    weights file); every command takes it, and `train(...,
    init_from=output_dir)` fine-tunes it.

    Args:
        directory: str or `os.PathLike`, what `MarianMTModel.save_pretrained`
            and `MarianTokenizer.save_pretrained` wrote (`config.json`,
            `model.safetensors` or `pytorch_model.bin`, `source.spm`,
            `target.spm`, `vocab.json`, and `target_vocab.json` for
            separate vocabularies).
        output_dir: str or `os.PathLike`, the run directory.
        overwrite: bool, replace a finished run in `output_dir`.

    Returns:
        A `zoo.recipes.trained.TrainedModel`.

    Raises:
        ValueError: for a directory that is not a checkpoint the importer
            can map, a missing extra (`keras-seq[pretrained]`), or an
            `output_dir` that holds another run; nothing is written then.

    Example:

    >>> trained = zoo.import_transformers(
    ...     "opus-mt-de-en", "runs/opus-de-en"
    ... )  # doctest: +SKIP
    >>> trained.translate("Guten Morgen.")  # doctest: +SKIP
    'Good morning.'
    """
    from zoo.recipes import importing
    from zoo.recipes.inputs import UsageError

    try:
        return importing.import_transformers(directory, output_dir, overwrite)
    except UsageError as error:
        raise ValueError(str(error)) from None


def _started(family_recipe, defaults, init_from, output_dir, **given):
    """`defaults` starting from the finished run `init_from`
    (`zoo.recipes.importing.starting_point`), at its preset.

    Raises:
        ValueError: for a family that does not translate, an argument the
            kept model contradicts, or a run that is not a finished run of
            the family.
    """
    from zoo.recipes import importing
    from zoo.recipes.inputs import UsageError

    if not family_recipe.translates:
        raise ValueError(
            f"`init_from` applies to translators; received {init_from!r} for "
            f"{family_recipe.name}."
        )
    try:
        importing.refuse_kept(given)
        record, run = importing.starting_point(
            init_from, family_recipe.name, os.fspath(output_dir), flag="`init_from`"
        )
    except UsageError as error:
        raise ValueError(str(error)) from None
    return defaults.replace(init_from=record, preset=run.get("preset"))


def _data(layout, data, validation_data, test_data):
    """`data` as `zoo.recipes.corpora` reads it: a path, a list, or
    `Splits` of three lists (`layout`: what a line of the family's file
    holds, for the messages)."""
    from zoo.recipes import corpora

    items = f"items (as a line of the file holds: {layout})"
    if (validation_data is None) != (test_data is None):
        raise ValueError(
            "`validation_data` and `test_data` go together; received "
            f"{'only validation_data' if test_data is None else 'only test_data'}."
        )
    if isinstance(data, os.PathLike):
        data = os.fspath(data)
    if validation_data is not None:
        if isinstance(data, str) or not hasattr(data, "__iter__"):
            raise TypeError(
                f"`data` must be a list of {items} when `validation_data` is "
                f"given; received {type(data).__name__}."
            )
        return corpora.Splits(data, validation_data, test_data)
    if isinstance(data, str):
        return data
    if isinstance(data, (bytes, dict)) or not hasattr(data, "__iter__"):
        raise TypeError(
            f"`data` must be a file path or a list of {items}; received "
            f"{type(data).__name__}."
        )
    return list(data)

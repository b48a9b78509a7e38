"""Training and evaluating a translator end to end, as the demo does.

The recipe of DESIGN.md "Training": WordPiece vocabularies trained on the
corpus, length-bucketed `tf.data` batches, teacher forcing, label-smoothed
padding-masked cross-entropy, Adam(0.9, 0.98, 1e-9) on the warm-up
schedule. Evaluation decodes with the model's cached `generate` loop and
scores corpus BLEU with sacrebleu.
"""

import json
import os
import time

import keras
import numpy as np
import sacrebleu

import zoo
from keras_seq import text
from keras_seq.callbacks import (
    AverageLastEpochs,
    BleuHistory,
    EmaWeights,
    ShuffleEpoch,
    TimeBudget,
    checkpoint_callbacks,
)
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.metrics import MaskedAccuracy
from keras_seq.schedules import InverseSquareRootWarmup
from keras_seq.validation import check_choice, check_positive_int
from zoo.recipes import runtime
from zoo.recipes.inputs import check_text_list

# The builder of each translator family, and its presets. Only the
# Transformer has a `max_length`; the RNN translator's sequences are
# unbounded, and its batches are cut to `RNN_MAX_LENGTH` tokens.
BUILDERS = {
    "translator": zoo.build_translator,
    "rnn-translator": zoo.build_rnn_translator,
}
PRESETS = {
    "translator": zoo.TRANSLATOR_PRESETS,
    "rnn-translator": zoo.RNN_TRANSLATOR_PRESETS,
}
RNN_MAX_LENGTH = 64


# Named recipes: `train_translator` arguments (and builder overrides) that go
# together. "low-resource" applies the regularisers that matter on a corpus
# of ~16k sentence pairs (Sennrich & Zhang, 2019; Araabi & Monz, 2020):
# heavier dropout and label smoothing, word dropout on both inputs, and many
# epochs stopped by validation BLEU, ending with averaged weights. Two levers
# of those papers are left out on purpose: BPE-dropout needs a BPE model
# (the recipe's WordPiece tokenizers have no sampling mode), and layer drop
# would leave the `small` preset's 2 decoder blocks a single one.
RECIPES = {
    "default": {},
    "low-resource": {
        "dropout": 0.2,
        "label_smoothing": 0.2,
        "token_dropout": 0.1,
        "early_stopping_patience": 15,
        "average_last_epochs": 5,
    },
}


def recipe_arguments(name, **arguments):
    """`train_translator` arguments of recipe `name`, over `arguments`.

    Args:
        name: a key of `RECIPES`.
        **arguments: the caller's arguments; the recipe's values win.

    Returns:
        A dict of keyword arguments for `train_translator`.
    """
    check_choice(name, "recipe", tuple(RECIPES))
    return {**arguments, **RECIPES[name]}


def build_vocabularies(pairs, vocabulary_size, output_dir=None, shared=False):
    """Trains source and target WordPiece vocabularies.

    German and English share names, numbers and many word pieces, so with
    `shared=True` one table learns them once (needed for `tie_embeddings`).

    Args:
        pairs: list of `(source, target)` strings.
        vocabulary_size: int, the largest size of each vocabulary.
        output_dir: str or None. Where to save `source_vocabulary.txt` and
            `target_vocabulary.txt`; nothing is saved when None.
        shared: bool, train one vocabulary on both sides.

    Returns:
        A `(source, target)` pair of token lists (the same list twice when
        `shared`).
    """
    if shared:
        source = text.train_wordpiece_vocabulary(
            [s for s, _ in pairs] + [t for _, t in pairs], vocabulary_size
        )
        target = source
    else:
        source = text.train_wordpiece_vocabulary([s for s, _ in pairs], vocabulary_size)
        target = text.train_wordpiece_vocabulary([t for _, t in pairs], vocabulary_size)
    if output_dir:
        text.save_vocabulary(source, os.path.join(output_dir, "source_vocabulary.txt"))
        text.save_vocabulary(target, os.path.join(output_dir, "target_vocabulary.txt"))
    return source, target


def compile_translator(
    model,
    warmup_steps=800,
    learning_rate_scale=2.0,
    label_smoothing=0.1,
    jit_compile="auto",
    ema_momentum=None,
):
    """Compiles a translator with the recipe's loss, optimizer and metric.

    A Transformer (`model_dim` known) follows the warm-up schedule of
    Vaswani et al.; an RNN translator trains with Adam at a constant
    `1e-3 * learning_rate_scale` and gradients clipped to norm 1, as
    recurrent models usually do.

    Args:
        model: a model of `zoo.build_translator` or `zoo.build_rnn_translator`.
        warmup_steps: int, steps of linear warm-up of the schedule.
        learning_rate_scale: float, multiplies the learning rate.
        label_smoothing: float in [0, 1), of the masked cross-entropy.
        jit_compile: bool or `"auto"`, passed to `model.compile`.
        ema_momentum: float or None. When set (e.g. 0.999), the optimizer
            keeps an exponential moving average of the weights (Polyak
            averaging; see `keras_seq.callbacks.EmaWeights`).

    Returns:
        `model`, compiled.
    """
    ema = {"use_ema": True, "ema_momentum": ema_momentum} if ema_momentum else {}
    model_dim = getattr(model, "model_dim", None)
    if model_dim:
        schedule = InverseSquareRootWarmup(
            model_dim, warmup_steps=warmup_steps, scale=learning_rate_scale
        )
        optimizer = keras.optimizers.Adam(
            schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9, **ema
        )
    else:
        optimizer = keras.optimizers.Adam(
            1e-3 * learning_rate_scale, clipnorm=1.0, **ema
        )
    model.compile(
        optimizer=optimizer,
        loss=MaskedSparseCategoricalCrossentropy(label_smoothing=label_smoothing),
        metrics=[MaskedAccuracy()],
        jit_compile=jit_compile,
    )
    return model


def translate_texts(
    model, preprocessor, texts, batch_size=64, max_new_tokens=None, **generate_kwargs
):
    """Translates Python strings with the model's cached decoding loop.

    `preprocessor.decode_batches` sorts the sentences by length, cuts them
    to its `length_limit` (a `TruncationWarning` says how many) and pads
    each batch to a length bucket, which keeps the number of compiled loops
    small. A sentence with no tokens (empty, blank) translates to "", as
    served models do.

    Args:
        model: a translator with `generate`.
        preprocessor: the model's `keras_seq.text.TranslationPreprocessor`.
        texts: list of str.
        batch_size: int, sentences decoded together.
        max_new_tokens: int or None, default `preprocessor.length_limit - 1`.
        **generate_kwargs: passed to `model.generate` (default greedy; e.g.
            `strategy="beam", beam_width=4`).

    Returns:
        A list of str, one translation per text, in order.

    Raises:
        TypeError: when `texts` is one str, not a list of str.
    """
    texts = check_text_list(texts)
    if not texts:
        return []
    max_new_tokens = max_new_tokens or preprocessor.length_limit - 1
    outputs = [""] * len(texts)
    for positions, batch, blank in preprocessor.decode_batches(texts, batch_size):
        generated = model.generate(
            batch, max_new_tokens=max_new_tokens, **generate_kwargs
        )
        decoded = preprocessor.detokenize(np.asarray(generated))
        for row, i in enumerate(positions):
            outputs[i] = "" if blank[row] else decoded[row]
    return outputs


def tokenize_to_lists(tokenizer, texts):
    """Tokenizes Python strings into lists of int token ids.

    Args:
        tokenizer: a keras-hub tokenizer (ragged or dense output).
        texts: iterable of str.

    Returns:
        A list of lists of int, one per text.
    """
    rows = tokenizer(list(texts))
    if hasattr(rows, "to_list"):
        rows = rows.to_list()
    return [[int(t) for t in row] for row in rows]


def corpus_bleu(hypotheses, references, lowercase=True):
    """Corpus BLEU of sacrebleu (13a tokenization) on detokenized text.

    Args:
        hypotheses: list of str.
        references: list of str, one reference per hypothesis.
        lowercase: bool, compare lowercased text.

    Returns:
        The BLEU score, a float in [0, 100].
    """
    return sacrebleu.corpus_bleu(hypotheses, [references], lowercase=lowercase).score


def train_translator(
    corpus,
    output_dir,
    preset="small",
    epochs=30,
    minutes=None,
    seed=0,
    vocabulary_size=8000,
    batch_tokens=2048,
    max_length=None,
    warmup_steps=300,
    learning_rate_scale=0.7,
    label_smoothing=0.1,
    bleu_sample=300,
    jit_compile=False,
    shared_vocabulary=False,
    ema_momentum=None,
    average_last_epochs=1,
    token_dropout=0.0,
    early_stopping_patience=None,
    family="translator",
    verbose=1,
    strategy=None,
    **overrides,
):
    """Trains a translator on a `TranslationCorpus`.

    Vocabularies, checkpoints (a killed run resumes) and `history.csv` are
    written to `output_dir`. The validation BLEU of each epoch is recorded
    on the first `bleu_sample` validation pairs.

    Args:
        corpus: a `keras_seq.data.TranslationCorpus`.
        output_dir: str, created if missing.
        preset: str, a preset of the family's builder.
        epochs: int, the most epochs to train.
        minutes: float or None, a wall-clock budget (`TimeBudget`).
        seed: int, seeds the weights and the shuffling.
        vocabulary_size: int, of each WordPiece vocabulary.
        batch_tokens: int, tokens in a length-bucketed batch.
        max_length: int, the longest sequence, in tokens, or None: the
            preset's (`RNN_MAX_LENGTH` for the RNN translator).
        warmup_steps: int, of the learning-rate schedule.
        learning_rate_scale: float, multiplies the learning rate.
        label_smoothing: float, of the cross-entropy.
        bleu_sample: int, validation pairs translated after each epoch.
        jit_compile: bool. XLA compiles one training graph per length
            bucket, a cost that short CPU runs do not win back, so it is
            off by default.
        shared_vocabulary: bool, one vocabulary for both sides; a model
            that ties its embeddings (`tie_embeddings`, as the `book`,
            `base` and `big` presets do) always learns one.
        ema_momentum: float or None. Train with a moving average of the
            weights, which the validation BLEU, the checkpoints and the
            returned model then hold (`EmaWeights`).
        average_last_epochs: int. Return the mean of the weights of the last
            that many epoch ends (`AverageLastEpochs`); 1 keeps the last
            weights. The validation BLEU shows each epoch's own weights.
        token_dropout: float, word dropout of the training batches (see
            `keras_seq.text.make_translation_dataset`).
        early_stopping_patience: int or None. Stop once the validation BLEU
            has not risen for that many epochs (`keras.callbacks.EarlyStopping`
            on `val_bleu`); None trains all `epochs`.
        family: `"translator"` (`zoo.build_translator`) or
            `"rnn-translator"` (`zoo.build_rnn_translator`).
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None (`runtime.make_strategy`).
        **overrides: builder arguments that override the preset.

    Returns:
        A dict with `model`, `preprocessor` (a
        `keras_seq.text.TranslationPreprocessor`, also saved in
        `output_dir`), `source_tokenizer`, `target_tokenizer`,
        `history` (Keras' dict), `bleu_history` (`(minutes, epoch, BLEU)`
        points), `train_minutes`, `vocabulary_minutes` and
        `averaged_epochs`.
    """
    check_positive_int(average_last_epochs, "average_last_epochs")
    check_positive_int(early_stopping_patience, "early_stopping_patience", True)
    check_choice(family, "family", tuple(BUILDERS))
    config = {**PRESETS[family].get(preset, {}).get("config", {}), **overrides}
    if max_length is None:
        max_length = config.get("max_length", RNN_MAX_LENGTH)
    # One embedding table serves both sides only if both sides share one
    # vocabulary (Press & Wolf, 2017; Vaswani et al., 2017, Sec. 3.4).
    shared_vocabulary = shared_vocabulary or bool(config.get("tie_embeddings"))
    os.makedirs(output_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    started = time.time()
    if verbose:
        print(
            f"training the WordPiece vocabularies on {len(corpus.train):,} pairs...",
            flush=True,
        )
    vocabularies = build_vocabularies(
        corpus.train, vocabulary_size, shared=shared_vocabulary
    )
    source_tokenizer, target_tokenizer = map(text.make_tokenizer, vocabularies)
    vocabulary_minutes = (time.time() - started) / 60
    if family == "translator":
        overrides["max_length"] = max_length
    with runtime.scope(strategy):
        model = BUILDERS[family](
            preset,
            source_vocabulary_size=len(vocabularies[0]),
            target_vocabulary_size=len(vocabularies[1]),
            **overrides,
        )
        compile_translator(
            model,
            warmup_steps,
            learning_rate_scale,
            label_smoothing,
            jit_compile,
            ema_momentum=ema_momentum,
        )
    # The RNN translator has no `max_length` of its own; its batches are cut
    # to the last bucket, `max_length` here.
    preprocessor = text.TranslationPreprocessor(
        source_tokenizer,
        target_tokenizer,
        max_length=getattr(model, "max_length", None),
        bucket_boundaries=text.default_bucket_boundaries(max_length),
    )
    preprocessor.save(output_dir)
    fitted = _fit_translator(
        model, preprocessor, corpus, output_dir, batch_tokens,
        seed=seed, epochs=epochs, minutes=minutes, bleu_sample=bleu_sample,
        ema=bool(ema_momentum), average_last_epochs=average_last_epochs,
        verbose=verbose, strategy=strategy, token_dropout=token_dropout,
        early_stopping_patience=early_stopping_patience,
    )  # fmt: skip
    return {
        "model": model,
        "preprocessor": preprocessor,
        "source_tokenizer": source_tokenizer,
        "target_tokenizer": target_tokenizer,
        "vocabulary_minutes": vocabulary_minutes,
        **fitted,
    }


def _fit_translator(
    model, preprocessor, corpus, output_dir, batch_tokens, *,
    seed, epochs, minutes, bleu_sample, ema, average_last_epochs, verbose,
    strategy, token_dropout=0.0, early_stopping_patience=None,
):  # fmt: skip
    """`model.fit` with the recipe's callbacks; the fit's figures."""
    shuffle_epoch = ShuffleEpoch()
    train_data = preprocessor.dataset(
        corpus.train, batch_tokens=batch_tokens, shuffle=True, seed=seed,
        training=True, epoch=shuffle_epoch.epoch, token_dropout=token_dropout,
    )  # fmt: skip
    validation_data = preprocessor.dataset(corpus.validation, batch_tokens=batch_tokens)
    sample = corpus.validation[:bleu_sample]

    def validation_bleu():
        hypotheses = translate_texts(model, preprocessor, [s for s, _ in sample])
        return corpus_bleu(hypotheses, [t for _, t in sample])

    budget = TimeBudget(minutes)
    bleu_history = BleuHistory(validation_bleu)
    averaging = None
    if average_last_epochs > 1:
        # Its copies live beside the backup, so a resumed run averages the
        # same epochs.
        averaging = AverageLastEpochs(
            average_last_epochs, os.path.join(output_dir, "average")
        )
    callbacks = [
        budget,
        *([averaging] if averaging else []),
        # The averaged weights, when kept, are the ones scored and saved.
        *([EmaWeights()] if ema else []),
        bleu_history,
        *(
            [
                keras.callbacks.EarlyStopping(
                    "val_bleu", patience=early_stopping_patience, mode="max"
                )
            ]
            if early_stopping_patience
            else []
        ),
        shuffle_epoch,
        *checkpoint_callbacks(output_dir),
    ]
    train_data = runtime.for_workers(train_data, strategy)
    validation_data = runtime.for_workers(validation_data, strategy, shard=False)
    runtime.build_for_strategy(model, strategy, train_data)
    history = model.fit(
        train_data,
        validation_data=validation_data,
        epochs=epochs,
        callbacks=callbacks,
        verbose=verbose,
        shuffle=False,  # The dataset shuffles itself.
    )
    return {
        "history": history.history,
        "bleu_history": bleu_history.points,
        "train_minutes": budget.elapsed_minutes(),
        "averaged_epochs": averaging.averaged_epochs if averaging else 1,
    }


def evaluate_translator(model, preprocessor, pairs, **generate_kwargs):
    """Scores a translator's translations of `pairs` with corpus BLEU.

    Args:
        model: a translator with `generate`.
        preprocessor: the model's `keras_seq.text.TranslationPreprocessor`.
        pairs: list of `(source, reference)` strings.
        **generate_kwargs: passed to `model.generate` (default greedy).

    Returns:
        A dict with `bleu` (lowercase), `bleu_cased` and `hypotheses`.
    """
    hypotheses = translate_texts(
        model, preprocessor, [s for s, _ in pairs], **generate_kwargs
    )
    references = [t for _, t in pairs]
    return {
        "bleu": corpus_bleu(hypotheses, references, lowercase=True),
        "bleu_cased": corpus_bleu(hypotheses, references, lowercase=False),
        "hypotheses": hypotheses,
    }


def write_metrics(path, metrics):
    """Writes `metrics` as indented UTF-8 JSON.

    Args:
        path: str, the file to write.
        metrics: a JSON-serializable dict.
    """
    with open(path, "w", encoding="utf-8") as f:
        json.dump(metrics, f, indent=2, ensure_ascii=False)

"""Training and evaluating a translator end to end, as the demo does.

The recipe of DESIGN.md "Training": WordPiece vocabularies trained on the
corpus, length-bucketed `tf.data` batches, teacher forcing, label-smoothed
padding-masked cross-entropy, Adam(0.9, 0.98, 1e-9) on the warm-up
schedule, XLA. Evaluation decodes with the cached greedy loop and scores
corpus BLEU with sacrebleu.
"""

import json
import os
import time

import keras
import numpy as np

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
from keras_seq.validation import check_positive_int
from zoo.recipes import runtime

# Sources are padded to one of these lengths for decoding, so the compiled
# generation loop exists in a handful of shapes, whatever the batch.
DECODE_BUCKETS = (8, 16, 24, 32, 48, 64, 96, 128)


def build_vocabularies(pairs, vocabulary_size, output_dir=None, shared=False):
    """Source and target WordPiece vocabularies, saved if `output_dir`.

    With `shared=True` one vocabulary is trained on both sides (needed for
    `tie_embeddings`); German and English share names, numbers and many
    word pieces, so one table learns them once.
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
    """Compile with the recipe: smoothed masked loss, warm-up Adam, XLA.

    A Transformer (`model_dim` known) follows the warm-up schedule of
    Vaswani et al.; an RNN translator trains with Adam at a constant
    `1e-3 * learning_rate_scale` and gradients clipped to norm 1, as
    recurrent models usually do. `ema_momentum` (e.g. 0.999) keeps an
    exponential moving average of the weights in the optimizer (Polyak
    averaging; see `keras_seq.callbacks.EmaWeights`).
    """
    ema = {"use_ema": True, "ema_momentum": ema_momentum} if ema_momentum else {}
    model_dim = getattr(model, "model_dim", None)
    if model_dim:
        optimizer = keras.optimizers.Adam(
            InverseSquareRootWarmup(
                model_dim, warmup_steps=warmup_steps, scale=learning_rate_scale
            ),
            beta_1=0.9,
            beta_2=0.98,
            epsilon=1e-9,
            **ema,
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
    model,
    source_tokenizer,
    target_tokenizer,
    texts,
    batch_size=64,
    max_new_tokens=None,
    **generate_kwargs,
):
    """Translate Python strings with the model's cached decoding loop.

    `generate_kwargs` go to `model.generate` (default greedy; e.g.
    `strategy="beam", beam_width=4`).

    Sentences are sorted by length and each batch is padded to a bucket
    length, which keeps the number of compiled loops small. A sentence with
    no tokens (empty, blank) translates to "".
    """
    if not texts:
        return []
    limit = getattr(model, "max_length", DECODE_BUCKETS[-1])
    max_new_tokens = max_new_tokens or limit - 1
    ids = [row[:limit] for row in tokenize_to_lists(source_tokenizer, texts)]
    order = np.argsort([len(row) for row in ids], kind="stable")
    outputs = [None] * len(texts)
    for start in range(0, len(texts), batch_size):
        chosen = order[start : start + batch_size]
        longest = max(1, max(len(ids[i]) for i in chosen))
        width = min(next((b for b in DECODE_BUCKETS if b >= longest), limit), limit)
        batch = np.zeros((batch_size, width), "int32")
        for row, i in enumerate(chosen):
            batch[row, : len(ids[i])] = ids[i]
        batch[len(chosen) :, 0] = text.UNK_ID  # Filler rows keep shapes fixed.
        generated = model.generate(
            batch, max_new_tokens=max_new_tokens, **generate_kwargs
        )
        decoded = text.detokenize(target_tokenizer, np.asarray(generated))
        for row, i in enumerate(chosen):
            # A sentence with no tokens translates to "", as served models do.
            outputs[i] = decoded[row] if ids[i] else ""
    return outputs


def tokenize_to_lists(tokenizer, texts):
    """Token ids of Python strings as lists of ints, whatever keras-hub returns."""
    rows = tokenizer(list(texts))
    if hasattr(rows, "to_list"):
        rows = rows.to_list()
    return [[int(t) for t in row] for row in rows]


def corpus_bleu(hypotheses, references, lowercase=True):
    """sacrebleu corpus BLEU (13a tokenization) on detokenized text."""
    import sacrebleu

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
    max_length=64,
    warmup_steps=300,
    learning_rate_scale=0.7,
    label_smoothing=0.1,
    bleu_sample=300,
    # XLA compiles one training graph per length bucket, which took 3 of the
    # first 4 minutes on 2 CPU cores; graph mode without XLA ran 40 s epochs
    # against 67-84 s, so short CPU runs train without it.
    jit_compile=False,
    shared_vocabulary=False,
    ema_momentum=None,
    average_last_epochs=1,
    family="translator",
    verbose=1,
    strategy=None,
    **overrides,
):
    """Train a translator on a `TranslationCorpus` and evaluate it.

    `family` is `"translator"` (`zoo.build_translator`) or
    `"rnn-translator"` (`zoo.build_rnn_translator`, whose sequences are not
    bounded by a `max_length`). `ema_momentum` (e.g. 0.999) trains with a
    moving average of the weights, which is what the validation BLEU, the
    checkpoints and the returned model then hold (`EmaWeights`).
    `average_last_epochs` (e.g. 5; 1, the default, keeps the last weights)
    returns the model with the mean of the weights of the last that many
    epoch ends (`AverageLastEpochs`); the validation BLEU curve shows the
    raw weights of each epoch.

    Returns:
        A dict with the model, tokenizers, history, BLEU history and timings.
    """
    check_positive_int(average_last_epochs, "average_last_epochs")
    os.makedirs(output_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    started = time.time()
    source_vocab, target_vocab = build_vocabularies(
        corpus.train, vocabulary_size, output_dir, shared=shared_vocabulary
    )
    source_tokenizer = text.make_tokenizer(source_vocab)
    target_tokenizer = text.make_tokenizer(target_vocab)
    vocabulary_minutes = (time.time() - started) / 60

    import zoo

    if family == "translator":
        overrides["max_length"] = max_length
        build = zoo.build_translator
    elif family == "rnn-translator":
        build = zoo.build_rnn_translator
    else:
        raise ValueError(
            f"`family` must be 'translator' or 'rnn-translator'; received {family!r}."
        )
    with runtime.scope(strategy):
        model = build(
            preset,
            source_vocabulary_size=len(source_vocab),
            target_vocabulary_size=len(target_vocab),
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
    shuffle_epoch = ShuffleEpoch()
    train_data = text.make_translation_dataset(
        corpus.train,
        source_tokenizer,
        target_tokenizer,
        max_length,
        batch_tokens=batch_tokens,
        shuffle=True,
        seed=seed,
        training=True,
        epoch=shuffle_epoch.epoch,
    )
    validation_data = text.make_translation_dataset(
        corpus.validation,
        source_tokenizer,
        target_tokenizer,
        max_length,
        batch_tokens=batch_tokens,
    )
    sample = corpus.validation[:bleu_sample]

    def validation_bleu():
        hypotheses = translate_texts(
            model, source_tokenizer, target_tokenizer, [s for s, _ in sample]
        )
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
        *([EmaWeights()] if ema_momentum else []),
        bleu_history,
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
    train_minutes = budget.elapsed_minutes()
    return {
        "model": model,
        "source_tokenizer": source_tokenizer,
        "target_tokenizer": target_tokenizer,
        "history": history.history,
        "bleu_history": bleu_history.points,
        "train_minutes": train_minutes,
        "vocabulary_minutes": vocabulary_minutes,
        "averaged_epochs": averaging.averaged_epochs if averaging else 1,
    }


def evaluate_translator(
    model, source_tokenizer, target_tokenizer, pairs, **generate_kwargs
):
    """Test-split BLEU (lowercase and cased) and the hypotheses."""
    hypotheses = translate_texts(
        model,
        source_tokenizer,
        target_tokenizer,
        [s for s, _ in pairs],
        **generate_kwargs,
    )
    references = [t for _, t in pairs]
    return {
        "bleu": corpus_bleu(hypotheses, references, lowercase=True),
        "bleu_cased": corpus_bleu(hypotheses, references, lowercase=False),
        "hypotheses": hypotheses,
    }


def write_metrics(path, metrics):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(metrics, f, indent=2, ensure_ascii=False)

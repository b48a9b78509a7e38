"""What a trained text model does with Python strings: translate, classify,
sample a continuation. `TrainedModel` and the recipes' training (its
validation BLEU, the language model's sample) both call these; each goes
through the model's own `keras_seq.text` preprocessor."""

import numpy as np

from zoo.recipes.inputs import check_text_list
from zoo.recipes.settings import GenerateSettings

# The sampler's k when none is named: `generate`'s, and the sample printed
# after training a language model.
SAMPLE_TOP_K = GenerateSettings.top_k


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


def classify_texts(model, preprocessor, texts, batch_size=64):
    """Class probabilities of Python strings.

    The texts become ids by `preprocessor.batches` (cut and padded to its
    `max_length`; a `TruncationWarning` says how many were cut), as in
    training and in the exported graph.

    Args:
        model: a model of `zoo.build_classifier`.
        preprocessor: its `keras_seq.text.ClassificationPreprocessor`.
        texts: list of str.
        batch_size: int.

    Returns:
        A float numpy array (N, C) whose rows sum to 1.

    Raises:
        TypeError: when `texts` is one str, not a list of str.
    """
    import keras

    texts = check_text_list(texts)
    logits = model.predict(preprocessor.batches(texts, batch_size), verbose=0)
    return keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))


def generate_text(model, preprocessor, prompt, max_new_tokens, top_k, top_p, seed):
    """Samples a continuation of one `prompt` (top-k, or top-p).

    The prompt becomes ids by `preprocessor.prompt_ids`, the rule of the
    exported graph too: it keeps its last `max_length - max_new_tokens`
    tokens (a `TruncationWarning` says so) and a blank prompt starts from
    `[START]`. Training lines end with [END]; sampling runs past it, so the
    text may span several lines, joined by " / ".

    Args:
        model: a model of `zoo.build_language_model`.
        preprocessor: its `keras_seq.text.LanguageModelPreprocessor`.
        prompt: str.
        max_new_tokens: int, or None for all the room the prompt leaves.
        top_k, top_p, seed: of the sampler.

    Returns:
        str, the prompt and its continuation.
    """
    from keras_seq import text

    ids = preprocessor.prompt_ids([prompt], max_new_tokens)[0].tolist()
    room = preprocessor.max_length - len(ids)
    new = model.generate(
        np.asarray([ids], "int32"),
        max_new_tokens=max_new_tokens or room,
        strategy="sample",
        top_k=top_k,
        top_p=top_p,
        seed=seed,
        end_token_id=None,
    )
    stream = ids + np.asarray(new)[0].tolist()
    lines, line = [], []
    for token in stream + [text.END_ID]:
        if token == text.END_ID:
            lines.append(line)
            line = []
        elif token != text.START_ID:
            line.append(token)
    decoded = preprocessor.detokenize([row or [0] for row in lines])
    return " / ".join(line for line in decoded if line)

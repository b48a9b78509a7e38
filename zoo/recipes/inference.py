"""What a trained text model does with Python strings: translate, classify,
sample a continuation. `TrainedModel` and the recipes' training (its
validation BLEU, the language model's sample) both call these; each goes
through the model's own `keras_seq.text` preprocessor."""

import typing

import numpy as np

from keras_seq.text import END_ID, START_ID
from keras_seq.validation import check_target_prefix
from zoo.recipes.inputs import check_text_list
from zoo.recipes.settings import GenerateSettings

# The sampler's k when none is named: `generate`'s, and the sample printed
# after training a language model.
SAMPLE_TOP_K = GenerateSettings.top_k


class Scored(typing.NamedTuple):
    """An output sentence, its tokens (the end token last, where written)
    and each token's log-probability given the source and the tokens
    before it (natural log)."""

    text: str
    tokens: list
    log_probs: list

    @property
    def log_prob(self):
        """The sentence's log-probability: its tokens' summed."""
        return float(sum(self.log_probs))


def _scored(text, ids, scores, vocabulary, end_token_id):
    """`Scored` of one decoded row: its ids up to its end token, kept."""
    ids = [int(i) for i in ids]
    length = ids.index(end_token_id) + 1 if end_token_id in ids else len(ids)
    return Scored(
        text,
        [vocabulary[i] for i in ids[:length]],
        [float(v) for v in scores[:length]],
    )


def _prefix_rows(preprocessor, prefixes, positions):
    """The target ids each batch row starts with: the tokens of its text's
    `target_prefix`; the filler rows after the real ones force nothing."""
    import tensorflow as tf

    rows = preprocessor.tokenize_target(
        tf.constant([prefixes[i] for i in positions], tf.string)
    ).to_list()
    return rows


def translate_texts(
    model,
    preprocessor,
    texts,
    batch_size=64,
    max_new_tokens=None,
    target_prefix=None,
    return_scores=False,
    **generate_kwargs,
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
        target_prefix: None, or a list of str, one per text: the start of
            its translation, tokenized by the target tokenizer and forced
            (`generate`'s `prefix_ids`; "" forces nothing).
        return_scores: bool, return `Scored` translations (each token's
            log-probability) instead of str.
        **generate_kwargs: passed to `model.generate` (default greedy; e.g.
            `strategy="beam", beam_width=4`).

    Returns:
        A list of str (of `Scored` with `return_scores`), one translation
        per text, in order.

    Raises:
        TypeError: when `texts` is one str, not a list of str.
    """
    texts = check_text_list(texts)
    if not texts:
        return []
    target_prefix = check_target_prefix(target_prefix, len(texts))
    max_new_tokens = max_new_tokens or preprocessor.length_limit - 1
    vocabulary = preprocessor.target_tokenizer.get_vocabulary()
    end_token_id = generate_kwargs.get("end_token_id", END_ID)
    outputs = [""] * len(texts)
    for positions, batch, blank in preprocessor.decode_batches(texts, batch_size):
        options = dict(generate_kwargs)
        if target_prefix is not None:
            rows = _prefix_rows(preprocessor, target_prefix, positions)
            options["prefix_ids"] = rows + [[]] * (len(batch) - len(rows))
        generated = model.generate(
            batch,
            max_new_tokens=max_new_tokens,
            return_scores=return_scores,
            **options,
        )
        scores = None
        if return_scores:
            generated, scores = (np.asarray(part) for part in generated)
        generated = np.asarray(generated)
        decoded = preprocessor.detokenize(generated)
        for row, i in enumerate(positions):
            text = "" if blank[row] else decoded[row]
            if return_scores:
                # A blank source answers the end token, scored 0, as
                # `generate` answers a row without tokens.
                text = _scored(
                    text, generated[row], scores[row], vocabulary, end_token_id
                )
            outputs[i] = text
    return outputs


def score_texts(model, preprocessor, sources, targets, batch_size=64):
    """Teacher-forced log-probabilities of given translations, per token.

    Each target is tokenized by the target tokenizer, `[END]` appended, and
    scored by `model.score` after its source (the distribution greedy
    decoding chooses from: the translation the model writes itself scores
    what `translate_texts(..., return_scores=True)` gave it). A target
    longer than the model can write (`max_length - 1` tokens, its end
    token included) is cut to fit (a `TruncationWarning` says how many).

    Args:
        model: a translator with `score`.
        preprocessor: its `keras_seq.text.TranslationPreprocessor`.
        sources, targets: lists of str of equal length.
        batch_size: int, pairs scored together.

    Returns:
        A list of `Scored`, one per pair, `text` the target as given.

    Raises:
        TypeError: when `sources` or `targets` is not a list of str.
        ValueError: when their lengths differ.
    """
    import tensorflow as tf

    from keras_seq.text.preprocessor import warn_cut

    sources = check_text_list(sources, "sources")
    targets = check_text_list(targets, "targets")
    if len(sources) != len(targets):
        raise ValueError(
            f"`targets` must hold one str per source ({len(sources)}); "
            f"received {len(targets)}."
        )
    if not sources:
        return []
    limit = getattr(model, "max_length", None) or preprocessor.length_limit
    room = limit - 1  # `generate`'s most new tokens, the end token's included.
    rows = preprocessor.tokenize_target(tf.constant(targets, tf.string)).to_list()
    warn_cut(
        sum(len(row) >= room for row in rows),
        len(rows),
        "targets",
        f"{room - 1} tokens a target may hold before [END]",
    )
    rows = [row[: room - 1] + [END_ID] for row in rows]
    # Widths from the buckets, so that few compiled loops exist.
    widths = sorted({w for w in preprocessor.bucket_boundaries if w < room} | {room})
    vocabulary = preprocessor.target_tokenizer.get_vocabulary()
    outputs = [None] * len(sources)
    for positions, batch, _ in preprocessor.decode_batches(sources, batch_size):
        longest = max(len(rows[i]) for i in positions)
        width = next(w for w in widths if w >= longest)
        target_ids = np.zeros((len(batch), width), "int32")
        for row, i in enumerate(positions):
            target_ids[row, : len(rows[i])] = rows[i]
        scores = np.asarray(model.score(batch, target_ids))
        for row, i in enumerate(positions):
            length = len(rows[i])
            outputs[i] = Scored(
                targets[i],
                [vocabulary[t] for t in rows[i]],
                [float(v) for v in scores[row, :length]],
            )
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


def generate_text(
    model,
    preprocessor,
    prompt,
    max_new_tokens,
    top_k,
    top_p,
    seed,
    return_scores=False,
    **controls,
):
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
        return_scores: bool, return `Scored` (the text, and each new
            token and its log-probability) instead of str.
        **controls: `model.generate`'s decoding controls
            (`no_repeat_ngram_size`, `repetition_penalty`,
            `suppress_token_ids`).

    Returns:
        str (or `Scored`), the prompt and its continuation.
    """
    ids, sampling = _sampling(preprocessor, prompt, max_new_tokens, top_k, top_p, seed)
    new = model.generate(
        **sampling,
        return_scores=return_scores,
        **controls,
    )
    scores = None
    if return_scores:
        new, scores = (np.asarray(part)[0] for part in new)
    new_ids = np.asarray(new).reshape(-1).tolist()
    text = _joined_lines(preprocessor, ids + new_ids)
    if not return_scores:
        return text
    vocabulary = preprocessor.tokenizer.get_vocabulary()
    return Scored(text, [vocabulary[i] for i in new_ids], [float(v) for v in scores])


def _sampling(preprocessor, prompt, max_new_tokens, top_k, top_p, seed):
    """The prompt's ids (`preprocessor.prompt_ids`: its last tokens, as the
    exported graph keeps them) and the model's sampling arguments: past
    the end token, into all the room the prompt leaves by default."""
    ids = preprocessor.prompt_ids([prompt], max_new_tokens)[0].tolist()
    room = preprocessor.max_length - len(ids)
    return ids, {
        "token_ids": np.asarray([ids], "int32"),
        "max_new_tokens": max_new_tokens or room,
        "strategy": "sample",
        "top_k": top_k,
        "top_p": top_p,
        "seed": seed,
        "end_token_id": None,
    }


def _joined_lines(preprocessor, ids):
    """A language model's ids as text: the lines its `[END]` tokens end,
    detokenized and joined by " / "."""
    lines, line = [], []
    for token in list(ids) + [END_ID]:
        if token == END_ID:
            lines.append(line)
            line = []
        elif token != START_ID:
            line.append(token)
    decoded = preprocessor.detokenize([row or [0] for row in lines])
    return " / ".join(line for line in decoded if line)


def stream_translation(
    model, preprocessor, text, max_new_tokens=None, target_prefix=None, **controls
):
    """The greedy translation of one str in pieces as the model writes it
    (`model.stream`); the pieces joined are `translate_texts([text],
    max_new_tokens=..., target_prefix=[...], **controls)[0]`.

    The source is cut and padded as `translate_texts` does it (a
    `TruncationWarning` says so), now rather than when the first piece is
    read, and a blank source streams nothing.

    Args:
        model: a translator with `stream`.
        preprocessor: its `keras_seq.text.TranslationPreprocessor`.
        text: str.
        max_new_tokens: int or None, default `preprocessor.length_limit - 1`.
        target_prefix: None or a str, forced first (and streamed).
        **controls: `model.stream`'s decoding controls.

    Returns:
        An iterator of str (`text_pieces`).
    """
    ((_, batch, blank),) = preprocessor.decode_batches([text], 1)
    if blank[0]:
        return iter(())
    if target_prefix:
        controls["prefix_ids"] = _prefix_rows(preprocessor, [target_prefix], [0])
    max_new_tokens = max_new_tokens or preprocessor.length_limit - 1
    steps = model.stream(batch, max_new_tokens, **controls)

    def detokenize(ids):
        return preprocessor.detokenize(np.asarray([ids], "int32"))[0]

    return text_pieces(_texts_so_far(steps, detokenize, END_ID))


def stream_text(
    model, preprocessor, prompt, max_new_tokens, top_k, top_p, seed, **controls
):
    """`generate_text`'s prompt and continuation in pieces as the model
    samples it (`model.stream`); the pieces joined are `generate_text`'s
    text for the same arguments."""
    ids, sampling = _sampling(preprocessor, prompt, max_new_tokens, top_k, top_p, seed)
    steps = model.stream(**sampling, **controls)

    def continued(new):
        return _joined_lines(preprocessor, ids + new)

    return text_pieces(_texts_so_far(steps, continued, None, start=ids))


def _texts_so_far(steps, decode, end_token_id, start=()):
    """The text after each new id of `steps` (of one row), by `decode` of
    the ids so far; it ends before `end_token_id`."""
    ids = []
    if start:
        yield decode(ids)
    for column in steps:
        token = int(column[0])
        if token == end_token_id:
            return
        ids.append(token)
        yield decode(ids)


def text_pieces(texts):
    """The pieces of a text that grows a token at a time, each as soon as
    it is final.

    A piece ends where a word does: the last word is held back until the
    next one starts, because detokenizing may glue a suffix piece (`##s`)
    or punctuation onto it. The pieces joined are the last text.

    Args:
        texts: an iterable of str, the whole text after each token.

    Returns:
        An iterator of str.
    """
    emitted, text = "", ""
    for text in texts:
        cut = text.rfind(" ")
        if cut > len(emitted) and text.startswith(emitted):
            yield text[len(emitted) : cut]
            emitted = text[:cut]
    if text.startswith(emitted) and len(text) > len(emitted):
        yield text[len(emitted) :]

"""A CTranslate2 export in use: sentences in, translations out, no TensorFlow.

`CTranslate2Model` loads a directory written by
`keras_seq.export.ctranslate2.export_ctranslate2` (`keras-seq export
--format ctranslate2`) and translates with `ctranslate2.Translator`, greedy
or with beams, tokenizing with `keras_seq.text.portable_tokenizer`. Neither
this module nor those it imports load TensorFlow or Keras, nor does the
command line that calls it (`keras-seq translate --ctranslate2 DIR`).

It decodes as `TrainedModel.translate` and `model.generate` do, with their
defaults (`keras_seq.defaults`): 4 beams and GNMT's length penalty 0.6,
and never the reserved tokens a translator does not write
(`defaults.TRANSLATION_UNSAMPLABLE_TOKENS`, CTranslate2's
`suppress_sequences`). CTranslate2's own length penalty divides by
`length ** alpha`, not GNMT's `((5 + length) / 6) ** alpha`; so it
searches at penalty 0, where both rank by the summed log-probabilities
and keep the same best hypothesis, and its n-best list is ranked here by
GNMT's penalty, as `model.beam_search` ranks its beams at the end.

A damaged directory (a file missing, empty or cut short, a vocabulary of
another model) is refused with a `ValueError` of one line that names the
file, before CTranslate2 reads it where it can be checked.
"""

import json
import os
import sys

import numpy as np

from keras_seq import defaults
from keras_seq.text.portable_tokenizer import PortableTokenizer
from keras_seq.text.vocabulary import END_ID, RESERVED_TOKENS
from keras_seq.validation import (
    check_control_values,
    check_finite,
    check_int_in,
    check_target_prefix,
    check_token_names,
)
from zoo.serving.rest import DEFAULT_SIGNATURE, LoadError, RequestError, ServableBase

EXPORT_FILE = "keras_seq.json"
# What CTranslate2 reads: its configuration, its weights, and the
# vocabularies it saved (one shared file when source and target agree).
CONFIG_FILE = "config.json"
MODEL_FILE = "model.bin"
_EXPORT_AGAIN = "export the run again (keras-seq export --format ctranslate2)"


def _require_ctranslate2():
    try:
        import ctranslate2
    except ImportError:
        raise ImportError(
            'CTranslate2 decoding needs the "ctranslate2" extra: '
            'pip install "keras-seq[ctranslate2]".'
        ) from None
    return ctranslate2


def _read_settings(directory):
    """`keras_seq.json`, checked: a translator's, with its lengths."""
    path = os.path.join(directory, EXPORT_FILE)
    try:
        with open(path, encoding="utf-8") as file:
            settings = json.load(file)
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or error
        raise ValueError(
            f"{directory} is not a CTranslate2 export of keras-seq ({path}: {reason})"
        ) from None
    if not isinstance(settings, dict):
        raise ValueError(f"{path} must hold a JSON object; {_EXPORT_AGAIN}.")
    if settings.get("family") != "translator":
        raise ValueError(
            f"{directory} holds a {settings.get('family')}; "
            "CTranslate2Model translates with a translator export."
        )
    for key in ("max_length", "max_decoding_length"):
        value = settings.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"{path} must give `{key}` as an int >= 1; it has {value!r}; "
                f"{_EXPORT_AGAIN}."
            )
    return settings


def _check_model_files(directory):
    """Refuses a missing or unreadable `config.json`, or a missing or empty
    `model.bin`, naming it: CTranslate2 answers them with a stack and a
    message that names neither the file nor the fix."""
    path = os.path.join(directory, CONFIG_FILE)
    try:
        with open(path, encoding="utf-8") as file:
            config = json.load(file)
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror}; {_EXPORT_AGAIN}.") from None
    except ValueError as error:
        raise ValueError(f"{path} is not JSON ({error}); {_EXPORT_AGAIN}.") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path} must hold a JSON object; {_EXPORT_AGAIN}.")
    path = os.path.join(directory, MODEL_FILE)
    if not os.path.isfile(path):
        raise ValueError(f"{path}: No such file; {_EXPORT_AGAIN}.")
    if os.path.getsize(path) == 0:
        raise ValueError(f"{path} is empty (0 bytes); {_EXPORT_AGAIN}.")


def _tokenizer(directory, side):
    """The side's `PortableTokenizer`; a missing file is one `ValueError`."""
    try:
        return PortableTokenizer.from_directory(directory, side)
    except OSError as error:
        name = error.filename or directory
        raise ValueError(f"{name}: {error.strerror}; {_EXPORT_AGAIN}.") from None


def _check_vocabulary(directory, side, tokenizer):
    """Refuses a tokenizer vocabulary that is not the one CTranslate2 saved
    with the weights: another model's would map every id to the wrong
    token, or to none (a larger model's ids)."""
    path = os.path.join(directory, f"{side}_vocabulary.txt")
    for name in (f"{side}_vocabulary.json", "shared_vocabulary.json"):
        saved = os.path.join(directory, name)
        if os.path.isfile(saved):
            break
    else:
        return  # CTranslate2 reads the text vocabulary itself.
    try:
        with open(saved, encoding="utf-8") as file:
            tokens = json.load(file)
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or error
        raise ValueError(f"{saved}: {reason}; {_EXPORT_AGAIN}.") from None
    ours = list(tokenizer.vocabulary)
    if tokens == ours:
        return
    if not isinstance(tokens, list) or len(tokens) != len(ours):
        size = len(tokens) if isinstance(tokens, list) else "no list of"
        raise ValueError(
            f"{path} holds {len(ours)} tokens, but {MODEL_FILE} was exported with "
            f"{size} ({name}): a vocabulary of another model; {_EXPORT_AGAIN}."
        )
    first = next(i for i, (a, b) in enumerate(zip(tokens, ours)) if a != b)
    raise ValueError(
        f"{path} is not the vocabulary {MODEL_FILE} was exported with: token "
        f"{first} is {ours[first]!r} there and {tokens[first]!r} in {name}; "
        f"{_EXPORT_AGAIN}."
    )


def _first_line(error):
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def gnmt_penalty(length, alpha):
    """GNMT's length penalty `((5 + length) / 6) ** alpha` (Wu et al.,
    2016), by which `model.beam_search` divides a hypothesis's summed
    log-probability."""
    return ((5.0 + length) / 6.0) ** alpha


class CTranslate2Model:
    """A translator exported to CTranslate2, with its tokenizers.

    Args:
        directory: the export directory.
        device: `"cpu"` (or `"cuda"` where CTranslate2 has it).
        compute_type: `"default"` keeps the saved quantization; `"int8"`,
            `"float32"`, ... convert when loading.
        inter_threads: batches CTranslate2 translates at once (0: its
            default).
        intra_threads: threads of one batch (0: CTranslate2's default, one
            per core). One by default: with more threads than free cores
            CTranslate2's workers wait on each other, up to 30x slower on a
            shared two-core machine (see benchmarks/README.md); give more
            where cores are free.

    Raises:
        ValueError: when the directory is not a translator export, or is
            damaged (one line naming the file: missing, empty or cut short,
            or a vocabulary of another model).
        ImportError: without the `ctranslate2` extra.

    Example:

    >>> model = CTranslate2Model("exports/ct2")  # doctest: +SKIP
    >>> model.translate(["Ich bin hier."])  # doctest: +SKIP
    ['i am here.']
    """

    def __init__(
        self,
        directory,
        device="cpu",
        compute_type="default",
        inter_threads=1,
        intra_threads=1,
    ):
        ctranslate2 = _require_ctranslate2()
        directory = os.fspath(directory)
        self.settings = _read_settings(directory)
        self.directory = directory
        self.source_tokenizer = _tokenizer(directory, "source")
        self.target_tokenizer = _tokenizer(directory, "target")
        for side in ("source", "target"):
            _check_vocabulary(directory, side, getattr(self, f"{side}_tokenizer"))
        _check_model_files(directory)
        try:
            self.translator = ctranslate2.Translator(
                directory,
                device=device,
                compute_type=compute_type,
                inter_threads=inter_threads,
                intra_threads=intra_threads,
            )
        except (RuntimeError, ValueError) as error:
            raise ValueError(
                f"{os.path.join(directory, MODEL_FILE)} does not load "
                f"(CTranslate2 {ctranslate2.__version__}: {_first_line(error)}); "
                f"{_EXPORT_AGAIN}."
            ) from None
        vocabulary = self.target_tokenizer.vocabulary
        self._target_ids = {token: i for i, token in enumerate(vocabulary)}
        self._end_token = RESERVED_TOKENS[END_ID]

    def target_token_ids(self, tokens):
        """Target tokens (str) -> their ids."""
        return [self._target_ids[token] for token in tokens]

    @property
    def max_decoding_length(self):
        """The most tokens a translation has, as `model.generate`'s default."""
        return int(self.settings["max_decoding_length"])

    def decoding_options(self, beam_width, num_hypotheses=1):
        """`translate_batch`'s options for `model.generate`'s decoding.

        The length penalty is 0 here: the n-best list is ranked by GNMT's
        afterwards (see the module docstring).
        """
        return {
            "beam_size": beam_width,
            "num_hypotheses": num_hypotheses,
            "length_penalty": 0.0,
            "max_decoding_length": self.max_decoding_length,
            # `model.generate` may end at the first step; CTranslate2's
            # default of 1 forbids that.
            "min_decoding_length": 0,
            "suppress_sequences": [
                [token] for token in defaults.TRANSLATION_UNSAMPLABLE_TOKENS
            ],
        }

    def control_options(
        self,
        target_prefixes=None,
        min_new_tokens=None,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress=None,
        suppress_unknown=False,
    ):
        """`translate_batch`'s options for `TrainedModel.translate`'s
        decoding controls, checked by the same checks.

        Args:
            target_prefixes: None, or per sentence the str its translation
                starts with (`target_prefix`, "" forcing nothing).
            min_new_tokens: None or an int (`min_decoding_length`).
            no_repeat_ngram_size, repetition_penalty: None or CTranslate2's.
            suppress: None or a list of target tokens never written
                (added to `suppress_sequences`).
            suppress_unknown: bool (`disable_unk`).

        Returns:
            A dict of `translate_batch` options (empty for no control).

        Raises:
            TypeError, ValueError: naming the argument.
        """
        check_control_values(
            self.max_decoding_length,
            min_new_tokens,
            no_repeat_ngram_size,
            repetition_penalty,
            suppress_unknown,
        )
        vocabulary = self.target_tokenizer.vocabulary
        suppressed = check_token_names(suppress, "suppress", vocabulary)
        options = {}
        if target_prefixes is not None:
            rows = self.target_tokenizer.tokenize(list(target_prefixes))
            options["target_prefix"] = self.target_tokenizer.id_to_token_rows(rows)
        if min_new_tokens:
            options["min_decoding_length"] = min_new_tokens
        if no_repeat_ngram_size:
            options["no_repeat_ngram_size"] = no_repeat_ngram_size
        if repetition_penalty is not None:
            options["repetition_penalty"] = float(repetition_penalty)
        if suppressed:
            options["suppress_sequences"] = [[vocabulary[i]] for i in suppressed]
        if suppress_unknown:
            options["disable_unk"] = True
        return options

    def search(
        self,
        rows,
        beam_width=defaults.BEAM_WIDTH,
        length_penalty=defaults.LENGTH_PENALTY,
        max_batch_size=0,
        controls=None,
    ):
        """Source id rows -> every beam's `(ids, score)`, best first.

        Ranked as `model.beam_search` ranks its beams: by the summed
        log-probability divided by `gnmt_penalty(length, length_penalty)`,
        the length counting the end token where there is one.

        Args:
            rows: lists of source ids, without padding.
            beam_width: int >= 1, 1 for greedy decoding.
            length_penalty: float alpha of GNMT's penalty.
            max_batch_size: int, CTranslate2's sub-batch size (0: one batch).
            controls: None, or `control_options`' dict, over the decoding's
                options (suppressed tokens added to the reserved ones).

        Returns:
            Per row, a list of `beam_width` pairs (fewer where CTranslate2
            finds fewer): the target ids (no start or end token) and the
            length-normalised score.
        """
        check_int_in(beam_width, "beam_width", 1, allow_none=False)
        check_finite(length_penalty, "length_penalty")
        options = self.decoding_options(beam_width, beam_width)
        controls = dict(controls or {})
        options["suppress_sequences"] += controls.pop("suppress_sequences", [])
        options.update(controls)
        results = self.translator.translate_batch(
            self.source_tokenizer.id_to_token_rows(rows),
            max_batch_size=max_batch_size,
            return_scores=True,
            return_end_token=True,
            **options,
        )
        ranked = []
        for result in results:
            hypotheses = []
            for tokens, score in zip(result.hypotheses, result.scores):
                ids = [self._target_ids[token] for token in tokens]
                length = max(len(ids), 1)
                if tokens and tokens[-1] == self._end_token:
                    ids.pop()
                hypotheses.append((ids, score / gnmt_penalty(length, length_penalty)))
            # Stable: equal scores keep CTranslate2's order.
            hypotheses.sort(key=lambda hypothesis: -hypothesis[1])
            ranked.append(hypotheses)
        return ranked

    def translate_ids(
        self,
        rows,
        beam_width=1,
        length_penalty=defaults.LENGTH_PENALTY,
        num_hypotheses=1,
        max_batch_size=0,
    ):
        """Source id rows -> target id rows (the best, or n-best lists).

        Args:
            rows: lists of source ids, without padding.
            beam_width: int, 1 (the default, as `model.generate`'s greedy
                strategy) for greedy decoding.
            length_penalty: float alpha of GNMT's penalty, as
                `model.beam_search`'s (see `search`).
            num_hypotheses: int, hypotheses kept per sentence.
            max_batch_size: int, CTranslate2's sub-batch size (0: one batch).

        Returns:
            A list of id lists (no start or end token); with
            `num_hypotheses > 1`, a list of such lists per sentence.
        """
        if isinstance(beam_width, bool) or not isinstance(beam_width, int):
            raise TypeError(f"`beam_width` must be an int; received {beam_width!r}.")
        if beam_width < 1 or not 1 <= num_hypotheses <= beam_width:
            raise ValueError(
                "`beam_width` must be >= 1 and `num_hypotheses` in [1, beam_width]; "
                f"received {beam_width} and {num_hypotheses}."
            )
        ranked = self.search(rows, beam_width, length_penalty, max_batch_size)
        best = [[ids for ids, _ in row[:num_hypotheses]] for row in ranked]
        return [b[0] for b in best] if num_hypotheses == 1 else best

    def translate(
        self,
        sentences,
        beam_width=defaults.BEAM_WIDTH,
        length_penalty=defaults.LENGTH_PENALTY,
        batch_size=32,
        *,
        target_prefix=None,
        **controls,
    ):
        """Sentences -> translations, as `TrainedModel.translate` (the same
        defaults: `keras_seq.defaults.BEAM_WIDTH` beams, GNMT's
        `LENGTH_PENALTY`; the same decoding controls, as CTranslate2's
        options: see `control_options`).

        A sentence without tokens translates to an empty string; sources
        longer than the model's `max_length` are cut to it (`truncated`
        says which).

        Args:
            target_prefix: None, or a str (for every sentence) or a list of
                str (one per sentence).
            **controls: `min_new_tokens`, `no_repeat_ngram_size`,
                `repetition_penalty`, `suppress`, `suppress_unknown`.
        """
        sentences = list(sentences)
        target_prefix = check_target_prefix(target_prefix, len(sentences))
        rows, self.truncated = self.source_tokenizer.encode(sentences)
        outputs = [""] * len(rows)
        filled = [i for i, row in enumerate(rows) if row]
        prefixes = None
        if target_prefix is not None:
            prefixes = [target_prefix[i] for i in filled]
        options = self.control_options(prefixes, **controls)
        if filled:
            ranked = self.search(
                [rows[i] for i in filled],
                beam_width,
                length_penalty,
                batch_size,
                controls=options,
            )
            ids = [row[0][0] for row in ranked]
            for i, text in zip(filled, self.target_tokenizer.detokenize(ids)):
                outputs[i] = text
        return outputs

    def stream(self, sentence, max_new_tokens=None, *, target_prefix=None, **controls):
        """Yields the greedy translation of one sentence in pieces, as
        CTranslate2 writes its tokens (`generate_tokens`); the pieces joined
        are `translate(sentence, beam_width=1, ...)`.

        A piece ends at a word boundary (`zoo.recipes.inference.
        text_pieces`), as `TrainedModel.stream`'s.

        Args:
            sentence: str.
            max_new_tokens: int or None (the export's most tokens).
            target_prefix: None or a str, forced first (and yielded).
            **controls: as `translate`'s.

        Returns:
            An iterator of str pieces.

        Raises:
            TypeError, ValueError: for an argument out of range, before
                any decoding.
        """
        if not isinstance(sentence, str):
            raise TypeError(
                f"`sentence` must be a str; received {type(sentence).__name__}."
            )
        limit = self.max_decoding_length
        check_int_in(max_new_tokens, "max_new_tokens", 1, limit, "max_decoding_length")
        prefixes = check_target_prefix(target_prefix, 1)
        options = self.control_options(prefixes, **controls)
        (row,), truncated = self.source_tokenizer.encode([sentence])
        self.truncated = truncated
        if not row:
            return iter(())
        decoding = self.decoding_options(1)
        for greedy_only in ("beam_size", "num_hypotheses", "length_penalty"):
            del decoding[greedy_only]
        decoding["suppress_sequences"] += options.pop("suppress_sequences", [])
        decoding.update(options, max_decoding_length=max_new_tokens or limit)
        if "target_prefix" in decoding:
            decoding["target_prefix"] = decoding["target_prefix"][0]
        return self._pieces(row, decoding)

    def _pieces(self, row, decoding):
        """`stream`'s pieces (`inference.text_pieces`) of the text after
        each of CTranslate2's tokens."""
        from zoo.recipes.inference import text_pieces

        def texts():
            ids = []
            for step in self.translator.generate_tokens(
                self.source_tokenizer.id_to_token(row), **decoding
            ):
                if step.token == self._end_token:
                    return
                ids.append(step.token_id)
                yield self.target_tokenizer.detokenize([ids])[0]

        return text_pieces(texts())

    def score(self, sources, targets, batch_size=32):
        """The log-probability of each target token after its source, as
        `TrainedModel.score` (`[END]` appended; CTranslate2's `score_batch`,
        which rules out no id: see docs/generation-and-serving.md).

        Args:
            sources, targets: lists of str of equal length.
            batch_size: int, CTranslate2's sub-batch size.

        Returns:
            A list of `zoo.recipes.inference.Scored`, `text` the target.

        Raises:
            ValueError: when the lists differ in length.
        """
        from zoo.recipes.inference import Scored

        sources, targets = list(sources), list(targets)
        if len(sources) != len(targets):
            raise ValueError(
                f"`targets` must hold one str per source ({len(sources)}); "
                f"received {len(targets)}."
            )
        check_int_in(batch_size, "batch_size", 1, allow_none=False)
        if not sources:
            return []
        source_rows, self.truncated = self.source_tokenizer.encode(sources)
        for index, row in enumerate(source_rows):
            if not row:
                # `score_batch` answers 0 for every token after an empty
                # source: a certainty the model never gave.
                raise ValueError(
                    f"`sources[{index}]` has no tokens; CTranslate2 scores no "
                    "translation of an empty source."
                )
        room = self.max_decoding_length
        target_rows = [
            row[: room - 1] for row in self.target_tokenizer.tokenize(targets)
        ]
        results = self.translator.score_batch(
            self.source_tokenizer.id_to_token_rows(source_rows),
            self.target_tokenizer.id_to_token_rows(target_rows),
            max_batch_size=batch_size,
        )
        return [
            Scored(target, list(result.tokens), [float(v) for v in result.log_probs])
            for target, result in zip(targets, results)
        ]


class _DType:
    """A signature's dtype, named and converted as `tf.DType` does."""

    def __init__(self, name, as_numpy_dtype, tf_name):
        self.name = name
        self.as_numpy_dtype = as_numpy_dtype
        self.is_integer = as_numpy_dtype is not object and np.issubdtype(
            as_numpy_dtype, np.integer
        )
        self.tf_name = tf_name


class _Spec:
    def __init__(self, dtype, rank):
        self.dtype = dtype
        self.shape = [None] * rank


_STRING = _DType("string", object, "DT_STRING")
_FLOAT = _DType("float32", np.float32, "DT_FLOAT")
_INT = _DType("int32", np.int32, "DT_INT32")


class _TextSignature:
    """Inputs (B,) (strings: `sentences`, or more; or of `input_specs`) ->
    named outputs, as the SavedModel's; `defaults` as its
    `signature_defaults.json`."""

    def __init__(
        self, name, function, outputs, inputs=("sentences",), input_specs=None,
        defaults=None,
    ):  # fmt: skip
        self.name = name
        self.function = function
        self.inputs = {input_name: _Spec(_STRING, 1) for input_name in inputs}
        self.inputs.update(input_specs or {})
        self.output_specs = outputs
        self.outputs = sorted(outputs)
        self.defaults = dict(defaults or {})

    @property
    def takes_text(self):
        """True for a signature of one string input (the page uses these)."""
        return len(self.inputs) == 1

    def __call__(self, arrays):
        values = []
        for name, spec in self.inputs.items():
            if spec.dtype is _STRING:
                values.append([v.decode("utf-8", "replace") for v in arrays[name]])
            else:
                values.append(arrays[name].tolist())
        return self.function(*values)

    def warm_up_arrays(self):
        arrays = {}
        for name, spec in self.inputs.items():
            value = self.defaults.get(name, b"warm up")
            if isinstance(value, str):
                value = value.encode()  # As a request's strings arrive.
            arrays[name] = np.array([value], dtype=spec.dtype.as_numpy_dtype)
        return arrays

    def signature_def(self):
        """The signature as TF Serving's metadata shows a SignatureDef."""

        def tensor(name, spec):
            dims = [{"size": "-1"} for _ in spec.shape]
            return {
                "name": name,
                "dtype": spec.dtype.tf_name,
                "tensor_shape": {"dim": dims},
            }

        return {
            "inputs": {n: tensor(n, spec) for n, spec in self.inputs.items()},
            "outputs": {n: tensor(n, spec) for n, spec in self.output_specs.items()},
            "method_name": "tensorflow/serving/predict",
        }


class CTranslate2Servable(ServableBase):
    """A CTranslate2 translator export as `keras-seq serve` serves it.

    Its signatures are the SavedModel's text ones: `serving_default`
    (`sentences` -> `translations`, greedy), `beam_search` (`sentences`
    -> `translations` (B, n) and `scores` (B, n), best first, each score
    the summed log-probability divided by GNMT's length penalty, as the
    SavedModel's), `score` and `translate_with_controls` (greedy under
    each sentence's prefix, minimum length and repetition penalty).

    Args:
        path: the export directory; version: int, the version served.
        beam_width: beams of `beam_search`, which returns them all.
        length_penalty: GNMT's alpha of `beam_search`.

    Raises:
        LoadError: when the directory is not a translator export, or is
            damaged (one line naming the file).
    """

    def __init__(
        self,
        path,
        version,
        beam_width=defaults.BEAM_WIDTH,
        length_penalty=defaults.LENGTH_PENALTY,
    ):
        try:
            self.model = CTranslate2Model(path)
        except (ValueError, ImportError) as error:
            raise LoadError(str(error)) from None
        self.path = path
        self.version = version
        self.beam_width = beam_width
        self.length_penalty = length_penalty
        greedy = _TextSignature(
            DEFAULT_SIGNATURE, self._greedy, {"translations": _Spec(_STRING, 1)}
        )
        beam = _TextSignature(
            "beam_search",
            self._beams,
            {"translations": _Spec(_STRING, 2), "scores": _Spec(_FLOAT, 2)},
        )
        score = _TextSignature(
            "score",
            self._score,
            {
                "log_prob": _Spec(_FLOAT, 1),
                "token_log_probs": _Spec(_FLOAT, 2),
                "target_ids": _Spec(_INT, 2),
            },
            inputs=("sentences", "targets"),
        )
        with_controls = _TextSignature(
            "translate_with_controls",
            self._with_controls,
            {"translations": _Spec(_STRING, 1)},
            inputs=("sentences", "target_prefix"),
            input_specs={
                "min_new_tokens": _Spec(_INT, 1),
                "repetition_penalty": _Spec(_FLOAT, 1),
            },
            defaults=defaults.CONTROL_INPUT_DEFAULTS,
        )
        self.signatures = {s.name: s for s in (beam, greedy, score, with_controls)}

    def _greedy(self, texts):
        outputs = self.model.translate(texts, beam_width=1)
        return {"translations": np.array([t.encode() for t in outputs], object)}

    def _with_controls(self, sentences, prefixes, minimums, penalties):
        """As the SavedModel's `translate_with_controls`: greedy, each
        sentence under its own controls. CTranslate2 takes one value of an
        option per batch, so the rows are translated in groups of equal
        values."""
        sizes = {len(sentences), len(prefixes), len(minimums), len(penalties)}
        if len(sizes) != 1:
            raise RequestError(400, "each input must hold one value per sentence")
        outputs = [b""] * len(sentences)
        groups = {}
        for i, key in enumerate(zip(minimums, penalties)):
            groups.setdefault(key, []).append(i)
        for (minimum, penalty), rows in groups.items():
            try:
                texts = self.model.translate(
                    [sentences[i] for i in rows],
                    beam_width=1,
                    target_prefix=[prefixes[i] for i in rows],
                    min_new_tokens=minimum,
                    # 1 changes nothing; CTranslate2 then runs its plain loop.
                    repetition_penalty=None if penalty == 1.0 else penalty,
                )
            except (TypeError, ValueError) as error:
                raise RequestError(400, str(error)) from None
            for i, text in zip(rows, texts):
                outputs[i] = text.encode()
        return {"translations": np.array(outputs, object)}

    def stream(self, sentence, target_prefix=None):
        """The pieces of `sentence`'s greedy translation, as they come
        (`keras-seq serve`'s `:stream`)."""
        return self.model.stream(sentence, target_prefix=target_prefix)

    def _score(self, sentences, targets):
        """As the SavedModel's `score`: (B, M) per token, M the model's
        most new tokens, 0 at padding."""
        if len(sentences) != len(targets):
            raise RequestError(
                400,
                f"`targets` must hold one string per sentence ({len(sentences)}); "
                f"received {len(targets)}.",
            )
        width = self.model.max_decoding_length
        try:
            scored = self.model.score(sentences, targets)
        except ValueError as error:
            raise RequestError(400, str(error)) from None
        token_scores = np.zeros((len(scored), width), np.float32)
        ids = np.zeros((len(scored), width), np.int32)
        for row, result in enumerate(scored):
            token_scores[row, : len(result.log_probs)] = result.log_probs
            ids[row, : len(result.tokens)] = self.model.target_token_ids(result.tokens)
        return {
            "log_prob": token_scores.sum(axis=1),
            "token_log_probs": token_scores,
            "target_ids": ids,
        }

    def _beams(self, texts):
        n = self.beam_width
        rows, _ = self.model.source_tokenizer.encode(texts)
        translations = np.full((len(rows), n), b"", object)
        scores = np.zeros((len(rows), n), np.float32)
        filled = [i for i, row in enumerate(rows) if row]
        if filled:
            ranked = self.model.search(
                [rows[i] for i in filled], n, self.length_penalty
            )
            detokenize = self.model.target_tokenizer.detokenize
            for i, hypotheses in zip(filled, ranked):
                outputs = detokenize([ids for ids, _ in hypotheses])
                for j, (text, (_, score)) in enumerate(zip(outputs, hypotheses)):
                    translations[i, j] = text.encode()
                    scores[i, j] = score
        return {"translations": translations, "scores": scores}


def _read_lines(texts):
    if texts:
        return list(texts)
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"stdin is not UTF-8 (byte {error.start})") from None
    return text.splitlines()


def add_translate_arguments(parser):
    """The flags `keras-seq translate --ctranslate2` reads."""
    parser.add_argument(
        "--ctranslate2",
        default=None,
        metavar="DIR",
        help="a CTranslate2 export (keras-seq export --format ctranslate2); "
        "runs without TensorFlow",
    )


def say_truncated(model, total):
    """The command line's note of how many sources `model` cut (a
    `TruncationWarning` would import TensorFlow's text pipeline)."""
    cut = sum(model.truncated)
    if cut:
        print(
            f"keras-seq: note: {cut} of {total} sentences are longer than "
            f"the model's max_length ({model.settings['max_length']} tokens); "
            "each was cut to it.",
            file=sys.stderr,
        )


def translate_command(
    directory,
    texts,
    beam_width=defaults.BEAM_WIDTH,
    length_penalty=defaults.LENGTH_PENALTY,
    flags=None,
    stream=False,
    **controls,
):
    """Prints one translation per sentence; returns the exit status.

    Args:
        flags: dict, an argument's name -> the flag the user typed, for the
            messages of the controls' checks.
        stream: bool, print each sentence's greedy translation as its words
            come (`CTranslate2Model.stream`).
        **controls: of `CTranslate2Model.translate`.
    """
    try:
        model = CTranslate2Model(directory)
    except (ValueError, ImportError) as error:
        print(f"keras-seq: --ctranslate2 {directory}: {error}", file=sys.stderr)
        return 1
    # Only the option checks speak in flags: an error of the translation
    # itself is not the user's flag and keeps its traceback.
    try:
        check_int_in(beam_width, "beam_width", 1, allow_none=False)
        check_finite(length_penalty, "length_penalty")
        model.control_options(
            **{k: v for k, v in controls.items() if k != "target_prefix"}
        )
    except (ValueError, TypeError) as error:
        message = str(error)
        for name, flag in (flags or {}).items():
            message = message.replace(f"`{name}`", flag)
        print(f"keras-seq: {message}", file=sys.stderr)
        return 1
    try:
        lines = _read_lines(texts)
    except ValueError as error:
        print(f"keras-seq: {error}", file=sys.stderr)
        return 1
    if stream:
        for line in lines:
            for piece in model.stream(line, **controls):
                print(piece, end="", flush=True)
            print(flush=True)
        return 0
    outputs = model.translate(
        lines, beam_width=beam_width, length_penalty=length_penalty, **controls
    )
    say_truncated(model, len(outputs))
    for output in outputs:
        print(output)
    return 0


def serve_command(args):
    """`keras-seq serve --ctranslate2 DIR`: serves until SIGTERM; the status."""
    from zoo import serving
    from zoo.serving import flags

    path = os.path.normpath(args.ctranslate2)
    name = args.model_name or os.path.basename(os.path.abspath(path)) or "model"
    try:
        return serving.serve(
            path,
            1,
            name,
            log=lambda line: print(line, flush=True),
            **flags.server_options(args),
            servable_class=CTranslate2Servable,
        )
    except ValueError as error:
        print(f"keras-seq: {flags.usage_message(error)}", file=sys.stderr)
    except LoadError as error:
        print(f"keras-seq: --ctranslate2 {args.ctranslate2}: {error}", file=sys.stderr)
    except OSError as error:
        reason = error.strerror or str(error)
        print(
            f"keras-seq: {flags.address(args)}: cannot listen there ({reason})",
            file=sys.stderr,
        )
    finally:
        sys.stdout.flush()
    return 1

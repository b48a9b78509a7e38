"""A CTranslate2 export in use: sentences in, translations out, no TensorFlow.

`CTranslate2Model` loads a directory written by
`keras_seq.export.ctranslate2.export_ctranslate2` (`keras-seq export
--format ctranslate2`) and translates with `ctranslate2.Translator`, greedy
or with beams, tokenizing with `keras_seq.text.portable_tokenizer`. Neither
this module nor those it imports load TensorFlow or Keras, nor does the
command line that calls it (`keras-seq translate --ctranslate2 DIR`).

Beam scores differ from `model.generate`'s in one way: CTranslate2 divides a
hypothesis's log-probability by `length ** alpha`, `model.generate` by
GNMT's `((5 + length) / 6) ** alpha`. At `length_penalty=0` both rank by
the summed log-probabilities, and the two give the same n-best lists.
"""

import json
import os
import sys

import numpy as np

from keras_seq import defaults
from keras_seq.text.portable_tokenizer import PortableTokenizer
from zoo.serving.rest import DEFAULT_SIGNATURE, LoadError, ServableBase

EXPORT_FILE = "keras_seq.json"


def _require_ctranslate2():
    try:
        import ctranslate2
    except ImportError:
        raise ImportError(
            'CTranslate2 decoding needs the "ctranslate2" extra: '
            'pip install "keras-seq[ctranslate2]".'
        ) from None
    return ctranslate2


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
        ValueError: when the directory is not a translator export.
        ImportError: without the `ctranslate2` extra.

    Example:

    >>> model = CTranslate2Model("exports/ct2")  # doctest: +SKIP
    >>> model.translate(["Ich bin hier."], beam_width=4)  # doctest: +SKIP
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
        path = os.path.join(directory, EXPORT_FILE)
        try:
            with open(path, encoding="utf-8") as file:
                self.settings = json.load(file)
        except (OSError, ValueError) as error:
            raise ValueError(
                f"{directory} is not a CTranslate2 export of keras-seq "
                f"({path}: {error})"
            ) from None
        if self.settings.get("family") != "translator":
            raise ValueError(
                f"{directory} holds a {self.settings.get('family')}; "
                "CTranslate2Model translates with a translator export."
            )
        self.directory = directory
        self.source_tokenizer = PortableTokenizer.from_directory(directory, "source")
        self.target_tokenizer = PortableTokenizer.from_directory(directory, "target")
        self.translator = ctranslate2.Translator(
            directory,
            device=device,
            compute_type=compute_type,
            inter_threads=inter_threads,
            intra_threads=intra_threads,
        )

    @property
    def max_decoding_length(self):
        """The most tokens a translation has, as `model.generate`'s default."""
        return int(self.settings["max_decoding_length"])

    def decoding_options(self, beam_width, length_penalty, num_hypotheses=1):
        """`translate_batch`'s options for `model.generate`'s decoding."""
        return {
            "beam_size": beam_width,
            "num_hypotheses": num_hypotheses,
            "length_penalty": float(length_penalty),
            "max_decoding_length": self.max_decoding_length,
            # `model.generate` may end at the first step; CTranslate2's
            # default of 1 forbids that.
            "min_decoding_length": 0,
        }

    def translate_ids(
        self,
        rows,
        beam_width=1,
        length_penalty=0.0,
        num_hypotheses=1,
        max_batch_size=0,
    ):
        """Source id rows -> target id rows (the best, or n-best lists).

        Args:
            rows: lists of source ids, without padding.
            beam_width: int, 1 for greedy decoding.
            length_penalty: float alpha; CTranslate2 divides scores by
                `length ** alpha` (see the module docstring).
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
        target = self.target_tokenizer
        results = self.translator.translate_batch(
            self.source_tokenizer.id_to_token_rows(rows),
            max_batch_size=max_batch_size,
            **self.decoding_options(beam_width, length_penalty, num_hypotheses),
        )
        index = {token: i for i, token in enumerate(target.vocabulary)}
        best = [
            [[index[t] for t in hypothesis] for hypothesis in result.hypotheses]
            for result in results
        ]
        return [b[0] for b in best] if num_hypotheses == 1 else best

    def translate(self, sentences, beam_width=1, length_penalty=0.0, batch_size=32):
        """Sentences -> translations, as `TrainedModel.translate`.

        A sentence without tokens translates to an empty string; sources
        longer than the model's `max_length` are cut to it (`truncated`
        says which).
        """
        rows, self.truncated = self.source_tokenizer.encode(list(sentences))
        outputs = [""] * len(rows)
        filled = [i for i, row in enumerate(rows) if row]
        if filled:
            ids = self.translate_ids(
                [rows[i] for i in filled],
                beam_width=beam_width,
                length_penalty=length_penalty,
                max_batch_size=batch_size,
            )
            for i, text in zip(filled, self.target_tokenizer.detokenize(ids)):
                outputs[i] = text
        return outputs


class _DType:
    """A signature's dtype, named and converted as `tf.DType` does."""

    def __init__(self, name, as_numpy_dtype, tf_name):
        self.name = name
        self.as_numpy_dtype = as_numpy_dtype
        self.is_integer = False
        self.tf_name = tf_name


class _Spec:
    def __init__(self, dtype, rank):
        self.dtype = dtype
        self.shape = [None] * rank


_STRING = _DType("string", object, "DT_STRING")
_FLOAT = _DType("float32", np.float32, "DT_FLOAT")


class _TextSignature:
    """`sentences` (B,) strings -> named outputs, as the SavedModel's."""

    takes_text = True

    def __init__(self, name, function, outputs):
        self.name = name
        self.function = function
        self.inputs = {"sentences": _Spec(_STRING, 1)}
        self.output_specs = outputs
        self.outputs = sorted(outputs)

    def __call__(self, arrays):
        texts = [value.decode("utf-8", "replace") for value in arrays["sentences"]]
        return self.function(texts)

    def warm_up_arrays(self):
        return {"sentences": np.array([b"warm up"], dtype=object)}

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
            "inputs": {"sentences": tensor("sentences", self.inputs["sentences"])},
            "outputs": {n: tensor(n, spec) for n, spec in self.output_specs.items()},
            "method_name": "tensorflow/serving/predict",
        }


class CTranslate2Servable(ServableBase):
    """A CTranslate2 translator export as `keras-seq serve` serves it.

    Its signatures are the SavedModel's text ones: `serving_default`
    (`sentences` -> `translations`, greedy) and `beam_search` (`sentences`
    -> `translations` (B, n) and `scores` (B, n), best first, with
    CTranslate2's length penalty `length ** alpha`).

    Args:
        path: the export directory; version: int, the version served.
        beam_width: beams of `beam_search`, which returns them all.
        length_penalty: alpha of `beam_search`.

    Raises:
        LoadError: when the directory is not a translator export.
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
        except (ValueError, ImportError, RuntimeError) as error:
            raise LoadError(
                f"{path} does not load as a CTranslate2 export: {error}"
            ) from None
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
        self.signatures = {s.name: s for s in (beam, greedy)}

    def _greedy(self, texts):
        outputs = self.model.translate(texts)
        return {"translations": np.array([t.encode() for t in outputs], object)}

    def _beams(self, texts):
        n = self.beam_width
        rows, _ = self.model.source_tokenizer.encode(texts)
        translations = np.full((len(rows), n), b"", object)
        scores = np.zeros((len(rows), n), np.float32)
        filled = [i for i, row in enumerate(rows) if row]
        if filled:
            results = self.model.translator.translate_batch(
                self.model.source_tokenizer.id_to_token_rows([rows[i] for i in filled]),
                **self.model.decoding_options(n, self.length_penalty, n),
                return_scores=True,
            )
            target = self.model.target_tokenizer
            for i, result in zip(filled, results):
                for j, (tokens, score) in enumerate(
                    zip(result.hypotheses, result.scores)
                ):
                    translations[i, j] = target.join(tokens).encode()
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


def translate_command(directory, texts, beam_width=None, length_penalty=0.0):
    """Prints one translation per sentence; returns the exit status."""
    try:
        model = CTranslate2Model(directory)
        outputs = model.translate(
            _read_lines(texts),
            beam_width=beam_width or 1,
            length_penalty=length_penalty,
        )
    except (ValueError, ImportError) as error:
        print(f"keras-seq: --ctranslate2 {directory}: {error}", file=sys.stderr)
        return 1
    cut = sum(model.truncated)
    if cut:
        print(
            f"keras-seq: note: {cut} of {len(outputs)} sentences are longer than "
            f"the model's max_length ({model.settings['max_length']} tokens); "
            "each was cut to it.",
            file=sys.stderr,
        )
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

"""`TrainedModel`: a trained model and its one preprocessor, ready to use.

`zoo.recipes.model_dir.load_model_dir` makes one from a run directory,
handing it the family's recipe and the preprocessor it read (once); it
translates, classifies or generates through that preprocessor, the one the
run saved: the same ids as in training and in the exported graph. This
module imports no training code, no family module and no Keras at its top.
"""

import dataclasses
import typing

from keras_seq import defaults
from keras_seq.validation import (
    check_bool,
    check_control_values,
    check_finite,
    check_int_in,
    check_target_prefix,
    check_token_names,
)
from zoo.recipes import inference
from zoo.recipes.inputs import check_text_list
from zoo.recipes.settings import TranslatorSettings


def _tokenizers_of(preprocessor):
    """The preprocessor's tokenizers by vocabulary key."""
    if hasattr(preprocessor, "source_tokenizer"):
        return {
            "source": preprocessor.source_tokenizer,
            "target": preprocessor.target_tokenizer,
        }
    return {"text": preprocessor.tokenizer}


def _check_examples(data, name, recipe, num_classes=None):
    """`data` as a list of what `recipe`'s family fits on, refused otherwise:
    `(source, target)` pairs of str for translators, `(text, label)` pairs
    for classifiers, str for the language models.

    Args:
        data: the argument's value.
        name: str, the argument's name for the message.
        recipe: the family's `Recipe`.
        num_classes: int or None, a classifier's classes (its labels are
            ids below it); None: any id from 0.

    Returns:
        A list.

    Raises:
        TypeError: when `data` is no list (a str is one text, not a list of
            them), or an item is not of the family's kind.
        ValueError: when `data` is empty, or a label is out of range.
    """
    if recipe.translates:
        kind, sides = "(source, target) pairs", ("source", "target")
    elif recipe.supports("classify"):
        kind, sides = "(text, label) pairs", ("text", "label")
    else:
        kind, sides = "str", None
    if sides is None and not isinstance(data, dict):
        data = check_text_list(data, name)
    elif isinstance(data, (str, bytes, dict)) or not hasattr(data, "__iter__"):
        raise TypeError(
            f"`{name}` must be a list of {kind}; received {type(data).__name__}."
        )
    data = list(data)
    if not data:
        raise ValueError(f"`{name}` must hold at least one item; received [].")
    if sides is None:
        return data
    for index, item in enumerate(data):
        if isinstance(item, str) or not isinstance(item, (tuple, list)):
            raise TypeError(
                f"`{name}[{index}]` must be a {kind[:-1]}; received "
                f"{type(item).__name__}."
            )
        if len(item) != 2:
            raise ValueError(
                f"`{name}[{index}]` must be a {kind[:-1]}; received {len(item)} items."
            )
        for side, (side_name, value) in enumerate(zip(sides, item)):
            where = f"{name}[{index}][{side}]"
            if side_name == "label":
                high = None if num_classes is None else num_classes - 1
                check_int_in(value, where, 0, high, "the last class id", False)
            elif not isinstance(value, str):
                raise TypeError(
                    f"`{where}` ({side_name}) must be a str; received "
                    f"{type(value).__name__}."
                )
    return data


class Classification(typing.NamedTuple):
    """One text's class: the most likely `label`, its `probability`, and
    every class's probability by name."""

    label: str
    probability: float
    probabilities: dict


@dataclasses.dataclass
class TrainedModel:
    """A trained model with its one preprocessor, as a model directory holds it.

    Attributes:
        path: str, the directory.
        family: str, one of the family table's names.
        model: the `keras.Model`.
        run: dict, the contents of `run.json`.
        tokenizers: dict of keras-hub tokenizers: `source` and `target`
            for translators, `text` otherwise; the preprocessor's when it
            is given. Given alone (a model built in Python), they make the
            preprocessor, at the settings the family's recipe reads from
            the model's config and `run`.
        preprocessor: the model's `keras_seq.text` preprocessor.
        recipe: the family's `Recipe` (`load_model_dir` hands it over;
            None: looked up in the family table by `family`).
    """

    path: str
    family: str
    model: object
    run: dict
    tokenizers: dict = None
    preprocessor: object = None
    recipe: object = None

    def __post_init__(self):
        if self.recipe is None:
            # Made by hand rather than by `load_model_dir`.
            from zoo.recipes.families import FAMILIES

            self.recipe = FAMILIES[self.family]
        if self.preprocessor is not None:
            self.tokenizers = _tokenizers_of(self.preprocessor)
            return
        if self.model is None or not self.tokenizers:
            return
        kind, settings = self.recipe.preprocessor(self.model.get_config(), self.run)
        keys = self.recipe.vocabularies
        self.preprocessor = kind(*(self.tokenizers[k] for k in keys), **settings)

    def _require(self, command):
        if not self.recipe.supports(command):
            from zoo.recipes.families import listed

            where = f"{self.path} holds" if self.path else "this model is"
            raise ValueError(
                f"{where} a {self.family}; {command} needs a {listed(command, 'or')}."
            )

    # A model built in Python, with its text: keras-hub's task convention
    # (one object compiles with the family's defaults, fits on strings,
    # generates from strings, saves and exports).

    @classmethod
    def of(cls, family, model, preprocessor):
        """A model built in Python (`zoo.build_translator(...)`) and its
        `keras_seq.text` preprocessor, as one object.

        Args:
            family: str, a name of `zoo.recipes.families.FAMILIES`.
            model: the family's `keras.Model`.
            preprocessor: its preprocessor (the vocabularies' tokenizers).
        """
        from zoo.recipes.families import FAMILIES

        if family not in FAMILIES:
            raise ValueError(
                f"`family` must be one of {tuple(FAMILIES)}; received {family!r}."
            )
        return cls(None, family, model, {"family": family}, preprocessor=preprocessor)

    @classmethod
    def learn(cls, family, data, preset=None, vocabulary_size=None, **overrides):
        """Learns the vocabularies on `data` and builds the family's model
        at `preset`, as `keras-seq train` does before it fits.

        Args:
            family: str, a name of `zoo.recipes.families.FAMILIES`.
            data: a list of what the family trains on: `(source, target)`
                pairs for translators, `(text, label)` pairs for classifiers,
                texts for the language models.
            preset: str or None, of the family's builder (None: its default).
            vocabulary_size: int or None, the most tokens of a vocabulary.
            **overrides: builder arguments over the preset.

        Raises:
            TypeError, ValueError: for `data` its family does not train on
                (as `fit`).
        """
        import types

        from zoo.recipes.families import FAMILIES

        if family not in FAMILIES:
            raise ValueError(
                f"`family` must be one of {tuple(FAMILIES)}; received {family!r}."
            )
        recipe = FAMILIES[family]
        given = {"preset": preset, "vocabulary_size": vocabulary_size}
        settings = dataclasses.replace(
            recipe.default_settings(),
            **{k: v for k, v in given.items() if v is not None},
            overrides=overrides,
        )
        data = _check_examples(data, "data", recipe)
        corpus = types.SimpleNamespace(train=data, validation=[], test=[])
        vocabularies = recipe.learn_vocabularies(corpus, settings)
        tokenizers = recipe.tokenizers(vocabularies, settings)
        model = recipe.build_model(vocabularies, corpus, settings)
        preprocessor = recipe.make_preprocessor(model, tokenizers, corpus, settings)
        return cls.of(family, model, preprocessor)

    def compile(self, **options):
        """Compiles the model with its family's defaults, `options` over
        them: the family's optimizer (and learning-rate schedule) and its
        padding-masked loss and metrics, as `keras-seq train` compiles.

        Returns:
            self.
        """
        settings = self.recipe.default_settings()
        chosen = {
            "optimizer": self.recipe.optimizer(self.model, settings),
            **self.recipe.compile_options(settings),
            **options,
        }
        self.model.compile(**chosen)
        return self

    def fit(self, data, epochs=1, validation_data=None, seed=0, **fit_options):
        """Trains on strings: `(source, target)` pairs for translators,
        `(text, label)` pairs for classifiers, texts for the language models
        (`data` and `validation_data` alike), through the preprocessor's batches
        (length-bucketed and shuffled by `seed`, as `keras-seq train`'s).
        Compiles with `compile()`'s defaults first if it was not compiled.

        Returns:
            Keras' `History`.

        Raises:
            TypeError: when `data` is no list of the family's items.
            ValueError: when it is empty, an item is no pair, or a label
                is no class of the model; before any work.
        """
        from zoo.recipes.recipe import Fitted

        num_classes = self.model.get_config().get("num_classes")
        data = _check_examples(data, "data", self.recipe, num_classes)
        if validation_data is not None:
            validation_data = _check_examples(
                validation_data, "validation_data", self.recipe, num_classes
            )
        if not self.model.compiled:
            self.compile()
        settings = dataclasses.replace(self.recipe.default_settings(), seed=seed)
        fitted = Fitted(
            self.model, self.preprocessor, None, started=0.0, vocabulary_minutes=0.0
        )
        train = self.recipe.dataset(fitted, data, settings, shuffle=True)
        if validation_data is not None:
            validation_data = self.recipe.dataset(fitted, validation_data, settings)
        return self.model.fit(
            train,
            epochs=epochs,
            validation_data=validation_data,
            # The batches shuffle themselves.
            shuffle=False,
            callbacks=[fitted.shuffle_epoch, *fit_options.pop("callbacks", [])],
            **fit_options,
        )

    def save(self, directory):
        """Writes a run directory that `zoo.load_model_dir` and every
        command (`translate`, `evaluate`, `export`, `serve`) take: the
        model, its preprocessor and `run.json`.

        Returns:
            The directory's path.
        """
        from zoo.recipes.run_dir import RunDir

        run = RunDir(directory)
        run.save_preprocessor(self.preprocessor)
        extra = {k: v for k, v in self.run.items() if k != "family"}
        run.save(self.family, self.model, extra, self.recipe.vocabularies)
        self.path = run.path
        return run.path

    def export(self, export_dir, version=1):
        """Writes the SavedModel (strings in, strings out) of the model and
        its preprocessor to `<export_dir>/<version>/`, as `keras-seq
        export` does (an existing version is refused).

        Returns:
            The version's path.
        """
        self._require("export")
        return self.recipe.export(self, export_dir, version)

    @property
    def output_vocabulary_size(self):
        """The number of tokens the model chooses from (the target side)."""
        config = self.model.get_config()
        return config.get("target_vocabulary_size", config.get("vocabulary_size"))

    def check_translate_options(
        self,
        beam_width=TranslatorSettings.beam_width,
        max_new_tokens=None,
        length_penalty=defaults.LENGTH_PENALTY,
        *,
        min_new_tokens=None,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress=None,
        suppress_unknown=False,
        return_scores=False,
    ):
        """Refuses options of `translate` this model cannot honour.

        Called by `translate` before any text is tokenized; the command
        line calls it before it reads its input.

        Raises:
            TypeError, ValueError: naming the argument, its bound and the
                value.
        """
        self._require("translate")
        check_int_in(
            beam_width, "beam_width", 1, self.output_vocabulary_size,
            "the target vocabulary size",
        )  # fmt: skip
        limit = getattr(self.model, "max_length", None)
        check_int_in(
            max_new_tokens, "max_new_tokens", 1, limit and limit - 1,
            "the model's max_length - 1",
        )  # fmt: skip
        check_finite(length_penalty, "length_penalty")
        check_control_values(
            max_new_tokens or (limit and limit - 1),
            min_new_tokens,
            no_repeat_ngram_size,
            repetition_penalty,
            suppress_unknown,
        )
        self._suppressed_ids(suppress)
        check_bool(return_scores, "return_scores")

    def _model_controls(self, controls, suppress):
        """The model's `generate` arguments of checked controls: those set,
        and the ids of the tokens `suppress` names."""
        options = {name: value for name, value in controls.items() if value}
        suppressed = self._suppressed_ids(suppress)
        if suppressed:
            options["suppress_token_ids"] = suppressed
        return options

    def _suppressed_ids(self, suppress):
        """The output ids of the tokens `suppress` names (None: none)."""
        tokenizer = getattr(self.preprocessor, "target_tokenizer", None)
        vocabulary = (tokenizer or self.preprocessor.tokenizer).get_vocabulary()
        return check_token_names(suppress, "suppress", vocabulary)

    def translate(
        self,
        texts,
        beam_width=TranslatorSettings.beam_width,
        max_new_tokens=None,
        length_penalty=defaults.LENGTH_PENALTY,
        *,
        target_prefix=None,
        min_new_tokens=None,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress=None,
        suppress_unknown=False,
        return_scores=False,
    ):
        """Translates sentences, one output per input (blank in, "" out).

        A sentence longer than the model's `max_length` tokens is cut to
        it; a `TruncationWarning` says how many were (the preprocessor's
        `decode_batches`). The decoding controls are `generate`'s, with
        text where it takes ids.

        Args:
            texts: a list of str, or one str (one sentence).
            beam_width: int in [1, target vocabulary size], beams of the
                search; 1 decodes greedily.
            max_new_tokens: int in [1, max_length - 1], or None (as many
                as the model allows).
            length_penalty: float alpha of GNMT's length penalty
                `((5 + n) / 6) ** alpha` that divides a beam's summed
                log-probability when the beams are ranked (0: by the sum);
                greedy decoding ranks nothing, so it leaves the output.
            target_prefix: None, or the start of each translation: a str
                (one for every text) or a list of str (one per text),
                tokenized by the target tokenizer and forced.
            min_new_tokens: None or an int: no end token before that many
                tokens.
            no_repeat_ngram_size: None or an int n: no n-gram twice.
            repetition_penalty: None or a float p > 0 (CTRL's).
            suppress: None or a list of target tokens (str) never written.
            suppress_unknown: bool, never write `[UNK]`.
            return_scores: bool, return `zoo.recipes.inference.Scored`
                translations (`text`, `tokens`, `log_probs`, `log_prob`)
                instead of str.

        Returns:
            A list of str (of `Scored`), or one for one str.

        Raises:
            ValueError: for an option out of its bounds, before any work.
            TypeError: when `texts` is not a str or a list of str.
        """
        controls = {
            "min_new_tokens": min_new_tokens,
            "no_repeat_ngram_size": no_repeat_ngram_size,
            "repetition_penalty": repetition_penalty,
            "suppress_unknown": suppress_unknown,
        }
        self.check_translate_options(
            beam_width,
            max_new_tokens,
            length_penalty,
            suppress=suppress,
            return_scores=return_scores,
            **controls,
        )
        if isinstance(texts, str):
            if target_prefix is not None and not isinstance(target_prefix, str):
                raise TypeError(
                    "`target_prefix` must be a str for one text; received "
                    f"{type(target_prefix).__name__}."
                )
            return self.translate(
                [texts],
                beam_width,
                max_new_tokens,
                length_penalty,
                target_prefix=target_prefix,
                suppress=suppress,
                return_scores=return_scores,
                **controls,
            )[0]
        texts = check_text_list(texts, "texts")
        target_prefix = check_target_prefix(target_prefix, len(texts))
        options = self._model_controls(controls, suppress)
        if beam_width > 1:
            options.update(
                strategy="beam", beam_width=beam_width, length_penalty=length_penalty
            )
        return inference.translate_texts(
            self.model,
            self.preprocessor,
            texts,
            max_new_tokens=max_new_tokens,
            target_prefix=target_prefix,
            return_scores=return_scores,
            **options,
        )

    def stream(self, text, max_new_tokens=None, **options):
        """Yields the output for one text in pieces as the model writes it:
        a translator's greedy translation, a language model's prompt and
        continuation. The pieces joined are `translate(text, beam_width=1,
        max_new_tokens, **options)` (a translator) or `generate(text,
        max_new_tokens, **options)` (a language model).

        A piece ends at a word boundary (`inference.text_pieces`). The
        model decodes step by step (`GenerativeModel.stream`), one
        sentence alone (`translate` decodes a batch of 64 rows, filler
        rows included); benchmarks/README.md ("Streaming") times both.

        Args:
            text: str.
            max_new_tokens: as `translate`'s or `generate`'s.
            **options: `translate`'s decoding controls (`target_prefix` a
                str), or `generate`'s `top_k`, `top_p`, `seed` and
                controls; neither beams nor scores.

        Returns:
            An iterator of str.

        Raises:
            TypeError, ValueError: for an argument out of its bounds, when
                `stream` is called, before any decoding.
        """
        if not isinstance(text, str):
            raise TypeError(f"`text` must be a str; received {type(text).__name__}.")
        for refused in ("beam_width", "length_penalty", "return_scores"):
            if refused in options:
                raise TypeError(
                    f"`stream` decodes greedily or samples and writes no "
                    f"scores: it takes no `{refused}`."
                )
        if not self.recipe.supports("translate"):
            if not self.recipe.supports("generate"):
                from zoo.recipes.families import listed

                where = f"{self.path} holds" if self.path else "this model is"
                raise ValueError(
                    f"{where} a {self.family}; stream needs a "
                    f"{listed('translate', 'or')}, or a {listed('generate', 'or')}."
                )
            return self._stream_continuation(text, max_new_tokens, **options)
        target_prefix = options.pop("target_prefix", None)
        if target_prefix is not None and not isinstance(target_prefix, str):
            raise TypeError(
                "`target_prefix` must be a str for one text; received "
                f"{type(target_prefix).__name__}."
            )
        suppress = options.pop("suppress", None)
        self.check_translate_options(1, max_new_tokens, suppress=suppress, **options)
        options = self._model_controls(options, suppress)
        return inference.stream_translation(
            self.model, self.preprocessor, text, max_new_tokens, target_prefix,
            **options,
        )  # fmt: skip

    def _stream_continuation(
        self,
        prompt,
        max_new_tokens=None,
        top_k=inference.SAMPLE_TOP_K,
        top_p=None,
        seed=0,
        *,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress=None,
    ):
        """`stream` of a language model: `generate`'s arguments."""
        controls = {
            "no_repeat_ngram_size": no_repeat_ngram_size,
            "repetition_penalty": repetition_penalty,
        }
        self.check_generate_options(
            max_new_tokens, top_k, top_p, seed, suppress=suppress, **controls
        )
        options = self._model_controls(controls, suppress)
        return inference.stream_text(
            self.model, self.preprocessor, prompt, max_new_tokens, top_k, top_p,
            seed, **options,
        )  # fmt: skip

    def score(self, sources, targets, batch_size=64):
        """The log-probability the model gives each token of given
        translations, after their sources (teacher-forced, batched): what
        `translate(..., return_scores=True)` gives the translation it
        writes itself.

        Args:
            sources, targets: lists of str of equal length (or one str
                each, for one pair).
            batch_size: int, pairs scored together.

        Returns:
            A list of `Scored` (`text` the target, `tokens` with `[END]`
            last, `log_probs`, `log_prob` their sum), or one for one pair.

        Raises:
            TypeError, ValueError: for texts that are no list of str, or
                lists of different lengths, before any work.
        """
        self._require("translate")
        if isinstance(sources, str) and isinstance(targets, str):
            return self.score([sources], [targets], batch_size)[0]
        check_int_in(batch_size, "batch_size", 1)
        return inference.score_texts(
            self.model, self.preprocessor, sources, targets, batch_size
        )

    def classify(self, texts):
        """The most likely class of each text and its probability: what
        `keras-seq classify` prints (`label<TAB>probability`).

        Args:
            texts: a list of str, or one str (one text).

        Returns:
            A list of `Classification(label, probability, probabilities)`
            (`probabilities`: class name -> probability), or one for one
            str.
        """
        rows = self.probabilities(texts)
        if isinstance(texts, str):
            return self._classification(rows)
        return [self._classification(row) for row in rows]

    def probabilities(self, texts):
        """Class probabilities of texts, in the order of `class_names`.

        Args:
            texts: a list of str, or one str (one text).

        Returns:
            A float array (N, classes), or (classes,) for one str.
        """
        self._require("classify")
        if isinstance(texts, str):
            return self.probabilities([texts])[0]
        texts = check_text_list(texts, "texts")
        return inference.classify_texts(self.model, self.preprocessor, texts)

    def _classification(self, row):
        names = self.class_names
        best = int(row.argmax())
        return Classification(
            names[best], float(row[best]), dict(zip(names, map(float, row)))
        )

    @property
    def class_names(self):
        """A classifier's class names, by id: the labels of its training
        file (`["neg", "pos"]`), or the ids as text (`["0", "1"]`)."""
        self._require("classify")
        return self.preprocessor.label_names(self.model.get_config()["num_classes"])

    def label(self, texts):
        """The name of the most likely class of each text (see `classify`).

        Returns:
            A list of str, or one str for one str.
        """
        if isinstance(texts, str):
            return self.classify(texts).label
        return [classified.label for classified in self.classify(texts)]

    def check_generate_options(
        self,
        max_new_tokens=None,
        top_k=inference.SAMPLE_TOP_K,
        top_p=None,
        seed=0,
        *,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress=None,
        return_scores=False,
    ):
        """Refuses options of `generate` this model cannot honour.

        Raises:
            TypeError, ValueError: naming the argument, its bound and the
                value.
        """
        self._require("generate")
        limit = self.preprocessor.max_length
        check_int_in(
            max_new_tokens, "max_new_tokens", 1, limit - 1,
            "the model's max_length - 1",
        )  # fmt: skip
        check_int_in(
            top_k, "top_k", 1, self.output_vocabulary_size, "the vocabulary size"
        )
        if top_p is not None and not (
            isinstance(top_p, (int, float)) and 0.0 < top_p <= 1.0
        ):
            raise ValueError(f"`top_p` must be in (0, 1]; received {top_p!r}.")
        check_int_in(seed, "seed", 0, 2**31 - 1, "the largest int32 seed")
        check_control_values(
            no_repeat_ngram_size=no_repeat_ngram_size,
            repetition_penalty=repetition_penalty,
        )
        self._suppressed_ids(suppress)
        check_bool(return_scores, "return_scores")

    def generate(
        self,
        prompt,
        max_new_tokens=None,
        top_k=inference.SAMPLE_TOP_K,
        top_p=None,
        seed=0,
        *,
        no_repeat_ngram_size=None,
        repetition_penalty=None,
        suppress=None,
        return_scores=False,
    ):
        """Samples a continuation of `prompt` (top-k, or top-p) from a language
        model; a translator's `generate` is `translate` at its defaults.

        Training lines end with [END]; sampling runs past it, so the text
        may span several lines, joined by " / ".

        A seed fixes the draw: the same prompt and `seed` give the same
        text on every call, whatever was generated before, and each prompt
        of a list draws as it would alone; `seed=None` draws afresh.

        Args:
            prompt: str, the start of the text, or a list of str (each
                continued on its own).
            max_new_tokens: int in [1, max_length - 1], the new tokens (a
                longer prompt keeps its last `max_length - max_new_tokens`
                tokens, as the exported model's do), or None: as many as
                the model's `max_length` leaves beside the prompt.
            top_k: int in [1, vocabulary size], the sampler's k.
            top_p: float in (0, 1] or None, the nucleus of the sampler
                (within the `top_k` most likely tokens).
            seed: int in [0, 2**31) or None, of the sampler.
            no_repeat_ngram_size: None or an int n: no n-gram twice, the
                prompt's included.
            repetition_penalty: None or a float p > 0 (CTRL's) of the
                tokens of the prompt and the continuation.
            suppress: None or a list of tokens (str) never written.
            return_scores: bool, return `zoo.recipes.inference.Scored`
                (`text`; `tokens` and `log_probs` of the new tokens) instead
                of str.

        Returns:
            str (or `Scored`), the prompt and its continuation; a list for
            a list.

        Raises:
            ValueError: for an option out of its bounds, before any work.
            TypeError: when `prompt` is not a str or a list of str.
        """
        if self.recipe.translates:
            sampling = {
                "top_k": (top_k, inference.SAMPLE_TOP_K),
                "top_p": (top_p, None),
            }
            given = [
                name for name, (value, default) in sampling.items() if value != default
            ]
            if given:
                raise ValueError(
                    f"a {self.family} translates with beams; `generate` takes no "
                    f"{', '.join(given)} for it (received {given[0]}="
                    f"{sampling[given[0]][0]!r})."
                )
            return self.translate(
                prompt,
                max_new_tokens=max_new_tokens,
                no_repeat_ngram_size=no_repeat_ngram_size,
                repetition_penalty=repetition_penalty,
                suppress=suppress,
                return_scores=return_scores,
            )
        controls = {
            "no_repeat_ngram_size": no_repeat_ngram_size,
            "repetition_penalty": repetition_penalty,
            "suppress": suppress,
            "return_scores": return_scores,
        }
        self.check_generate_options(max_new_tokens, top_k, top_p, seed, **controls)
        if not isinstance(prompt, str):
            prompts = check_text_list(prompt, "prompt")
            return [
                self.generate(p, max_new_tokens, top_k, top_p, seed, **controls)
                for p in prompts
            ]
        options = {
            name: value
            for name, value in controls.items()
            if name not in ("suppress", "return_scores")
        }
        options = self._model_controls(options, suppress)
        return inference.generate_text(
            self.model, self.preprocessor, prompt, max_new_tokens, top_k, top_p,
            seed, return_scores=return_scores, **options,
        )  # fmt: skip

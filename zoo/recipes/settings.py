"""What each recipe trains with: one frozen dataclass per recipe.

Every default of the application is written here, once: the command line's
flags default to None and take these values, and named recipes
(`TRANSLATOR_RECIPES`, the demo's `DEMO`) are instances that differ from
the defaults only where their papers or purposes say.
"""

import dataclasses
import math

from keras_seq import defaults
from keras_seq.text.vocabulary import DEFAULT_MIN_FREQUENCY


@dataclasses.dataclass(frozen=True)
class TrainingSettings:
    """What every family's recipe takes.

    Attributes:
        preset: str, a preset of the family's builder.
        epochs: int, the most epochs to train.
        minutes: float or None, a wall-clock budget (`TimeBudget`).
        seed: int, seeds the weights, the shuffling and any masking.
        vocabulary_size: int, the most tokens of each WordPiece vocabulary.
        min_frequency: int, the fewest times a word piece occurs in the
            training text to be learned; on a small text it, not
            `vocabulary_size`, decides the vocabulary (`train` says so).
        overrides: dict of builder arguments over the preset's.
    """

    preset: str = "small"
    epochs: int = 10
    minutes: float | None = None
    seed: int = 0
    vocabulary_size: int = 8000
    min_frequency: int = DEFAULT_MIN_FREQUENCY
    overrides: dict = dataclasses.field(default_factory=dict)

    # Settings a resumed run may change: they do not change what it trains.
    resumable = ("epochs", "minutes")
    # Settings added since runs were first made, where a run made before
    # behaved otherwise than the default: an interrupted run of that time
    # resumes when asked for this value.
    legacy = {}

    def replace(self, **changes):
        """A copy with `changes`.

        A name that is not a field is a builder argument, added to
        `overrides` (the caller's over this one's).
        """
        fields = {f.name for f in dataclasses.fields(self)}
        kept = {k: v for k, v in changes.items() if k in fields}
        builder = {k: v for k, v in changes.items() if k not in fields}
        overrides = {**self.overrides, **kept.pop("overrides", {}), **builder}
        return dataclasses.replace(self, **kept, overrides=overrides)

    def identity(self):
        """What makes two runs the same run, for resuming: every setting but
        the `resumable` ones, which may change between an interruption and
        its resumption."""
        values = dataclasses.asdict(self)
        return {k: v for k, v in values.items() if k not in self.resumable}

    def legacy_identity(self):
        """The identity a run made before a setting existed is read with:
        each setting at its default, or at what `legacy` says it was."""
        return {**type(self)().identity(), **self.legacy}


@dataclasses.dataclass(frozen=True)
class TranslatorSettings(TrainingSettings):
    """The translator's recipe (`zoo.recipes.translator`), for the
    Transformer and the RNN translator.

    Attributes:
        recipe: str, the name of this set of values (`TRANSLATOR_RECIPES`).
        batch_tokens: int, tokens in a length-bucketed batch.
        max_length: int or None, the longest sequence in tokens; None: the
            preset's (`translator.RNN_MAX_LENGTH` for the RNN translator).
        warmup_steps: int, of the inverse-square-root schedule.
        learning_rate_scale: float, multiplies the learning rate.
        label_smoothing: float in [0, 1), of the masked cross-entropy.
        bleu_sample: int, validation pairs translated (greedily) to score
            validation BLEU.
        bleu_every: int, score validation BLEU every that many epochs (the
            first and the last epoch are always scored).
        jit_compile: bool. XLA compiles one training graph per length
            bucket, a cost that short CPU runs do not win back.
        shared_vocabulary: bool, one vocabulary for both sides; a model that
            ties its embeddings always learns one.
        ema_momentum: float or None, train with a moving average of the
            weights (`EmaWeights`).
        average_last_epochs: int, end with the mean weights of the last that
            many epochs (`AverageLastEpochs`); 1 keeps the last weights.
        token_dropout: float, word dropout of the training batches.
        early_stopping_patience: int or None, stop once the validation BLEU
            has not risen for that many epochs.
        beam_width: int, beams of the test translations (1: greedy).
        greedy_bleu: bool, also score greedy decoding (as `serving_default`
            decodes), beside `beam_width`'s.
        variants: bool, add trans-de-en's further sentence pairs.
        phrases: bool, add trans-de-en's phrase pairs.
        train_pairs: int or None, train on a random subset of that many
            training pairs (drawn with `seed`).
        lowercase: bool, lowercase the text before the vocabularies learn
            it, so the model reads and writes lowercased text. False keeps
            case, which cased BLEU (sacreBLEU's default) scores.
        tokenizer: str, `"wordpiece"` or `"sentencepiece"` (a model per
            side, trained on the training split's raw text).
        sentencepiece_model: str, `"unigram"` or `"bpe"`, SentencePiece's
            segmentation model.
        subword_sampling: float in [0, 1), SentencePiece only: sample each
            training pass's segmentation with this `alpha` (subword
            regularization, Kudo, 2018); 0 trains on the best one.
            Evaluation and decoding always use the best.
        init_from: dict or None, the finished run this one starts from
            (`zoo.recipes.importing.starting_point`: its absolute `path`
            and its model file's `model_sha256`): its weights, builder
            config and preprocessor are kept, and no vocabulary is learned.
    """

    recipe: str = "default"
    batch_tokens: int = defaults.BATCH_TOKENS
    max_length: int | None = None
    warmup_steps: int = 300
    learning_rate_scale: float = 0.7
    label_smoothing: float = 0.1
    bleu_sample: int = 300
    bleu_every: int = 1
    jit_compile: bool = False
    shared_vocabulary: bool = False
    ema_momentum: float | None = None
    average_last_epochs: int = 1
    token_dropout: float = 0.0
    early_stopping_patience: int | None = None
    beam_width: int = defaults.BEAM_WIDTH
    greedy_bleu: bool = False
    variants: bool = False
    phrases: bool = False
    train_pairs: int | None = None
    lowercase: bool = False
    tokenizer: str = "wordpiece"
    sentencepiece_model: str = "unigram"
    subword_sampling: float = 0.0
    init_from: dict | None = None

    resumable = (*TrainingSettings.resumable, "beam_width", "greedy_bleu")
    # Translators lowercased their text before case was kept.
    legacy = {"lowercase": True}


@dataclasses.dataclass(frozen=True)
class EncoderSettings(TrainingSettings):
    """What the encoder-only recipes share (AdamW, fixed-size batches).

    Attributes:
        batch_size: int.
        learning_rate: float, of AdamW.
    """

    batch_size: int = 64
    learning_rate: float = 5e-4


@dataclasses.dataclass(frozen=True)
class ClassifierSettings(EncoderSettings):
    """The classifier's recipe (`zoo.recipes.classifier`).

    Attributes:
        max_length: int, batches are padded (texts cut) to
            `min(max_length, the model's max_length)` tokens; the
            movie-review snippets fit in 64.
    """

    max_length: int = 64


@dataclasses.dataclass(frozen=True)
class MaskedLanguageModelSettings(EncoderSettings):
    """The masked language model's recipe
    (`zoo.recipes.masked_language_model`)."""


@dataclasses.dataclass(frozen=True)
class LanguageModelSettings(TrainingSettings):
    """The language model's recipe (`zoo.recipes.language_model`).

    Attributes:
        sequence_length: int, tokens in a training window, at most the
            model's `max_length`.
        batch_size: int.
        warmup_steps: int, of the inverse-square-root schedule.
        learning_rate_scale: float, multiplies the learning rate.
        max_length: int or None, the longest text (prompt and continuation)
            of a model without a limit of its own; None: the model's.
    """

    sequence_length: int = 128
    batch_size: int = 32
    warmup_steps: int = 400
    learning_rate_scale: float = 1.0
    max_length: int | None = None


# "low-resource" applies the regularisers that matter on a corpus of ~16k
# sentence pairs (Sennrich & Zhang, 2019; Araabi & Monz, 2020): heavier
# dropout and label smoothing, word dropout on both inputs, and many epochs
# stopped by validation BLEU, ending with averaged weights. Two levers of
# those papers are left out on purpose: BPE-dropout needs a BPE model (the
# recipe's WordPiece tokenizers have no sampling mode), and layer drop would
# leave the `small` preset's 2 decoder blocks a single one.
LOW_RESOURCE = TranslatorSettings(
    recipe="low-resource",
    label_smoothing=0.2,
    token_dropout=0.1,
    early_stopping_patience=15,
    average_last_epochs=5,
    overrides={"dropout": 0.2},
)
TRANSLATOR_RECIPES = {s.recipe: s for s in (TranslatorSettings(), LOW_RESOURCE)}

# The budget below which the default recipe scored higher than
# "low-resource" in every paired run of docs/experiments.md ("Recipes
# against time budgets", "The low-resource recipe"), in minutes on 2 CPU
# cores; `train` says so before a shorter low-resource run.
LOW_RESOURCE_MINUTES = 32.0


def recipe_advice(chosen):
    """One line when `chosen` is the low-resource recipe on a budget too
    short for it to match the default recipe; None otherwise."""
    recipe = getattr(chosen, "recipe", None)  # Only translators name one.
    if recipe != LOW_RESOURCE.recipe or chosen.minutes is None:
        return None
    if chosen.minutes >= LOW_RESOURCE_MINUTES:
        return None
    return (
        f"note: --recipe low-resource needs more than {LOW_RESOURCE_MINUTES:g} "
        "minutes on 2 CPU cores to match the default recipe; below that the "
        "default recipe scores higher (docs/experiments.md)"
    )


# `keras-seq demo`: the small translator for a quarter of an hour, averaged
# over its last 5 epochs, scored with beams and greedily.
DEMO = TranslatorSettings(
    recipe="demo", epochs=60, minutes=15.0, average_last_epochs=5, greedy_bleu=True
)


def described(settings):
    """The fields in which `settings` differs from its class's defaults, as
    `name=value` words (for help texts)."""
    default = type(settings)()
    return ", ".join(
        f"{f.name}={getattr(settings, f.name)}"
        for f in dataclasses.fields(settings)
        if f.name != "recipe" and getattr(settings, f.name) != getattr(default, f.name)
    )


@dataclasses.dataclass(frozen=True)
class GenerateSettings:
    """How `generate` samples a language model's continuation.

    Attributes:
        max_new_tokens: int or None, the most new tokens (None: as many as
            the model's `max_length` leaves).
        top_k: int, the sampler's k.
        top_p: float in (0, 1] or None, the sampler's nucleus.
        seed: int, of the sampler: a prompt and a seed give one text.
    """

    max_new_tokens: int | None = None
    top_k: int = 20
    top_p: float | None = None
    seed: int = 0


# How a run uses the machine (`keras-seq train --strategy/--precision`).
STRATEGIES = ("none", "mirrored", "multi-worker")
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")


@dataclasses.dataclass(frozen=True)
class RuntimeSettings:
    """How a run uses the machine; none of it changes what the run is but
    `precision`.

    Attributes:
        strategy: str, one of `STRATEGIES`.
        precision: str, one of `PRECISIONS`.
        deterministic: bool, TensorFlow op determinism.
        began: float or None, the `time.time()` the time budget counts
            from (`keras-seq train`: the command's start); None: when
            `workflow.train` is called.
    """

    strategy: str = "none"
    precision: str = "float32"
    deterministic: bool = False
    began: float | None = None


@dataclasses.dataclass(frozen=True)
class ServeSettings:
    """`keras-seq serve`'s options (`zoo.serving.serve`'s defaults).

    Attributes:
        host: str, the address to bind.
        port: int, the port to bind.
        max_batch_size: int, the most examples of concurrent requests
            merged into one model call.
        batch_timeout_micros: int, the longest a batch waits for more
            requests (0: only those waiting).
        max_body_bytes: int, larger request bodies are refused (HTTP 413).
        max_rows_per_request: int, requests of more examples are refused
            (HTTP 400); those under it but larger than `max_batch_size` are
            run a batch at a time, between other requests.
        request_timeout: float, seconds a client may stall while sending a
            request (then HTTP 408).
    """

    host: str = "127.0.0.1"
    port: int = 8501
    max_batch_size: int = 32
    batch_timeout_micros: int = 0
    max_body_bytes: int = 1 << 20
    max_rows_per_request: int = 10_000
    request_timeout: float = 10.0


# The bounds of the training settings that `keras-seq train` (and `demo`)
# and `zoo.train` take: name -> (least value, greatest value or None, what
# the greatest is). The vocabulary's least size is its reserved tokens and
# one word (`check_training` adds it).
# The settings that name one of a few choices.
TRAINING_CHOICES = {
    "tokenizer": ("wordpiece", "sentencepiece"),
    "sentencepiece_model": ("unigram", "bpe"),
}
TRAINING_BOUNDS = {
    "epochs": (1, None, None),
    "seed": (0, 2**31 - 1, "the largest int32 seed"),
    "vocabulary_size": (None, None, None),
    "beam_width": (1, None, None),
    "average_last_epochs": (1, None, None),
    "bleu_every": (1, None, None),
    "min_frequency": (1, None, None),
}


def _check_tokenizer_settings(flags, values):
    """The SentencePiece-only settings need `tokenizer="sentencepiece"`."""
    if values.get("tokenizer") == "sentencepiece":
        if values.get("lowercase"):
            raise ValueError(
                f"{flags.get('lowercase', '`lowercase`')} applies to WordPiece; "
                "a SentencePiece model keeps its text as it is"
            )
        return
    for name, unset in (
        ("subword_sampling", (None, 0)),
        ("sentencepiece_model", (None, "unigram")),
    ):
        if values.get(name) not in unset:
            label = flags.get(name, f"`{name}`")
            tokenizer = flags.get("tokenizer", "`tokenizer`")
            raise ValueError(
                f"{label} applies to {tokenizer} sentencepiece; received "
                f"{values[name]!r} with {values.get('tokenizer') or 'wordpiece'}"
            )


def check_training(flags=None, **values):
    """Refuses a training setting out of its bounds: the one check of
    `keras-seq train` and `zoo.train` (same bounds, same words).

    Args:
        flags: dict of setting -> the flag that named it (`"--epochs"`), or
            None: each is named as the argument (`` `epochs` ``).
        **values: the settings given (`epochs=3`, `minutes=None`, ...);
            None passes (left out: the recipe's default).

    Raises:
        TypeError: when a count is not an int.
        ValueError: naming the setting, its bound and the value.
    """
    from keras_seq.text.vocabulary import RESERVED_TOKENS

    flags = flags or {}
    _check_tokenizer_settings(flags, values)
    for name, value in values.items():
        if value is None:
            continue
        label = flags.get(name, f"`{name}`")
        if name == "lowercase":  # A flag, read by the check above.
            continue
        if name in TRAINING_CHOICES:
            if value not in TRAINING_CHOICES[name]:
                raise ValueError(
                    f"{label} must be one of {list(TRAINING_CHOICES[name])}; "
                    f"received {value!r}"
                )
            continue
        if name == "subword_sampling":
            if isinstance(value, bool) or not (
                isinstance(value, (int, float)) and 0 <= value < 1
            ):
                raise ValueError(f"{label} must be in [0, 1); received {value!r}")
            continue
        if name == "minutes":
            if not (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value > 0
            ):
                raise ValueError(
                    f"{label} must be a finite number above 0; received {value}"
                )
            continue
        low, high, bound = TRAINING_BOUNDS[name]
        if name == "vocabulary_size":
            low = len(RESERVED_TOKENS) + 1
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{label} must be an int; received {value!r}")
        if value < low:
            raise ValueError(f"{label} must be at least {low}; received {value}")
        if high is not None and value > high:
            raise ValueError(
                f"{label} must be at most {high} ({bound}); received {value}"
            )

"""The `keras-seq` command line.

Errors the user can fix (a missing corpus, a bad file, a bad argument) are
printed as one line on stderr with exit status 1, never a traceback.
"""

import argparse
import dataclasses
import json
import os
import sys

FAMILIES = (
    "translator",
    "classifier",
    "masked-language-model",
    "language-model",
    "rnn-translator",
)


def _quiet_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


class UserError(Exception):
    """An error whose message is all the user needs."""


def _check_average_epochs(args):
    if args.average_epochs < 1:
        raise UserError(
            f"--average-epochs must be at least 1; received {args.average_epochs}"
        )


def _demo(args):
    """Train the `small` translator German->English and report test BLEU."""
    import random

    import numpy as np

    from keras_seq.data import load_trans_de_en
    from keras_seq.text import END_ID
    from zoo.recipes import model_dir, plots
    from zoo.recipes import translation as recipe

    _check_average_epochs(args)
    if args.train_pairs is not None and args.train_pairs < 1:
        raise UserError(
            f"--train-pairs must be at least 1; received {args.train_pairs}"
        )
    os.makedirs(args.output_dir, exist_ok=True)
    corpus = load_trans_de_en(
        args.corpus, include_phrases=args.phrases, include_variants=args.variants
    )
    if args.train_pairs is not None:
        # A random subset (the seed's), so that smaller training sets cover
        # the whole dictionary rather than its first letters.
        count = min(args.train_pairs, len(corpus.train))
        picked = random.Random(args.seed).sample(corpus.train, count)
        corpus = dataclasses.replace(corpus, train=picked)
    print(
        f"trans-de-en: {len(corpus.train):,} training pairs "
        f"({corpus.phrases_added:,} dictionary phrases, "
        f"{corpus.variants_added:,} further sentences), "
        f"{len(corpus.validation):,} validation, {len(corpus.test):,} test",
        flush=True,
    )
    result = recipe.train_translator(
        corpus,
        args.output_dir,
        preset=args.preset,
        epochs=args.epochs,
        minutes=args.minutes,
        seed=args.seed,
        average_last_epochs=args.average_epochs,
        verbose=1 if sys.stdout.isatty() else 2,
    )
    model = result["model"]
    tokenizers = (result["source_tokenizer"], result["target_tokenizer"])
    greedy = recipe.evaluate_translator(model, *tokenizers, corpus.test)
    scores = recipe.evaluate_translator(
        model, *tokenizers, corpus.test, strategy="beam", beam_width=args.beam_width
    )

    plots.plot_learning_curves(
        result["history"],
        result["bleu_history"],
        os.path.join(args.output_dir, "learning_curves.png"),
    )
    # A sentence of middling length, so the alignment has room to show.
    source = next(
        (s for s, _ in corpus.test if 7 <= len(s.split()) <= 10), corpus.test[0][0]
    )
    source_ids = np.asarray(
        recipe.tokenize_to_lists(result["source_tokenizer"], [source]), "int32"
    )
    output = np.asarray(model.generate(source_ids))[0].tolist()
    output = output[: output.index(END_ID) + 1] if END_ID in output else output
    decoder_ids = np.asarray([[2] + output[:-1]], "int32")
    weights = np.asarray(model.cross_attention_weights(source_ids, decoder_ids))
    vocab_s = result["source_tokenizer"].get_vocabulary()
    vocab_t = result["target_tokenizer"].get_vocabulary()
    plots.plot_attention(
        weights[0].mean(axis=0),
        [vocab_s[i] for i in source_ids[0]],
        [vocab_t[i] for i in output],
        os.path.join(args.output_dir, "attention.png"),
        title="Cross attention, last decoder block (mean of heads)",
    )

    metrics = {
        "bleu": round(scores["bleu"], 2),
        "bleu_cased": round(scores["bleu_cased"], 2),
        "bleu_greedy": round(greedy["bleu"], 2),
        "beam_width": args.beam_width,
        "train_minutes": round(result["train_minutes"], 2),
        "vocabulary_minutes": round(result["vocabulary_minutes"], 2),
        "params": int(model.count_params()),
        "epochs": len(result["history"]["loss"]),
        "averaged_epochs": result["averaged_epochs"],
        "bleu_history": result["bleu_history"],
        "preset": args.preset,
        "seed": args.seed,
        "test_pairs": len(corpus.test),
    }
    recipe.write_metrics(os.path.join(args.output_dir, "metrics.json"), metrics)
    model_dir.save_model_dir(
        args.output_dir,
        "translator",
        model,
        {"data": args.corpus, **{k: metrics[k] for k in ("bleu", "bleu_cased")}},
    )
    print(
        f"\ntest BLEU {metrics['bleu']:.2f} (lowercase), "
        f"{metrics['bleu_cased']:.2f} (cased) with {args.beam_width} beams, "
        f"{metrics['bleu_greedy']:.2f} greedy, after "
        f"{metrics['train_minutes']:.1f} training minutes, "
        f"{metrics['params']:,} parameters"
    )
    print("sample translations (source | reference | model):")
    picks = random.Random(args.seed).sample(range(len(corpus.test)), 8)
    for i in picks:
        source, reference = corpus.test[i]
        print(f"  {source}\n    ref: {reference}\n    out: {scores['hypotheses'][i]}")

    # Serving: export, reload the SavedModel and translate the samples again.
    from keras_seq import export

    export_root = os.path.join(args.output_dir, "saved_model")
    version = 1 + max([int(v) for v in _listdir(export_root) if v.isdigit()], default=0)
    path = export.export_translator(
        model,
        result["source_tokenizer"],
        result["target_tokenizer"],
        export_root,
        version=version,
    )
    served = _serve(path, [corpus.test[i][0] for i in picks])
    # `serving_default` decodes greedily: compare with the greedy outputs.
    same = sum(a == greedy["hypotheses"][i] for a, i in zip(served, picks))
    print(
        f"SavedModel {path}: {same} of {len(picks)} greedy sample translations "
        "identical through serving_default"
    )
    for i, translation in zip(picks[:3], served):
        print(f"  {corpus.test[i][0]}\n    served: {translation}")
    print(f"saved model, vocabularies, figures and metrics.json to {args.output_dir}")
    return 0


def _listdir(path):
    return os.listdir(path) if os.path.isdir(path) else []


def _is_trans_de_en(data):
    """`--data` names the trans-de-en dictionary (or leaves it the default)."""
    return data in ("trans-de-en", None) or os.path.basename(data) == "de-en"


def _translation_corpus(data, variants=False):
    from keras_seq.data import load_trans_de_en, load_tsv_pairs, split_pairs

    if data in ("trans-de-en", None):
        return load_trans_de_en(include_variants=variants)
    if _is_trans_de_en(data):
        return load_trans_de_en(data, include_variants=variants)
    _check_file(data)
    return split_pairs(load_tsv_pairs(data))


def _check_file(path):
    if not os.path.isfile(path):
        raise UserError(f"--data {path}: no such file.")


def _sentiment_corpus(data):
    from keras_seq.data import (
        SentimentCorpus,
        load_movie_review_snippets,
        load_tsv_pairs,
        split_pairs,
    )

    if data in ("movie-reviews", None):
        return load_movie_review_snippets()
    _check_file(data)
    corpus = split_pairs(load_tsv_pairs(data))
    labels = sorted({label for _, label in corpus.train})
    if not all(label.isdigit() for label in labels):
        raise UserError(
            f"--data {data}: the second column must hold class ids 0, 1, ...; "
            f"received {labels[:5]}."
        )

    def ints(pairs):
        return [(text, int(label)) for text, label in pairs]

    return SentimentCorpus(
        ints(corpus.train), ints(corpus.validation), ints(corpus.test)
    )


def _text_corpus(data):
    from keras_seq.data import TextCorpus, load_shakespeare

    if data in ("shakespeare", None):
        return load_shakespeare()
    if data == "movie-reviews":
        corpus = _sentiment_corpus(data)
        splits = (corpus.train, corpus.validation, corpus.test)
        return TextCorpus(*([text for text, _ in split] for split in splits))
    _check_file(data)
    with open(data, encoding="utf-8") as file:
        lines = [line.strip() for line in file if line.strip()]
    splits = ([], [], [])  # test, validation, train: n % 20 == 0, 1, other
    for n, line in enumerate(lines):
        splits[min(n % 20, 2)].append(line)
    if not all(splits):
        raise UserError(f"--data {data}: needs at least 3 non-empty lines.")
    return TextCorpus(train=splits[2], validation=splits[1], test=splits[0])


def _verbose():
    """A progress bar on a terminal, one line per epoch in a log."""
    return 1 if sys.stdout.isatty() else 2


def _runtime(args):
    """Apply `--strategy`, `--deterministic` and `--precision`; the strategy."""
    from zoo.recipes import runtime

    strategy = runtime.make_strategy(args.strategy)  # before any other op
    if args.deterministic:
        runtime.make_deterministic(args.seed)
    runtime.set_precision(args.precision)
    return strategy


def _train(args):
    """Train one model family and write its directory."""
    strategy = _runtime(args)
    from zoo.recipes import model_dir, tasks
    from zoo.recipes import translation as recipe

    _check_average_epochs(args)
    if args.average_epochs != 1 and args.family not in model_dir.TRANSLATORS:
        raise UserError(
            "--average-epochs applies to translator and rnn-translator; "
            f"received {args.average_epochs} for {args.family}"
        )
    if args.variants and (
        args.family not in model_dir.TRANSLATORS or not _is_trans_de_en(args.data)
    ):
        raise UserError(
            "--variants applies to translators on the trans-de-en dictionary; "
            f"received {args.family} on {args.data or 'its default corpus'}"
        )
    output_dir = args.output_dir or os.path.join("runs", args.family)
    os.makedirs(output_dir, exist_ok=True)
    common = {
        "preset": args.preset,
        "epochs": args.epochs,
        "minutes": args.minutes,
        "seed": args.seed,
        "vocabulary_size": args.vocabulary_size,
        "verbose": _verbose(),
        "strategy": strategy,
    }
    run = {"data": args.data, "preset": args.preset, "seed": args.seed}
    if args.family in model_dir.TRANSLATORS:
        corpus = _translation_corpus(args.data, variants=args.variants)
        result = recipe.train_translator(
            corpus,
            output_dir,
            family=args.family,
            average_last_epochs=args.average_epochs,
            **common,
        )
        model = result["model"]
        scores = recipe.evaluate_translator(
            model, result["source_tokenizer"], result["target_tokenizer"], corpus.test
        )
        metrics = {"bleu": scores["bleu"], "bleu_cased": scores["bleu_cased"]}
        summary = f"test BLEU {scores['bleu']:.2f} (cased {scores['bleu_cased']:.2f})"
        metrics["train_minutes"] = result["train_minutes"]
    elif args.family == "classifier":
        result = tasks.train_classifier(
            _sentiment_corpus(args.data), output_dir, **common
        )
        metrics = {"test_accuracy": result["test_accuracy"]}
        run["max_length"] = result["max_length"]
        summary = f"test accuracy {result['test_accuracy']:.1%}"
    elif args.family == "language-model":
        corpus = _text_corpus(args.data)
        result = tasks.train_language_model(corpus, output_dir, **common)
        metrics = {
            "validation_perplexity": result["validation_perplexity"],
            "test_perplexity": result["test_perplexity"],
        }
        run["sequence_length"] = result["sequence_length"]
        summary = (
            f"validation perplexity {result['validation_perplexity']:.1f}, "
            f"test perplexity {result['test_perplexity']:.1f} (per token)"
        )
    else:
        corpus = _text_corpus(args.data)
        result = tasks.train_masked_language_model(
            (corpus.train, corpus.validation), output_dir, **common
        )
        metrics = {"validation_masked_accuracy": result["validation_masked_accuracy"]}
        summary = (
            "validation masked-token accuracy "
            f"{result['validation_masked_accuracy']:.1%}"
        )
    model = result["model"]
    metrics = {k: round(float(v), 4) for k, v in metrics.items()}
    metrics["params"] = int(model.count_params())
    metrics["epochs"] = len(result["history"]["loss"])
    model_dir.save_model_dir(output_dir, args.family, model, {**run, **metrics})
    print(f"{args.family}: {summary}; {metrics['params']:,} parameters")
    if args.family == "language-model":
        prompt = " ".join(corpus.validation[0].split()[:4])
        sample = _language_model_sample(model, result["tokenizer"], prompt, args.seed)
        print(f"sample: {sample}")
    print(f"saved to {output_dir}")
    return 0


def _language_model_sample(model, tokenizer, prompt, seed, tokens=80):
    """A top-k sample continuing `prompt`, its lines joined by " / "."""
    import numpy as np

    from keras_seq import text
    from zoo.recipes.translation import tokenize_to_lists

    ids = np.asarray(tokenize_to_lists(tokenizer, [prompt]), "int32")
    tokens = min(tokens, model.get_config()["max_length"] - ids.shape[1])
    # Lines end with [END] in training; sampling runs past it, so the
    # sample spans several lines.
    new = model.generate(
        ids,
        max_new_tokens=tokens,
        strategy="sample",
        top_k=20,
        seed=seed,
        end_token_id=None,
    )
    stream = np.concatenate([ids[0], np.asarray(new)[0]]).tolist()
    lines, line = [], []
    for token in stream + [text.END_ID]:
        if token == text.END_ID:
            lines.append(line)
            line = []
        else:
            line.append(token)
    decoded = text.detokenize(tokenizer, [row or [0] for row in lines])
    return " / ".join(line for line in decoded if line)


def _read_inputs(texts):
    if texts:
        return list(texts)
    return [line.rstrip("\n") for line in sys.stdin if line.strip()]


def _translate(args):
    """Translate sentences given as arguments, or one per line on stdin."""
    from zoo.recipes import model_dir
    from zoo.recipes import translation as recipe

    if bool(args.model_dir) == bool(args.saved_model):
        raise UserError("give exactly one of --model-dir and --saved-model.")
    sentences = _read_inputs(args.texts)
    if args.saved_model:
        outputs = _serve(args.saved_model, sentences)
    else:
        loaded = _load(args.model_dir)
        if loaded["family"] not in model_dir.TRANSLATORS:
            raise UserError(
                f"--model-dir {args.model_dir} holds a {loaded['family']}; "
                "`translate` needs a translator or rnn-translator."
            )
        outputs = recipe.translate_texts(
            loaded["model"],
            loaded["tokenizers"]["source"],
            loaded["tokenizers"]["target"],
            sentences,
        )
    for output in outputs:
        print(output)
    return 0


def _latest_version(path):
    """`path` itself if it holds a SavedModel, else its newest version."""
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        return path
    versions = sorted(
        int(name)
        for name in (os.listdir(path) if os.path.isdir(path) else [])
        if name.isdigit() and os.path.isfile(os.path.join(path, name, "saved_model.pb"))
    )
    if not versions:
        raise UserError(
            f"--saved-model {path}: no saved_model.pb in it or in a numbered "
            "version directory under it."
        )
    return os.path.join(path, str(versions[-1]))


def _serve(path, sentences):
    """Translate through an exported SavedModel's `serving_default`."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    version = _latest_version(path)
    try:
        served = tf.saved_model.load(version)
    except (OSError, ValueError, tf.errors.OpError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error) else ""
        raise UserError(
            f"--saved-model {path}: cannot load {version}/saved_model.pb "
            f"({type(error).__name__}: {first_line})"
        ) from None
    signature = served.signatures.get("serving_default")
    if signature is None or "translations" not in signature.structured_outputs:
        outputs = sorted(signature.structured_outputs) if signature else []
        raise UserError(
            f"--saved-model {path}: its serving_default signature maps "
            f"`sentences` to {outputs}; expected `translations` (an exported "
            "translator)."
        )
    batch = tf.constant(sentences, tf.string) if sentences else tf.zeros([0], tf.string)
    result = signature(sentences=batch)
    return [t.decode("utf-8") for t in result["translations"].numpy()]


def _export(args):
    """Export a trained model directory as a SavedModel for TF Serving."""
    from keras_seq import export

    loaded = _load(args.model_dir)
    family, model, run = loaded["family"], loaded["model"], loaded["run"]
    tokenizers = loaded["tokenizers"]
    if family == "translator":
        path = export.export_translator(
            model,
            tokenizers["source"],
            tokenizers["target"],
            args.export_dir,
            version=args.version,
        )
    elif family == "classifier":
        path = export.export_classifier(
            model,
            tokenizers["text"],
            args.export_dir,
            version=args.version,
            max_length=run.get("max_length"),
        )
    elif family == "language-model":
        path = export.export_language_model(
            model, tokenizers["text"], args.export_dir, version=args.version
        )
    else:
        raise UserError(
            f"`export` serves translator, classifier and language-model "
            f"directories; {args.model_dir} holds a {family}."
        )
    print(f"exported {family} to {path}")
    return 0


def _load(path):
    from zoo.recipes import model_dir

    try:
        return model_dir.load_model_dir(path)
    except ValueError as error:
        raise UserError(str(error)) from None


def _loss(model, dataset):
    return float(model.evaluate(dataset, verbose=0, return_dict=True)["loss"])


def _evaluate(args):
    """Score a trained model on the test split of its data (or `--data`)."""
    from keras_seq import text
    from zoo.recipes import model_dir
    from zoo.recipes import translation as recipe

    loaded = _load(args.model_dir)
    family, model, run = loaded["family"], loaded["model"], loaded["run"]
    data = args.data or run.get("data")
    if family in model_dir.TRANSLATORS:
        corpus = _translation_corpus(data)
        tokenizers = loaded["tokenizers"]
        scores = recipe.evaluate_translator(
            model, tokenizers["source"], tokenizers["target"], corpus.test
        )
        result = {"bleu": scores["bleu"], "bleu_cased": scores["bleu_cased"]}
    elif family == "classifier":
        from zoo.recipes.tasks import classify_texts

        corpus = _sentiment_corpus(data)
        probabilities = classify_texts(
            model,
            loaded["tokenizers"]["text"],
            [t for t, _ in corpus.test],
            run.get("max_length", model.get_config()["max_length"]),
        )
        labels = [label for _, label in corpus.test]
        accuracy = float((probabilities.argmax(-1) == labels).mean())
        result = {"test_accuracy": accuracy}
    else:
        import math

        from keras_seq.losses import MaskedSparseCategoricalCrossentropy

        corpus = _text_corpus(data)
        tokenizer = loaded["tokenizers"]["text"]
        model.compile(loss=MaskedSparseCategoricalCrossentropy())
        if family == "language-model":
            length = run.get("sequence_length", 128)
            dataset = text.make_language_model_dataset(
                corpus.test, tokenizer, length, 32
            )
            result = {"test_perplexity": math.exp(_loss(model, dataset))}
        else:
            dataset = text.make_masked_language_model_dataset(
                corpus.test, tokenizer, model.get_config()["max_length"], 64
            )
            result = {"test_masked_loss": _loss(model, dataset)}
    print(json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


def _bench(args):
    """Run `benchmarks/run.py` of this source tree with the given options."""
    import importlib.util

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "benchmarks", "run.py")
    if not os.path.exists(path):
        raise UserError(
            f"the benchmarks are not installed ({path} is missing); run "
            "`keras-seq bench` from a source checkout of keras-seq"
        )
    spec = importlib.util.spec_from_file_location("keras_seq_benchmarks_run", path)
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    argv = ["--quick"] if args.quick else []
    for flag, value in (("--repeats", args.repeats), ("--output-dir", args.output_dir)):
        if value is not None:
            argv += [flag, str(value)]
    for flag, values in (("--backends", args.backends), ("--configs", args.configs)):
        if values:
            argv += [flag, *values]
    argv += [] if args.memory else ["--no-memory"]
    argv += [] if args.torch else ["--no-torch"]
    return run.main(argv)


VARIANTS_HELP = (
    "add the dictionary's further sentence pairs (other synonyms, slashed "
    "alternatives) to the training set"
)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-seq", description="Sequence models for Keras 3."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="train the small German->English translator and report BLEU"
    )
    demo.add_argument("--output-dir", default="runs/demo")
    demo.add_argument("--preset", default="small")
    demo.add_argument("--epochs", type=int, default=60)
    demo.add_argument(
        "--minutes", type=float, default=15.0, help="training time budget"
    )
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument(
        "--beam-width", type=int, default=4, help="beams for the test translations"
    )
    demo.add_argument(
        "--corpus", default="/usr/share/trans/de-en", help="the trans-de-en file"
    )
    demo.add_argument(
        "--train-pairs",
        type=int,
        default=None,
        help="train on a random N of the training pairs (drawn with --seed)",
    )
    demo.add_argument(
        "--average-epochs",
        type=int,
        default=5,
        help="end with the mean weights of the last N epochs (1: the last weights)",
    )
    demo.add_argument(
        "--phrases",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="add the dictionary's phrase pairs to the training set",
    )
    demo.add_argument(
        "--variants",
        action=argparse.BooleanOptionalAction,
        default=False,
        help=VARIANTS_HELP,
    )
    demo.set_defaults(run=_demo)

    train = commands.add_parser("train", help="train a model family on a corpus")
    train.add_argument("family", choices=FAMILIES)
    train.add_argument(
        "--data",
        default=None,
        help=(
            "a corpus name (trans-de-en, movie-reviews, shakespeare) or a file: "
            "source<TAB>target for translators, text<TAB>label for the "
            "classifier, one text per line for language models"
        ),
    )
    train.add_argument("--preset", default="small")
    train.add_argument("--epochs", type=int, default=10)
    train.add_argument("--minutes", type=float, default=None)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--vocabulary-size", type=int, default=8000)
    train.add_argument("--output-dir", default=None, help="default: runs/<family>")
    train.add_argument(
        "--average-epochs",
        type=int,
        default=1,
        help="translators: end with the mean weights of the last N epochs",
    )
    train.add_argument(
        "--variants",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="translators on trans-de-en: " + VARIANTS_HELP,
    )
    train.add_argument(
        "--strategy",
        choices=("none", "mirrored", "multi-worker"),
        default="none",
        help=(
            "tf.distribute strategy: mirrored over local devices, or multi-worker "
            "across machines (cluster in TF_CONFIG)"
        ),
    )
    train.add_argument(
        "--precision",
        choices=("float32", "mixed_float16", "mixed_bfloat16"),
        default="float32",
        help="Keras dtype policy (mixed_float16 adds loss scaling)",
    )
    train.add_argument(
        "--deterministic",
        action="store_true",
        help=(
            "TensorFlow op determinism: the same command gives the same weights, "
            "also when resumed after an interruption"
        ),
    )
    train.set_defaults(run=_train)

    translate = commands.add_parser(
        "translate", help="translate sentences (arguments, or lines on stdin)"
    )
    translate.add_argument("--model-dir", default=None)
    translate.add_argument(
        "--saved-model", default=None, help="an exported SavedModel (or its base)"
    )
    translate.add_argument("texts", nargs="*")
    translate.set_defaults(run=_translate)

    export = commands.add_parser(
        "export", help="export a trained model as a SavedModel (TF Serving layout)"
    )
    export.add_argument("--model-dir", required=True)
    export.add_argument("--export-dir", required=True)
    export.add_argument("--version", type=int, default=1)
    export.set_defaults(run=_export)

    evaluate = commands.add_parser(
        "evaluate", help="score a trained model on its test split"
    )
    evaluate.add_argument("--model-dir", required=True)
    evaluate.add_argument("--data", default=None, help="default: the training data")
    evaluate.set_defaults(run=_evaluate)

    bench = commands.add_parser(
        "bench", help="benchmark against the peers; writes benchmarks/results/"
    )
    bench.add_argument("--repeats", type=int, default=None, help="default 5")
    bench.add_argument("--backends", nargs="+", default=None)
    bench.add_argument("--configs", nargs="+", default=None, help="small base")
    bench.add_argument("--output-dir", default=None)
    bench.add_argument("--quick", action="store_true", help="tiny sizes, once")
    bench.add_argument("--memory", action=argparse.BooleanOptionalAction, default=True)
    bench.add_argument("--torch", action=argparse.BooleanOptionalAction, default=True)
    bench.set_defaults(run=_bench)
    return parser


def main(argv=None):
    _quiet_tensorflow()
    args = build_parser().parse_args(argv)
    from zoo.recipes import runtime

    runtime.tune_allocator()  # Every command reuses its large buffers.
    from keras_seq.data import CorpusNotFoundError

    try:
        return args.run(args)
    except (CorpusNotFoundError, UserError, ValueError) as error:
        # Bad data or arguments: the message names them; a traceback would
        # only hide it.
        print(f"keras-seq: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

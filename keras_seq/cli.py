"""The `keras-seq` command line.

Errors the user can fix (a missing corpus, a bad file, a bad argument) are
printed as one line on stderr with exit status 1, never a traceback.
"""

import argparse
import dataclasses
import os
import sys


def _quiet_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


class UserError(Exception):
    """An error whose message is all the user needs."""


def _demo(args):
    """Train the `small` translator German->English and report test BLEU."""
    import random

    import numpy as np

    from keras_seq.data import load_trans_de_en
    from keras_seq.recipes import plots
    from keras_seq.recipes import translation as recipe
    from keras_seq.text import END_ID

    os.makedirs(args.output_dir, exist_ok=True)
    corpus = load_trans_de_en(args.corpus, include_phrases=args.phrases)
    if args.train_pairs:
        corpus = dataclasses.replace(corpus, train=corpus.train[: args.train_pairs])
    print(
        f"trans-de-en: {len(corpus.train):,} training pairs "
        f"({corpus.phrases_added:,} dictionary phrases), "
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
        verbose=1 if sys.stdout.isatty() else 2,
    )
    model = result["model"]
    scores = recipe.evaluate_translator(
        model, result["source_tokenizer"], result["target_tokenizer"], corpus.test
    )
    model_path = os.path.join(args.output_dir, "translator.keras")
    model.save(model_path)

    plots.plot_learning_curves(
        result["history"],
        result["bleu_history"],
        os.path.join(args.output_dir, "learning_curves.png"),
    )
    source, _ = corpus.test[3]
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
        "train_minutes": round(result["train_minutes"], 2),
        "vocabulary_minutes": round(result["vocabulary_minutes"], 2),
        "params": int(model.count_params()),
        "epochs": len(result["history"]["loss"]),
        "bleu_history": result["bleu_history"],
        "preset": args.preset,
        "seed": args.seed,
        "test_pairs": len(corpus.test),
    }
    recipe.write_metrics(os.path.join(args.output_dir, "metrics.json"), metrics)
    print(
        f"\ntest BLEU {metrics['bleu']:.2f} (lowercase), "
        f"{metrics['bleu_cased']:.2f} (cased) after "
        f"{metrics['train_minutes']:.1f} training minutes, "
        f"{metrics['params']:,} parameters"
    )
    print("sample translations (source | reference | model):")
    picks = random.Random(args.seed).sample(range(len(corpus.test)), 8)
    for i in picks:
        source, reference = corpus.test[i]
        print(f"  {source}\n    ref: {reference}\n    out: {scores['hypotheses'][i]}")
    print(f"saved model, vocabularies, figures and metrics.json to {args.output_dir}")
    return 0


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
        "--corpus", default="/usr/share/trans/de-en", help="the trans-de-en file"
    )
    demo.add_argument(
        "--train-pairs", type=int, default=None, help="use only the first N pairs"
    )
    demo.add_argument(
        "--phrases",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="add the dictionary's phrase pairs to the training set",
    )
    demo.set_defaults(run=_demo)
    return parser


def main(argv=None):
    _quiet_tensorflow()
    args = build_parser().parse_args(argv)
    from keras_seq.data import CorpusNotFoundError

    try:
        return args.run(args)
    except (CorpusNotFoundError, UserError) as error:
        print(f"keras-seq: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

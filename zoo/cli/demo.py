"""`keras-seq demo`: train the `small` translator German->English, end to end.

Trains on trans-de-en, reports test BLEU (beam and greedy), draws the
learning curves and a cross-attention map, writes the model directory,
then exports a SavedModel and checks that serving translates as the model
does.
"""

import argparse
import dataclasses
import os
import random

import numpy as np

from keras_seq.text import END_ID, START_ID
from zoo.cli import corpora, run_dirs, serving, train
from zoo.cli.errors import check_at_least
from zoo.cli.families import FAMILIES, bleu_scores
from zoo.recipes import model_dir, plots, translation


def add_parser(commands):
    """Adds `demo` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "demo", help="train the small German->English translator and report BLEU"
    )
    parser.add_argument("--output-dir", default="runs/demo", help="the model directory")
    train.add_overwrite_argument(parser)
    parser.add_argument(
        "--preset", default="small", help="see `keras-seq presets translator`"
    )
    parser.add_argument("--epochs", type=int, default=60, help="the most epochs")
    parser.add_argument(
        "--minutes", type=float, default=15.0, help="training time budget"
    )
    parser.add_argument("--seed", type=int, default=0, help="of every random draw")
    parser.add_argument(
        "--beam-width", type=int, default=4, help="beams for the test translations"
    )
    parser.add_argument(
        "--corpus", default="/usr/share/trans/de-en", help="the trans-de-en file"
    )
    parser.add_argument(
        "--train-pairs",
        type=int,
        default=None,
        help="train on a random N of the training pairs (drawn with --seed)",
    )
    parser.add_argument(
        "--average-epochs",
        type=int,
        default=5,
        help="end with the mean weights of the last N epochs (1: the last weights)",
    )
    parser.add_argument(
        "--phrases",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="add the dictionary's phrase pairs to the training set",
    )
    parser.add_argument(
        "--variants",
        action=argparse.BooleanOptionalAction,
        default=False,
        help=train.VARIANTS_HELP,
    )
    parser.set_defaults(run=run)


# What makes two demo runs the same run (see `train.settings`).
SETTINGS = (
    "corpus", "preset", "seed", "train_pairs", "average_epochs", "phrases",
    "variants",
)  # fmt: skip


def run(args):
    """Runs the demo: train, score, plot, save, export and serve.

    Returns:
        0, the exit status.
    """
    train.check_common(args, FAMILIES["translator"].presets)
    check_at_least(args.train_pairs, "--train-pairs")
    check_at_least(args.beam_width, "--beam-width")
    corpus = _corpus(args)
    resumed = run_dirs.claim(
        args.output_dir, train.settings(args, SETTINGS), args.overwrite
    )
    try:
        return _train_and_report(args, corpus, resumed)
    finally:
        run_dirs.release(args.output_dir)


def _train_and_report(args, corpus, resumed):
    """Trains into the claimed `--output-dir`, then scores, saves and serves."""
    train.announce_resume(args.output_dir, resumed, args.epochs)
    result = translation.train_translator(
        corpus,
        args.output_dir,
        preset=args.preset,
        epochs=args.epochs,
        minutes=args.minutes,
        seed=args.seed,
        average_last_epochs=args.average_epochs,
        verbose=train.verbose(),
    )
    model = result["model"]
    preprocessor = result["preprocessor"]
    print(f"translating the {len(corpus.test):,} test sentences...", flush=True)
    greedy = translation.evaluate_translator(model, preprocessor, corpus.test)
    scores = translation.evaluate_translator(
        model, preprocessor, corpus.test, strategy="beam", beam_width=args.beam_width
    )
    _plot(result, corpus, args.output_dir)
    metrics = _metrics(args, result, corpus, scores, greedy)
    translation.write_metrics(os.path.join(args.output_dir, "metrics.json"), metrics)
    model_dir.save_model_dir(
        args.output_dir,
        "translator",
        model,
        {
            "data": args.corpus,
            **bleu_scores(scores, args.beam_width),
            **bleu_scores(greedy, 1),
        },
    )
    picks = _report(args, metrics, corpus, scores)
    _serve_samples(args, result, corpus, picks, greedy)
    print(f"saved model, vocabularies, figures and metrics.json to {args.output_dir}")
    return 0


def _corpus(args):
    """trans-de-en as `--corpus`, `--phrases`, `--variants`, `--train-pairs` ask."""
    corpus = corpora.trans_de_en(
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
    return corpus


def _plot(result, corpus, output_dir):
    """The learning curves and the cross attention of one test sentence."""
    model = result["model"]
    source_tokenizer = result["source_tokenizer"]
    plots.plot_learning_curves(
        result["history"],
        result["bleu_history"],
        os.path.join(output_dir, "learning_curves.png"),
    )
    # A sentence of middling length, so the alignment has room to show.
    source = next(
        (s for s, _ in corpus.test if 7 <= len(s.split()) <= 10), corpus.test[0][0]
    )
    source_ids = np.asarray(
        translation.tokenize_to_lists(source_tokenizer, [source]), "int32"
    )[:, : model.max_length]  # Cut as every translation cuts it.
    output = np.asarray(model.generate(source_ids))[0].tolist()
    output = output[: output.index(END_ID) + 1] if END_ID in output else output
    decoder_ids = np.asarray([[START_ID] + output[:-1]], "int32")
    weights = np.asarray(model.cross_attention_weights(source_ids, decoder_ids))
    vocab_s = source_tokenizer.get_vocabulary()
    vocab_t = result["target_tokenizer"].get_vocabulary()
    plots.plot_attention(
        weights[0].mean(axis=0),
        [vocab_s[i] for i in source_ids[0]],
        [vocab_t[i] for i in output],
        os.path.join(output_dir, "attention.png"),
        title="Cross attention, last decoder block (mean of heads)",
    )


def _metrics(args, result, corpus, scores, greedy):
    """The figures of `metrics.json`."""
    return {
        "bleu": round(scores["bleu"], 2),
        "bleu_cased": round(scores["bleu_cased"], 2),
        "bleu_greedy": round(greedy["bleu"], 2),
        "beam_width": args.beam_width,
        "train_minutes": round(result["train_minutes"], 2),
        "vocabulary_minutes": round(result["vocabulary_minutes"], 2),
        "params": int(result["model"].count_params()),
        "epochs": len(result["history"]["loss"]),
        "averaged_epochs": result["averaged_epochs"],
        "bleu_history": result["bleu_history"],
        "preset": args.preset,
        "seed": args.seed,
        "test_pairs": len(corpus.test),
    }


def _report(args, metrics, corpus, scores):
    """Prints the scores and 8 sample translations; the samples' indices."""
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
    return picks


def _serve_samples(args, result, corpus, picks, greedy):
    """Exports a new SavedModel version and translates the samples through it."""
    export_root = os.path.join(args.output_dir, "saved_model")
    existing = os.listdir(export_root) if os.path.isdir(export_root) else []
    version = 1 + max([int(v) for v in existing if v.isdigit()], default=0)
    trained = model_dir.TrainedModel(
        args.output_dir,
        "translator",
        result["model"],
        {},
        {"source": result["source_tokenizer"], "target": result["target_tokenizer"]},
    )
    path = FAMILIES["translator"].export(trained, export_root, version)
    served = serving.serve(path, [corpus.test[i][0] for i in picks])
    # `serving_default` decodes greedily: compare with the greedy outputs.
    same = sum(a == greedy["hypotheses"][i] for a, i in zip(served, picks))
    print(
        f"SavedModel {path}: {same} of {len(picks)} greedy sample translations "
        "identical through serving_default"
    )
    for i, output in zip(picks[:3], served):
        print(f"  {corpus.test[i][0]}\n    served: {output}")

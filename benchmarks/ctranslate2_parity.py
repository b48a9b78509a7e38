"""A trained translator against its CTranslate2 exports, sentence by sentence.

On a run directory (`runs/demo`) and its test split (the 898 trans-de-en
test pairs for the demo):

- greedy ids of CTranslate2 float32 against `model.generate`'s; each
  sentence that differs is listed with the logit gap at its first
  divergence: the model's logit of its own token minus that of
  CTranslate2's token, given the shared prefix (a gap near zero is a
  near-tie that float rounding may break either way);
- 4 beams at length penalty 0 (CTranslate2 divides a score by
  `length ** alpha`, `beam_search` by GNMT's `((5 + n) / 6) ** alpha`;
  only alpha 0 makes them the same ranking): the best hypotheses, and the
  whole 4-best lists;
- cased test BLEU (lowercased beside it) of the model, CTranslate2 float32
  and int8, greedy and 4 beams (the run's length penalty), and the
  `model.bin` sizes.

    python -m benchmarks.ctranslate2_parity --run runs/demo --output parity.json
"""

import argparse
import json
import os
import tempfile

import numpy as np

BEAMS = 4


def _model_ids(model, batches, **options):
    """`generate` / `beam_search` ids per sentence (position order)."""
    import keras

    from keras_seq.text.vocabulary import END_ID

    def until_end(row):
        row = list(row)
        return row[: row.index(END_ID)] if END_ID in row else row

    out = {}
    for positions, batch in batches:
        if options.get("num_return"):
            ids, _ = model.beam_search(batch, **options)
            rows = keras.ops.convert_to_numpy(ids).tolist()
            rows = [[until_end(h) for h in r] for r in rows]
        else:
            rows = keras.ops.convert_to_numpy(model.generate(batch, **options))
            rows = [until_end(r) for r in rows.tolist()]
        out.update(zip(positions, rows))  # The filler rows come last.
    return [out[i] for i in sorted(out)]


def _gap(model, source, ours, theirs):
    """The model's logit of its token minus CTranslate2's at the first step
    where the two greedy outputs differ, given the shared prefix."""
    import keras

    from keras_seq.text.vocabulary import END_ID, START_ID

    ours, theirs = [*ours, END_ID], [*theirs, END_ID]
    step = next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)
    decoder = np.array([[START_ID, *ours[:step]]], "int32")
    logits = model(
        {"encoder_token_ids": np.array([source], "int32"), "decoder_token_ids": decoder}
    )
    last = keras.ops.convert_to_numpy(logits)[0, -1]
    return step, float(last[ours[step]] - last[theirs[step]])


def _sources(trained, texts):
    """Batches of source ids as `translate_texts` makes them, and the rows
    without padding for CTranslate2, in the order of `texts`."""
    batches, rows = [], {}
    for positions, batch, blank in trained.preprocessor.decode_batches(texts, 128):
        batch = np.asarray(batch)
        batches.append((list(positions), batch))
        for i, row, empty in zip(positions, batch, blank):
            rows[i] = [] if empty else [int(t) for t in row if t]
    return batches, [rows[i] for i in range(len(texts))]


def _bleu(preprocessor, rows, references):
    from keras_seq.text.vocabulary import END_ID, START_ID
    from zoo.recipes.bleu import corpus_bleu

    padded = np.zeros((len(rows), max(map(len, rows)) + 2), "int32")
    for i, row in enumerate(rows):
        padded[i, : len(row) + 2] = [START_ID, *row, END_ID]
    hypotheses = preprocessor.detokenize(padded)
    return {
        "bleu": round(corpus_bleu(hypotheses, references), 2),
        "bleu_lowercase": round(corpus_bleu(hypotheses, references, True), 2),
    }


def measure(run, ct2_threads=1, limit=None):
    from keras_seq import defaults
    from keras_seq.export.ctranslate2 import export_ctranslate2
    from zoo.recipes import corpora, model_dir
    from zoo.serving.ctranslate2_model import CTranslate2Model

    trained = model_dir.load_model_dir(run)
    corpus = corpora.translation_corpus(corpora.recorded_data(trained.run, run))
    pairs = corpus.test[:limit]
    texts, references = [s for s, _ in pairs], [t for _, t in pairs]
    batches, rows = _sources(trained, texts)
    model = trained.model
    length = trained.preprocessor.length_limit - 1
    # The run's test scoring decodes with the library's length penalty.
    alpha = defaults.LENGTH_PENALTY
    report = {"run": os.path.abspath(run), "sentences": len(texts)}
    with tempfile.TemporaryDirectory() as directory:
        engines = {}
        for quantization in ("float32", "int8"):
            out = os.path.join(directory, quantization)
            export_ctranslate2(model, run, out, quantization=quantization)
            report[f"model_bin_mb_{quantization}"] = round(
                os.path.getsize(os.path.join(out, "model.bin")) / 1e6, 2
            )
            engines[quantization] = CTranslate2Model(out, intra_threads=ct2_threads)
        ours = _model_ids(model, batches, max_new_tokens=length)
        theirs = engines["float32"].translate_ids(rows, max_batch_size=128)
        differing = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
        gaps = [(i, *_gap(model, rows[i], ours[i], theirs[i])) for i in differing]
        report["greedy"] = {
            "identical": len(texts) - len(differing),
            "differing": [
                {"sentence": i, "step": s, "logit_gap": round(g, 6)} for i, s, g in gaps
            ],
        }
        nbest_ours = _model_ids(
            model, batches, beam_width=BEAMS, length_penalty=0.0, num_return=BEAMS,
            max_new_tokens=length,
        )  # fmt: skip
        nbest_theirs = engines["float32"].translate_ids(
            rows,
            beam_width=BEAMS,
            num_hypotheses=BEAMS,
            length_penalty=0.0,
            max_batch_size=128,
        )
        pairs = list(zip(nbest_ours, nbest_theirs))
        report["beams_alpha0"] = {
            "best_identical": sum(a[0] == b[0] for a, b in pairs),
            "nbest_identical": sum(a == b for a, b in pairs),
        }
        preprocessor = trained.preprocessor
        bleu = {"model greedy": _bleu(preprocessor, ours, references)}
        beams = _model_ids(
            model, batches, max_new_tokens=length, strategy="beam",
            beam_width=BEAMS, length_penalty=alpha,
        )  # fmt: skip
        bleu["model 4 beams"] = _bleu(preprocessor, beams, references)
        for quantization, engine in engines.items():
            for width in (1, BEAMS):
                got = engine.translate_ids(
                    rows, beam_width=width, length_penalty=alpha if width > 1 else 0.0,
                    max_batch_size=128,
                )  # fmt: skip
                name = "greedy" if width == 1 else "4 beams"
                bleu[f"ctranslate2 {quantization} {name}"] = _bleu(
                    preprocessor, got, references
                )
        report["bleu"] = bleu
        report["length_penalty"] = alpha
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="runs/demo")
    parser.add_argument("--ct2-threads", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="test pairs")
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    report = measure(args.run, args.ct2_threads, args.limit)
    text = json.dumps(report, indent=1)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()

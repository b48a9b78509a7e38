"""BLEU of a translator's test split with the reference's first k tokens
forced (`TrainedModel.translate(..., target_prefix=...)`), k = 0..K.

Interactive translation starts from what a translator has typed: forcing
the first k tokens of the reference and letting the model continue. The
test split is the run's own (the data it trained on, split as it was); the
prefix of each reference is its first k target tokens, detokenized, which
the translator tokenizes again.

    python scripts/prefix_bleu.py --model-dir runs/demo --output prefix.json
"""

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--max-k", type=int, default=4)
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)

    import numpy as np
    import tensorflow as tf

    import zoo
    from zoo.recipes import corpora
    from zoo.recipes.bleu import corpus_bleu
    from zoo.recipes.families import FAMILIES

    trained = zoo.load_model_dir(args.model_dir)
    recipe = FAMILIES[trained.family]
    settings = recipe.default_settings()
    corpus = recipe.read_corpus(
        corpora.recorded_data(trained.run, trained.path), settings
    )
    sources = [source for source, _ in corpus.test]
    references = [target for _, target in corpus.test]
    preprocessor = trained.preprocessor
    rows = preprocessor.tokenize_target(tf.constant(references)).to_list()
    figures = []
    for k in range(args.max_k + 1):
        prefixes = [
            preprocessor.detokenize(np.asarray([row[:k]], "int32"))[0] if k else ""
            for row in rows
        ]
        started = time.perf_counter()
        hypotheses = trained.translate(
            sources, beam_width=args.beam_width, target_prefix=prefixes
        )
        seconds = time.perf_counter() - started
        figure = {
            "k": k,
            "bleu": corpus_bleu(hypotheses, references),
            "bleu_lowercase": corpus_bleu(hypotheses, references, lowercase=True),
            "seconds": seconds,
            "example": [sources[0], prefixes[0], hypotheses[0], references[0]],
        }
        print(json.dumps(figure), flush=True)
        figures.append(figure)
    result = {
        "model_dir": args.model_dir,
        "test_pairs": len(sources),
        "beam_width": args.beam_width,
        "date": time.strftime("%Y-%m-%d"),
        "load": os.getloadavg(),
        "figures": figures,
    }
    if args.output:
        with open(args.output, "w", encoding="utf-8") as file:
            file.write(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

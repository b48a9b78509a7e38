"""OPUS-MT-sized Marian translation speed: the zoo, transformers, CTranslate2.

One random Marian checkpoint of OPUS-MT's size (`--config opus-mt`: width
512, 6 + 6 layers, 8 heads, feed-forward 2048, a shared 58,101-piece
vocabulary, Swish, static sinusoidal positions, scaled embeddings) is
written once, as transformers' `save_pretrained` writes it, with its
CTranslate2 conversions (`ctranslate2.converters.TransformersConverter`,
float32 and int8). Its `final_logits_bias` at `</s>` (and `<pad>`) is
-1e4, so every implementation decodes exactly `--new-tokens` tokens per
sentence: each figure is the same work. Sentences per second, greedy and
with 4 beams, at batch 1 and 32, of:

- `zoo-tensorflow`, `zoo-jax`: `zoo.pretrained.marian.load_marian` of the
  checkpoint, then the translator's compiled loops, `model.generate(ids,
  max_new_tokens=N)` and `model.beam_search(ids, N, beam_width=4)`, from
  zoo ids to zoo ids (no tokenization), until the ids are on the host;
- `transformers`: `MarianMTModel.generate(input_ids, attention_mask,
  num_beams=1 or 4, max_new_tokens=N, do_sample=False,
  bad_words_ids=[[<pad>]])` (OPUS-MT's generation settings) under
  `torch.inference_mode()`, from Marian ids to Marian ids;
- `ct2-float32`, `ct2-int8`: `ctranslate2.Translator.translate_batch`
  from Marian's pieces to pieces (the string-id lookups in C++ included,
  no SentencePiece).

Every source is the same 23 random pieces and `</s>` (what
`MarianTokenizer` appends), 24 tokens, each mapped to the ids or pieces an
implementation reads; batch 32 is 32 such rows, none padded. Every worker
is pinned to the same `--threads` processors, and each library is told
that many (TensorFlow's intra-op pool, `torch.set_num_threads`,
CTranslate2's `intra_threads`; JAX's pool follows the pinning).

Every implementation is timed in fresh processes, taken in turn (`--rounds`
rounds of one process each, the order rotated every round), and each
figure is the median of the per-process medians; the CTranslate2 and
transformers workers never import TensorFlow or Keras.

    python -m benchmarks.marian_speed --rounds 3 \
        --output benchmarks/results/marian_speed.json
"""

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib import metadata

from benchmarks.report import size_line, throughput_rows, throughput_table
from benchmarks.timing import load_average

IMPLEMENTATIONS = (
    "zoo-tensorflow",
    "zoo-jax",
    "transformers",
    "ct2-float32",
    "ct2-int8",
)
BASELINE = "transformers"
CASES = tuple((batch, beams) for beams in (1, 4) for batch in (1, 32))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_LENGTH = 24  # Pieces per source, its </s> included.
LENGTH_PENALTY = 1.0  # Every hypothesis has N tokens: it changes no choice.
NEVER = -1e4  # The logits bias of </s> and <pad>: never written.
CONFIGS = {
    # Helsinki-NLP/opus-mt-*: d_model 512, 6 + 6 layers, 8 heads, FF 2048.
    "opus-mt": {"width": 512, "layers": 6, "heads": 8, "ff_dim": 2048, "vocab": 58101},
    "tiny": {"width": 32, "layers": 2, "heads": 4, "ff_dim": 64, "vocab": 1000},
}
PREPARED = "prepared.json"
_VERSIONS = ("keras", "tensorflow", "jax", "jaxlib", "torch", "transformers",
             "ctranslate2", "numpy")  # fmt: skip


def marian_pieces(size):
    """Marian's `vocab.json`: `</s>` 0, `<unk>` 1, `<pad>` last, and
    synthetic pieces between."""
    pieces = {"</s>": 0, "<unk>": 1}
    pieces.update({f"▁w{i}": i for i in range(2, size - 1)})
    pieces["<pad>"] = size - 1
    return pieces


def _marian_config(sizes, new_tokens):
    import transformers

    pad = sizes["vocab"] - 1
    return transformers.MarianConfig(
        vocab_size=sizes["vocab"],
        decoder_vocab_size=sizes["vocab"],
        d_model=sizes["width"],
        encoder_layers=sizes["layers"],
        decoder_layers=sizes["layers"],
        encoder_attention_heads=sizes["heads"],
        decoder_attention_heads=sizes["heads"],
        encoder_ffn_dim=sizes["ff_dim"],
        decoder_ffn_dim=sizes["ff_dim"],
        max_position_embeddings=max(512, SOURCE_LENGTH, new_tokens + 1),
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        # OPUS-MT forces </s> at the last position; here no row ends early.
        forced_eos_token_id=None,
        activation_function="swish",
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        static_position_embeddings=True,
        normalize_before=False,
        normalize_embedding=False,
        add_final_layer_norm=False,
        add_bias_logits=False,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
    )


def write_sentencepiece(directory):
    """A tiny SentencePiece model as `source.spm` and `target.spm`:
    `MarianTokenizer`, which CTranslate2's converter loads, needs them;
    the vocabulary it reads is `vocab.json`'s."""
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["guten tag", "die katze schläft"] * 5),
        model_writer=model,
        vocab_size=24,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    for name in ("source.spm", "target.spm"):
        with open(os.path.join(directory, name), "wb") as file:
            file.write(model.getvalue())


def prepare(directory, config, new_tokens):
    """Writes the random checkpoint under `directory/marian` and its
    CTranslate2 conversions under `directory/ct2-{float32,int8}`, unless
    `directory` holds them for the same configuration; returns the
    `prepared.json` summary (sizes of the `model.bin` files)."""
    path = os.path.join(directory, PREPARED)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            prepared = json.load(file)
        if prepared["config"] == config and prepared["new_tokens"] >= new_tokens:
            return prepared
    import ctranslate2
    import torch
    import transformers

    sizes = CONFIGS[config]
    checkpoint = os.path.join(directory, "marian")
    torch.manual_seed(0)
    model = transformers.MarianMTModel(_marian_config(sizes, new_tokens)).eval()
    with torch.no_grad():
        model.final_logits_bias[0, 0] = NEVER  # </s>: a fixed amount of work.
        model.final_logits_bias[0, sizes["vocab"] - 1] = NEVER  # <pad>
    model.save_pretrained(checkpoint)
    with open(os.path.join(checkpoint, "vocab.json"), "w", encoding="utf-8") as file:
        json.dump(marian_pieces(sizes["vocab"]), file, ensure_ascii=False)
    write_sentencepiece(checkpoint)
    bytes_ = {}
    for quantization in ("float32", "int8"):
        out = os.path.join(directory, f"ct2-{quantization}")
        converter = ctranslate2.converters.TransformersConverter(checkpoint)
        converter.convert(out, quantization=quantization, force=True)
        bytes_[f"{quantization}_bytes"] = os.path.getsize(
            os.path.join(out, "model.bin")
        )
    prepared = {"config": config, "new_tokens": new_tokens, **bytes_}
    with open(path, "w", encoding="utf-8") as file:
        json.dump(prepared, file)
    return prepared


def source_ids(vocab, batch, seed=0):
    """(batch, SOURCE_LENGTH) Marian ids: random pieces, then `</s>` (0);
    every row of a batch of 32 begins with the sentence of batch 1."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = rng.integers(2, vocab - 1, (32, SOURCE_LENGTH - 1))[:batch]
    return np.concatenate([rows, np.zeros((batch, 1), rows.dtype)], axis=1)


def _count(rows, ends):
    """Tokens per row, up to the first id in `ends`; (min, max)."""
    counts = []
    for row in rows:
        row = list(row)
        stops = [row.index(e) for e in ends if e in row]
        counts.append(min(stops) if stops else len(row))
    return min(counts), max(counts)


def _zoo_calls(directory, new_tokens):
    import keras
    import numpy as np

    from keras_seq.text import END_ID, PAD_ID
    from zoo.pretrained.marian import load_marian

    loaded = load_marian(os.path.join(directory, "marian"))
    model, vocabulary = loaded.model, loaded.source_vocabulary
    zoo_ids = np.asarray([vocabulary.zoo_id(i) for i in range(vocabulary.marian_size)])

    def call(batch, beams):
        ids = zoo_ids[source_ids(vocabulary.marian_size, batch)].astype("int32")
        if beams == 1:
            return lambda: _count(
                keras.ops.convert_to_numpy(model.generate(ids, new_tokens)),
                (END_ID, PAD_ID),
            )
        return lambda: _count(
            keras.ops.convert_to_numpy(
                model.beam_search(
                    ids, new_tokens, beam_width=beams, length_penalty=LENGTH_PENALTY
                )[0]
            )[:, 0],
            (END_ID, PAD_ID),
        )

    return call


def _transformers_calls(directory, new_tokens, threads):
    import torch
    import transformers

    torch.set_num_threads(threads)
    model = transformers.MarianMTModel.from_pretrained(
        os.path.join(directory, "marian")
    ).eval()
    pad, end = model.config.pad_token_id, model.config.eos_token_id

    def call(batch, beams):
        input_ids = torch.as_tensor(source_ids(pad + 1, batch))
        mask = torch.ones_like(input_ids)

        def translate():
            with torch.inference_mode():
                output = model.generate(
                    input_ids=input_ids,
                    attention_mask=mask,
                    num_beams=beams,
                    length_penalty=LENGTH_PENALTY,
                    max_new_tokens=new_tokens,
                    do_sample=False,
                    bad_words_ids=[[pad]],
                )
            return _count(output[:, 1:].tolist(), (end, pad))  # After the start.

        return translate

    return call


def _ct2_calls(directory, implementation, new_tokens, threads):
    import ctranslate2

    translator = ctranslate2.Translator(
        os.path.join(directory, implementation), device="cpu", intra_threads=threads
    )
    with open(
        os.path.join(directory, "marian", "vocab.json"), encoding="utf-8"
    ) as file:
        pieces = {i: piece for piece, i in json.load(file).items()}

    def call(batch, beams):
        tokens = [
            [pieces[int(i)] for i in row] for row in source_ids(len(pieces), batch)
        ]

        def translate():
            results = translator.translate_batch(
                tokens,
                beam_size=beams,
                length_penalty=LENGTH_PENALTY,
                max_decoding_length=new_tokens,
            )
            counts = [len(result.hypotheses[0]) for result in results]
            return min(counts), max(counts)

        return translate

    return call


def _pin(threads):
    """Pins this process to the first `threads` processors it may use."""
    if hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, allowed[:threads])


def worker(implementation, directory, new_tokens, repeats, threads):
    """Prints one JSON line: case -> median seconds per call and tokens per
    sentence (min, max), in this process."""
    from benchmarks import timing

    _pin(threads)  # Before any library sizes its thread pools.
    if implementation.startswith("zoo"):
        if implementation == "zoo-tensorflow":
            import tensorflow as tf

            tf.config.threading.set_intra_op_parallelism_threads(threads)
        call = _zoo_calls(directory, new_tokens)
    elif implementation == BASELINE:
        call = _transformers_calls(directory, new_tokens, threads)
    else:
        call = _ct2_calls(directory, implementation, new_tokens, threads)
    tokens = {}

    def timed(key, fn):
        def run():
            tokens[key] = fn()

        return run

    calls = {f"{b}x{k}": timed(f"{b}x{k}", call(b, k)) for b, k in CASES}
    medians = timing.interleaved(calls, repeats, min_seconds=0.3)
    heavy = [m for m in ("tensorflow", "keras", "jax", "torch") if m in sys.modules]
    print(json.dumps({
        "medians": {key: value["median"] for key, value in medians.items()},
        "cpu_medians": {key: value["cpu_median"] for key, value in medians.items()},
        "tokens": tokens,
        "loaded": heavy,
        "processors": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity") else None,
    }))  # fmt: skip
    return 0


def _run_worker(implementation, directory, args):
    command = [
        sys.executable, "-m", "benchmarks.marian_speed", "--worker", implementation,
        "--directory", directory, "--new-tokens", str(args.new_tokens),
        "--repeats", str(args.repeats), "--threads", str(args.threads),
    ]  # fmt: skip
    backend = "jax" if implementation == "zoo-jax" else "tensorflow"
    env = dict(
        os.environ,
        KERAS_BACKEND=backend,
        TF_CPP_MIN_LOG_LEVEL="3",
        OMP_NUM_THREADS=str(args.threads),
        OMP_WAIT_POLICY="PASSIVE",  # As benchmarks/run.py: no spinning.
        USE_TF="0",  # transformers: PyTorch only.
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, env=env, check=False
    )
    if result.returncode:
        raise RuntimeError(f"{implementation}: {result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _versions():
    found = {}
    for name in _VERSIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def measure(args, directory):
    """Prepares `directory` and times every implementation; the results."""
    began = time.perf_counter()
    prepared = prepare(directory, args.config, args.new_tokens)
    load_before = load_average()
    runs = {name: [] for name in args.implementations}
    tokens = {name: {} for name in args.implementations}
    workers = {}
    for round_ in range(args.rounds):
        shift = round_ % len(args.implementations)
        order = args.implementations[shift:] + args.implementations[:shift]
        for name in order:
            start = time.perf_counter()
            result = _run_worker(name, directory, args)
            runs[name].append(result["medians"])
            for key, counts in result["tokens"].items():
                tokens[name].setdefault(key, []).append(counts)
            workers.setdefault(name, []).append(
                {k: result[k] for k in ("cpu_medians", "loaded", "processors")}
            )
            seconds = time.perf_counter() - start
            print(f"round {round_ + 1} {name}: {seconds:.0f} s", file=sys.stderr)
    throughput = throughput_rows(runs, CASES)
    if BASELINE in throughput:
        for row in throughput.values():
            for key, entry in row.items():
                base = throughput[BASELINE][key]["sentences_per_s"]
                entry["vs_transformers"] = entry["sentences_per_s"] / base
    counts = {
        name: {
            key: [min(c[0] for c in v), max(c[1] for c in v)] for key, v in t.items()
        }
        for name, t in tokens.items()
    }
    return {
        "config": args.config,
        "sizes": CONFIGS[args.config],
        "new_tokens": args.new_tokens,
        "source_length": SOURCE_LENGTH,
        "threads": args.threads,
        "rounds": args.rounds,
        "repeats": args.repeats,
        "throughput": throughput,
        "tokens_per_sentence": counts,
        "fixed_work": all(
            c == [args.new_tokens, args.new_tokens]
            for t in counts.values()
            for c in t.values()
        ),
        "model_bin": {k: v for k, v in prepared.items() if k.endswith("_bytes")},
        "load_average": {"before": load_before, "after": load_average()},
        "versions": _versions(),
        "workers": workers,
        "command": " ".join(["python -m benchmarks.marian_speed", *args.argv]),
        "started": time.strftime("%Y-%m-%d %H:%M"),
        "wall_seconds": time.perf_counter() - began,
    }


def markdown(results):
    """The table (each rate with its ratio to transformers) and its facts."""
    throughput = results["throughput"]
    baseline = BASELINE if BASELINE in throughput else next(iter(throughput))
    lines = [
        f"Random OPUS-MT-sized Marian (`{results['config']}`: "
        + ", ".join(f"{k} {v}" for k, v in results["sizes"].items())
        + f"), {results['new_tokens']} new tokens from {results['source_length']}"
        f"-token sources, {results['threads']} threads; sentences per second "
        f"(x {baseline}), median of {results['rounds']} processes each.",
        "",
        throughput_table("implementation", throughput, CASES, lambda _: baseline),
        "",
    ]
    for name in throughput:
        if name.startswith("zoo") and baseline == BASELINE:
            ratios = [entry["vs_transformers"] for entry in throughput[name].values()]
            verdict = "met" if min(ratios) > 1 else "**missed**"
            lines.append(
                f"- {name}: ahead of transformers' `generate` at every row: "
                f"{verdict} (lowest {min(ratios):.2f}x)."
            )
    lines.append(
        f"- Every implementation decoded {results['new_tokens']} tokens per "
        f"sentence: {'yes' if results['fixed_work'] else '**no**'}."
    )
    load = results["load_average"]
    lines.append(f"- Load average: {load['before']} before, {load['after']} after.")
    lines.append("- " + size_line("CTranslate2 model.bin", results["model_bin"]))
    versions = results["versions"]
    lines.append("- " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".")
    return "\n".join(lines)


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=CONFIGS, default="opus-mt")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument(
        "--threads",
        type=int,
        default=len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        help="processors every worker is pinned to and every library uses "
        "(default: all this process may use)",
    )
    parser.add_argument(
        "--implementations",
        nargs="+",
        choices=IMPLEMENTATIONS,
        default=list(IMPLEMENTATIONS),
    )
    parser.add_argument(
        "--directory",
        default=None,
        help="keep the checkpoint and its conversions here and reuse them on "
        "the next run (default: a temporary directory)",
    )
    parser.add_argument("--output", default=None, help="the results, JSON")
    parser.add_argument("--worker", choices=IMPLEMENTATIONS, default=None)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    if args.worker:
        return worker(
            args.worker, args.directory, args.new_tokens, args.repeats, args.threads
        )
    if args.directory:
        os.makedirs(args.directory, exist_ok=True)
        results = measure(args, args.directory)
    else:
        with tempfile.TemporaryDirectory() as directory:
            results = measure(args, directory)
    print(markdown(results))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=2)
    return results


if __name__ == "__main__":
    main()
    sys.exit(0)

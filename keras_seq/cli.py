"""The `keras-seq` command line."""

import argparse
import os
import sys


def _quiet_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _demo(args):
    """A tour of the layers on the book's sizes (Fig. 7.15, Eq. 7.32)."""
    import numpy as np

    from keras_seq.layers import (
        TransformerDecoderBlock,
        TransformerEncoderBlock,
    )

    sizes = {"num_heads": 8, "ff_dim": 2048, "attention_bias": False}
    encoder = TransformerEncoderBlock(**sizes)
    encoder.build((None, None, 512))
    decoder = TransformerDecoderBlock(**sizes)
    decoder.build((None, None, 512), (None, None, 512))
    print("Transformer blocks with p=512, N1=2048, m=m_v=64, H=8, no biases:")
    print(f"  encoder block parameters: {encoder.count_params():,} (book: 3,150,336)")
    print(f"  decoder block parameters: {decoder.count_params():,} (book: 4,199,936)")

    rng = np.random.default_rng(args.seed)
    source = rng.normal(size=(2, 9, 512)).astype("float32")
    target = rng.normal(size=(2, 6, 512)).astype("float32")
    source_mask = np.arange(9)[None] < np.array([[9], [5]])
    encoded = encoder(source, padding_mask=source_mask)
    full = np.asarray(decoder(target, encoded, encoder_padding_mask=source_mask))
    cache = np.zeros((2, 2, 6, 8, 64), "float32")
    cross, steps = None, []
    for t in range(6):
        out, cache, cross = decoder(
            target[:, t : t + 1],
            encoded,
            encoder_padding_mask=source_mask,
            self_attention_cache=cache,
            self_attention_cache_update_index=t,
            cross_attention_cache=cross,
        )
        steps.append(np.asarray(out))
    gap = float(np.abs(np.concatenate(steps, 1) - full).max())
    print(f"  cached step-by-step decoding vs full causal pass: max |diff| {gap:.2e}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-seq", description="Sequence models for Keras 3."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the main demonstration")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(run=_demo)
    return parser


def main(argv=None):
    _quiet_tensorflow()
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())

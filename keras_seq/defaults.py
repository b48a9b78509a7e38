"""The library's decoding and batching defaults, each written once.

The signatures of `GenerativeModel.generate`/`beam_search`, the beam-search
loop, the SavedModel export, the application's settings and every
translating path of the zoo (`TrainedModel.translate`, `keras-seq
translate`, the CTranslate2 model and both servers) read them here; this
module imports nothing, so a process without TensorFlow or Keras reads them
too.
"""

# Beams of a beam search, and the GNMT length penalty alpha (Wu et al.,
# 2016: scores are divided by ((5 + length) / 6) ** alpha).
BEAM_WIDTH = 4
LENGTH_PENALTY = 0.6

# The reserved tokens (`keras_seq.text.RESERVED_TOKENS`, by name) that a
# translator never writes, on every engine and in CTranslate2: padding, the
# start token and the mask token. A model that favours one (undertrained, or
# fine-tuned elsewhere) would otherwise end a row early in the compiled loops
# (padding reads as the end) and print it literally in CTranslate2. [UNK]
# stays: a word the target vocabulary cannot spell is rendered by it. [END]
# only ends an output.
TRANSLATION_UNSAMPLABLE_TOKENS = ("[PAD]", "[START]", "[MASK]")

# The length of a model without a limit of its own (the RNN models): how
# many tokens it generates by default, and the longest text its
# preprocessor buckets and cuts to.
UNBOUNDED_LENGTH = 64

# Tokens in a length-bucketed translation batch: a bucket of length L holds
# `batch_tokens // L` pairs.
BATCH_TOKENS = 2048

# The values of the decoding controls that change nothing: a translator's
# `translate_with_controls` signature (the SavedModel's and the CTranslate2
# server's) fills each one a request leaves out with its value here.
CONTROL_INPUT_DEFAULTS = {
    "target_prefix": "",
    "min_new_tokens": 0,
    "repetition_penalty": 1.0,
}

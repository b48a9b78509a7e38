"""The library's decoding and batching defaults, each written once.

The signatures of `GenerativeModel.generate`/`beam_search`, the beam-search
loop, the SavedModel export, the CTranslate2 servable and the application's
settings read them here; this module imports nothing, so a process without
TensorFlow or Keras reads them too.
"""

# Beams of a beam search, and the GNMT length penalty alpha (Wu et al.,
# 2016: scores are divided by ((5 + length) / 6) ** alpha).
BEAM_WIDTH = 4
LENGTH_PENALTY = 0.6

# The length of a model without a limit of its own (the RNN models): how
# many tokens it generates by default, and the longest text its
# preprocessor buckets and cuts to.
UNBOUNDED_LENGTH = 64

# Tokens in a length-bucketed translation batch: a bucket of length L holds
# `batch_tokens // L` pairs.
BATCH_TOKENS = 2048

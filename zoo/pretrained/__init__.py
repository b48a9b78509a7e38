"""Pretrained checkpoints brought into the zoo's own layers.

`vocabulary` maps a Marian (OPUS-MT) vocabulary onto the zoo's ids; the
model, the tokenizer and the run directory are built from that one map.
"""

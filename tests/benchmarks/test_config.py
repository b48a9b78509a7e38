"""`benchmarks.config`: the batches and the FLOP counts MFU divides by."""

from benchmarks import config


def test_config_counts_flops_of_the_small_translator():
    small = config.CONFIGS["small"]
    encoder, decoder, output = config.matmul_weights(small)
    # 2 x (4 x 128^2 + 2 x 128 x 512), 2 x (8 x 128^2 + 2 x 128 x 512), 128 x 8000.
    assert (encoder, decoder, output) == (393_216, 524_288, 1_024_000)
    tokens = 64 * 32
    attention = 3 * 6 * 2 * (2 * 64 * 32 * 32 * 128)
    expected = 6 * (encoder + decoder + output) * tokens + attention
    assert config.training_flops(small) == expected
    inputs, labels = config.training_batch(small)
    assert inputs["encoder_token_ids"].shape == (64, 32)
    assert (inputs["encoder_token_ids"][:, 24:] == 0).all()
    assert (labels[:, 24:] == 0).all() and (labels[:, :24] != 0).all()
    assert (inputs["decoder_token_ids"][:, 1:] == labels[:, :-1]).all()


def test_bucketed_batch_is_the_fixed_batch_without_its_padding_columns():
    small = config.CONFIGS["small"]
    # keras_seq's buckets for max_length 64 are 8, 16, 24, 40, 64: rows of
    # 24 real tokens go to the 24 bucket.
    assert config.bucket_length(small) == 24
    inputs, labels = config.training_batch(small)
    cut_inputs, cut_labels = config.bucketed_training_batch(small)
    for key, value in inputs.items():
        assert cut_inputs[key].shape == (64, 24)
        assert (cut_inputs[key] == value[:, :24]).all()
    assert (cut_labels == labels[:, :24]).all() and (cut_labels != 0).all()
    # Only the columns a bucketed step computes are counted.
    encoder, decoder, output = config.matmul_weights(small)
    attention = 3 * 6 * 2 * (2 * 64 * 24 * 24 * 128)
    expected = 6 * (encoder + decoder + output) * 64 * 24 + attention
    assert config.training_flops(small, length=24) == expected


def test_the_bucket_rule_is_the_pipelines_own():
    # Restated without TensorFlow for the JAX harness; the pipelines'
    # module (which imports TensorFlow) is the reference.
    from keras_seq.text import default_bucket_boundaries

    for max_length in (5, 8, 16, 40, 64, 128, 256, 1000):
        assert config.bucket_boundaries(max_length) == default_bucket_boundaries(
            max_length
        ), max_length

"""Tiny Marian (OPUS-MT) checkpoints made in the tests, as `save_pretrained`
writes them, for the importer's tests to read.

Nothing is downloaded: two SentencePiece models are trained on
trans-de-en (German sources, English targets; once per process), their
pieces become Marian's `vocab.json` (`</s>` 0, `<unk>` 1, the pieces,
`<pad>` last) and a `transformers.MarianMTModel` of random weights (a
small `MarianConfig`) is saved beside them, so every comparison is against
the reference implementation on the same weights. The weights are drawn
wider than Marian's own initialisation (`INIT_STD`), so that a random
model's next token depends on its input and greedy and beam outputs
differ from sentence to sentence.
"""

import functools
import io
import json
import warnings

from keras_seq.data import load_trans_de_en

# A random model of Marian's 0.02 gives nearly uniform logits; this spread
# gives outputs that depend on the input.
INIT_STD = 0.5
# `<pad>`'s logit far below the others: transformers normalizes its
# log-probabilities over the whole vocabulary and then bans `<pad>`
# (`bad_words_ids`), the zoo over the ids it may write, so beam scores
# agree only where `<pad>` has no probability (as in a trained model).
PAD_BIAS = -20.0


@functools.cache
def corpus():
    """Every trans-de-en pair (training, validation and test splits)."""
    splits = load_trans_de_en()
    return splits.train + splits.validation + splits.test


@functools.cache
def spm_model(side, size):
    """The bytes of a unigram SentencePiece model of `size` pieces trained
    on one side of trans-de-en (`"source"`: German, `"target"`: English),
    with no `<s>`, `</s>` or padding of its own (Marian's vocabulary adds
    them)."""
    import sentencepiece

    column = 0 if side == "source" else 1
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([pair[column] for pair in corpus()]),
        model_writer=model,
        vocab_size=size,
        model_type="unigram",
        character_coverage=1.0,
        unk_id=0,
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        minloglevel=2,
    )
    return model.getvalue()


def marian_pieces(*protos):
    """Marian's `vocab.json` of SentencePiece models: `</s>` 0, `<unk>` 1,
    each model's pieces once, `<pad>` last."""
    import sentencepiece

    pieces = ["</s>", "<unk>"]
    for proto in protos:
        processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
        for i in range(processor.get_piece_size()):
            piece = processor.id_to_piece(i)
            if not processor.is_unknown(i) and piece not in pieces:
                pieces.append(piece)
    pieces.append("<pad>")
    return {piece: i for i, piece in enumerate(pieces)}


def write_checkpoint(
    directory,
    *,
    shared=True,
    activation="swish",
    seed=0,
    model_dim=16,
    layers=2,
    heads=2,
    ff_dim=32,
    max_length=48,
    spm_size=200,
    **config,
):
    """Writes a tiny random Marian checkpoint to `directory`.

    Args:
        directory: a `pathlib.Path` (created if missing).
        shared: one `vocab.json` for both sides, with shared embeddings;
            False writes `target_vocab.json` and `separate_vocabs`.
        activation: `MarianConfig.activation_function`.
        seed: of the random weights.
        model_dim, layers, heads, ff_dim, max_length: the model's
            `d_model`, encoder and decoder layers, heads, feed-forward
            width and `max_position_embeddings`.
        spm_size: the pieces of each SentencePiece model.
        **config: further `MarianConfig` fields (or ones the importer must
            refuse).

    Returns:
        `directory`.
    """
    import torch
    import transformers

    directory.mkdir(parents=True, exist_ok=True)
    source, target = spm_model("source", spm_size), spm_model("target", spm_size)
    (directory / "source.spm").write_bytes(source)
    (directory / "target.spm").write_bytes(target)
    vocab = marian_pieces(source) if not shared else marian_pieces(source, target)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    target_size = len(vocab)
    if not shared:
        target_vocab = marian_pieces(target)
        (directory / "target_vocab.json").write_text(
            json.dumps(target_vocab, ensure_ascii=False)
        )
        target_size = len(target_vocab)
    tokenizer_config = {
        "separate_vocabs": not shared,
        "source_lang": "de",
        "target_lang": "en",
        "model_max_length": max_length,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    pad = len(vocab) - 1
    options = {
        "vocab_size": len(vocab),
        "decoder_vocab_size": target_size,
        "d_model": model_dim,
        "encoder_layers": layers,
        "decoder_layers": layers,
        "encoder_attention_heads": heads,
        "decoder_attention_heads": heads,
        "encoder_ffn_dim": ff_dim,
        "decoder_ffn_dim": ff_dim,
        "max_position_embeddings": max_length,
        "activation_function": activation,
        "pad_token_id": pad,
        "eos_token_id": 0,
        "decoder_start_token_id": pad,
        # Marian forces `</s>` at `max_length`, which the zoo does not.
        "forced_eos_token_id": None,
        "scale_embedding": True,
        "share_encoder_decoder_embeddings": shared,
        "init_std": INIT_STD,
        "dropout": 0.1,
        "bad_words_ids": [[pad]],
        "num_beams": 4,
        "max_length": max_length,
        **config,
    }
    torch.manual_seed(seed)
    model = transformers.MarianMTModel(transformers.MarianConfig(**options))
    with torch.no_grad():
        # Marian's bias starts at zero; a drawn one shows it is read.
        model.final_logits_bias.normal_(0.0, 1.0)
        model.final_logits_bias[..., pad] = PAD_BIAS
    model.save_pretrained(directory)
    return directory


def reference(directory):
    """`(MarianMTModel, MarianTokenizer)` of a checkpoint directory, in
    evaluation mode."""
    import transformers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses."
        tokenizer = transformers.MarianTokenizer.from_pretrained(directory)
    model = transformers.MarianMTModel.from_pretrained(directory).eval()
    return model, tokenizer


def reference_translations(directory, texts, num_beams=1, max_new_tokens=None):
    """What transformers translates `texts` to: `generate` (greedy, or
    `num_beams` beams at length penalty 0) and `MarianTokenizer.decode`."""
    import torch

    model, tokenizer = reference(directory)
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    options = {"num_beams": num_beams, "do_sample": False}
    if num_beams > 1:
        options.update(length_penalty=0.0, early_stopping=True)
    # As many new tokens as the zoo decodes: the positions after the start.
    options["max_new_tokens"] = (
        max_new_tokens or model.config.max_position_embeddings - 1
    )
    with torch.no_grad():
        ids = model.generate(**batch, **options)
    return tokenizer.batch_decode(ids, skip_special_tokens=True)

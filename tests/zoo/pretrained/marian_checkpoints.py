"""Tiny Marian checkpoints made with transformers, for the import tests.

`make_checkpoint` writes what `MarianMTModel.save_pretrained` writes for a
tiny random model (2 + 2 layers, width 32, 4 heads) and Marian's
`vocab.json` (and `target_vocab.json`) beside it; `write_sentencepiece`
adds the `source.spm` and `target.spm` that `MarianTokenizer` loads.
"""

import json
import os

import torch
import transformers

# The placeholder `source.spm` and `target.spm` `MarianTokenizer` needs to
# load (the tests pass ids), as the Marian speed benchmark writes them.
from benchmarks.marian_speed import write_sentencepiece  # noqa: F401

WIDTH, FF_DIM, HEADS = 32, 64, 4
# Every <pad> logit far below the others: transformers normalizes its
# log-probabilities over the whole vocabulary and then bans <pad>
# (`bad_words_ids`), the zoo normalizes over the ids it may write, so beam
# scores agree only where <pad>'s probability is nil (a trained Marian
# model gives it none; a random one would).
PAD_BIAS = -20.0

SOURCE_SIZE, TARGET_SIZE, PAD = 60, 70, 59


def pieces(size, prefix):
    """Marian's vocab.json: </s> 0, <unk> 1, <pad> at PAD, pieces between."""
    pieces = {"</s>": 0, "<unk>": 1, "<pad>": PAD}
    free = [i for i in range(size) if i not in pieces.values()]
    pieces.update({f"▁{prefix}{i}": i for i in free})
    return pieces


def _randomize(model, seed):
    generator = torch.Generator().manual_seed(seed)

    def normal(shape, scale):
        return torch.randn(shape, generator=generator) * scale

    with torch.no_grad():
        for name, parameter in model.named_parameters():
            shape = parameter.shape
            if "embed_positions" in name:
                continue  # The static table.
            if "layer_norm" in name and name.endswith("weight"):
                parameter.copy_(1.0 + normal(shape, 0.2))
            elif name.endswith("bias"):
                parameter.copy_(normal(shape, 0.1))
            elif "embed_tokens" in name or "shared" in name or "lm_head" in name:
                parameter.copy_(normal(shape, 0.5))
                parameter[PAD] = 0.0  # transformers' padding_idx row.
            else:
                parameter.copy_(normal(shape, shape[-1] ** -0.5))
        bias = normal(model.final_logits_bias.shape, 1.0)
        bias[0, PAD] = PAD_BIAS
        model.final_logits_bias.copy_(bias)


def make_checkpoint(directory, shared, activation, weights, tied, seed=0):
    config = transformers.MarianConfig(
        vocab_size=SOURCE_SIZE,
        decoder_vocab_size=SOURCE_SIZE if shared else TARGET_SIZE,
        d_model=WIDTH,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=HEADS,
        decoder_attention_heads=HEADS,
        encoder_ffn_dim=FF_DIM,
        decoder_ffn_dim=FF_DIM,
        max_position_embeddings=64,
        pad_token_id=PAD,
        eos_token_id=0,
        decoder_start_token_id=PAD,
        # generate would otherwise force </s> at its last position.
        forced_eos_token_id=None,
        activation_function=activation,
        scale_embedding=True,
        share_encoder_decoder_embeddings=shared,
        tie_word_embeddings=tied,
        dropout=0.1,
        attention_dropout=0.0,
    )
    torch.manual_seed(seed)
    model = transformers.MarianMTModel(config).eval()
    _randomize(model, seed)
    model.save_pretrained(directory)
    if weights == "bin":
        os.remove(os.path.join(directory, "model.safetensors"))
        torch.save(model.state_dict(), os.path.join(directory, "pytorch_model.bin"))
    write_json(directory, "vocab.json", pieces(SOURCE_SIZE, "s"))
    if not shared:
        write_json(directory, "target_vocab.json", pieces(TARGET_SIZE, "t"))
    return model


def write_json(directory, name, value):
    with open(os.path.join(directory, name), "w", encoding="utf-8") as file:
        json.dump(value, file, ensure_ascii=False)

"""Corpus BLEU (sacreBLEU) and the names of the decodings it scores, shared
by the translators' training, evaluation and the benchmarks."""


def corpus_bleu(hypotheses, references, lowercase=False):
    """Corpus BLEU of sacrebleu (13a tokenization) on detokenized text.

    Args:
        hypotheses: list of str.
        references: list of str, one reference per hypothesis.
        lowercase: bool, compare lowercased text (sacreBLEU's default:
            cased).

    Returns:
        The BLEU score, a float in [0, 100].
    """
    import sacrebleu

    return sacrebleu.corpus_bleu(hypotheses, [references], lowercase=lowercase).score


def decoding_name(beam_width):
    """`"greedy"` for 1 beam, else `"<n> beams"`."""
    return "greedy" if beam_width == 1 else f"{beam_width} beams"


def bleu_scores(scores, beam_width):
    """A translator's BLEU (`bleu`, `bleu_lowercase`) under keys that name
    the decoding.

    The cased score, as sacreBLEU reports it by default and papers print
    it, comes first; the lowercased one beside it.

    Returns:
        `{"bleu_beam4": ..., "bleu_beam4_lowercase": ...}` for 4 beams,
        `{"bleu_greedy": ..., "bleu_greedy_lowercase": ...}` for 1.
    """
    name = "bleu_greedy" if beam_width == 1 else f"bleu_beam{beam_width}"
    return {name: scores["bleu"], f"{name}_lowercase": scores["bleu_lowercase"]}

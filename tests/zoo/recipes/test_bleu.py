"""`zoo.recipes.bleu`: sacreBLEU's corpus score, cased unless asked."""

import pytest

from zoo.recipes import bleu


def test_a_perfect_translation_scores_100_and_case_counts():
    references = ["The cat sat on the mat today.", "A dog ran in the park."]
    assert bleu.corpus_bleu(references, references) == pytest.approx(100.0)
    lowered = [r.lower() for r in references]
    assert bleu.corpus_bleu(lowered, references) < 100.0
    assert bleu.corpus_bleu(lowered, references, lowercase=True) == pytest.approx(100.0)
    assert bleu.decoding_name(1) == "greedy" and bleu.decoding_name(4) == "4 beams"

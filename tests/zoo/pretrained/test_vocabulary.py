import pytest

from keras_seq.text.vocabulary import END_ID, PAD_ID, RESERVED_TOKENS, START_ID, UNK_ID
from zoo.pretrained.vocabulary import marian_vocabulary

MARIAN = {"</s>": 0, "<unk>": 1, "▁Haus": 2, "▁das": 3, "s": 4, "<pad>": 5}


def test_reserved_ids_take_marian_rows_and_the_rest_keep_marians_order():
    vocabulary = marian_vocabulary(MARIAN)
    assert vocabulary.tokens == RESERVED_TOKENS + ("▁Haus", "▁das", "s")
    assert vocabulary.marian_size == 6
    rows = vocabulary.marian_ids
    assert rows[PAD_ID] == rows[START_ID] == 5  # Marian starts from <pad>
    assert rows[UNK_ID] == 1 and rows[END_ID] == 0
    assert rows[len(RESERVED_TOKENS) :] == (2, 3, 4)
    assert [vocabulary.zoo_id(i) for i in range(6)] == [END_ID, UNK_ID, 5, 6, 7, PAD_ID]


@pytest.mark.parametrize(
    "pieces, message",
    [
        ({"</s>": 0, "<unk>": 1}, "no '<pad>'"),
        ({"</s>": 0, "<unk>": 1, "<pad>": 3}, "0..2"),
        ({"</s>": 0, "<unk>": 1, "<pad>": 2, "[MASK]": 3}, "'[MASK]'"),
        ({"</s>": 0, "<unk>": "1", "<pad>": 2}, "not an int"),
        ([], "non-empty JSON object"),
    ],
)
def test_a_vocabulary_that_cannot_be_mapped_is_refused_in_one_line(pieces, message):
    with pytest.raises(
        ValueError, match=message.replace("[", r"\[").replace(".", r"\.")
    ):
        marian_vocabulary(pieces)

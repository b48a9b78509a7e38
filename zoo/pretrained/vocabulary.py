"""A Marian vocabulary in the zoo's ids: the one map the weights, the
tokenizer and the run directory are all built from.

Marian's `vocab.json` gives `</s>` id 0, `<unk>` 1 and `<pad>` the last id,
and starts the decoder from `<pad>`. The zoo reserves ids 0-4 (`[PAD]`
padding, from which every mask is built; `[UNK]`, `[START]`, `[END]`,
`[MASK]`; `keras_seq.text.vocabulary`). So the zoo's vocabulary is the
reserved tokens followed by Marian's other tokens in Marian's order, and
each zoo id takes the embedding row of one Marian id:

    zoo [PAD]   <- Marian <pad>   (masked everywhere, never written)
    zoo [UNK]   <- Marian <unk>
    zoo [START] <- Marian <pad>   (Marian's decoder start, a copy of its row:
                                   the zoo's start id must not be padding)
    zoo [END]   <- Marian </s>
    zoo [MASK]  <- Marian <pad>   (unused by a translator, never written)
    zoo 5 + i   <- the i-th Marian token that is none of the three

Two zoo rows share Marian's `<pad>` row, so the zoo's table is 2 rows
longer than Marian's; both are among the ids a translator never writes
(`keras_seq.defaults.TRANSLATION_UNSAMPLABLE_TOKENS`), as `<pad>` is among
Marian's `bad_words_ids`, so no output changes.
"""

import dataclasses
import functools

from keras_seq.text.vocabulary import RESERVED_TOKENS

END_PIECE = "</s>"
UNK_PIECE = "<unk>"
PAD_PIECE = "<pad>"

# Which Marian token's row each reserved zoo id takes, in RESERVED_TOKENS'
# order.
_RESERVED_ROWS = {
    "[PAD]": PAD_PIECE,
    "[UNK]": UNK_PIECE,
    "[START]": PAD_PIECE,
    "[END]": END_PIECE,
    "[MASK]": PAD_PIECE,
}


@dataclasses.dataclass(frozen=True)
class MarianVocabulary:
    """One side's vocabulary (source or target) in the zoo's ids.

    Attributes:
        tokens: the zoo's vocabulary, reserved tokens first; index = zoo id.
        marian_ids: for each zoo id, the Marian id whose embedding row (and
            logits bias, output row) it takes; `len(marian_ids) ==
            len(tokens)`.
        marian_size: how many ids Marian's table has.
    """

    tokens: tuple
    marian_ids: tuple
    marian_size: int

    def zoo_id(self, marian_id):
        """The zoo id of a Marian id (the first zoo id taking its row)."""
        return self._inverse[marian_id]

    @functools.cached_property
    def _inverse(self):
        inverse = {}
        for zoo_id, marian_id in enumerate(self.marian_ids):
            inverse.setdefault(marian_id, zoo_id)
        return inverse


def marian_vocabulary(pieces, where="vocab.json"):
    """Maps Marian's `{piece: id}` (the content of `vocab.json`) to the zoo's.

    Args:
        pieces: dict from piece to Marian id; ids must be 0..N-1, each once.
        where: the file named in errors.

    Returns:
        A `MarianVocabulary`.

    Raises:
        ValueError: ids that are not 0..N-1 each once, a missing `</s>`,
            `<unk>` or `<pad>`, or a piece that spells a reserved zoo token.
    """
    if not isinstance(pieces, dict) or not pieces:
        raise ValueError(f"{where} must be a non-empty JSON object of piece: id.")
    by_id = {}
    for piece, marian_id in pieces.items():
        if not isinstance(marian_id, int) or isinstance(marian_id, bool):
            raise ValueError(
                f"{where}: the id of {piece!r} is {marian_id!r}, not an int."
            )
        if marian_id in by_id:
            raise ValueError(
                f"{where}: id {marian_id} is given to both {by_id[marian_id]!r} "
                f"and {piece!r}."
            )
        by_id[marian_id] = piece
    size = len(by_id)
    if sorted(by_id) != list(range(size)):
        raise ValueError(f"{where}: the ids must be 0..{size - 1}, each once.")
    for piece in (END_PIECE, UNK_PIECE, PAD_PIECE):
        if piece not in pieces:
            raise ValueError(f"{where} has no {piece!r}, which Marian reserves.")
    for token in RESERVED_TOKENS:
        if token in pieces:
            raise ValueError(
                f"{where} holds {token!r}, which the zoo reserves; it cannot be mapped."
            )
    special = {END_PIECE, UNK_PIECE, PAD_PIECE}
    tokens = list(RESERVED_TOKENS)
    marian_ids = [pieces[_RESERVED_ROWS[token]] for token in RESERVED_TOKENS]
    for marian_id in range(size):
        piece = by_id[marian_id]
        if piece not in special:
            tokens.append(piece)
            marian_ids.append(marian_id)
    return MarianVocabulary(tuple(tokens), tuple(marian_ids), size)

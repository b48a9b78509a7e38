"""`zoo.recipes.fingerprints`: a file and the same items from Python are the
same data."""

import hashlib

from zoo.recipes import fingerprints


def test_items_hash_as_the_file_of_their_lines(tmp_path):
    pairs = [("Hallo.", "Hello."), ("Ja.", "Yes.")]
    path = tmp_path / "pairs.tsv"
    path.write_text("Hallo.\tHello.\nJa.\tYes.\n", encoding="utf-8")
    assert fingerprints.fingerprint(path) == fingerprints.items_fingerprint(pairs)
    assert (
        fingerprints.fingerprint(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    )
    assert fingerprints.items_fingerprint(["a"]) != fingerprints.items_fingerprint(
        ["b"]
    )

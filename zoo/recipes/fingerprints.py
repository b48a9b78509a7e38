"""Fingerprints of data: the SHA-256 of a file's bytes, and of data given
from Python as the same lines would be written (`run.json` and
`training.json` name the data, and each vocabulary, by them)."""

import hashlib


def fingerprint(path):
    """The SHA-256 of a file's bytes, in hex (a vocabulary, a `--data` file)."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def items_fingerprint(items):
    """The SHA-256 of data given from Python, as `fingerprint` gives it for
    the same items written one a line (fields joined by tabs, each line
    ending in a newline): a list of pairs and the file of those pairs are
    the same data."""
    digest = hashlib.sha256()
    for item in items:
        fields = item if isinstance(item, (tuple, list)) else (item,)
        digest.update(("\t".join(map(str, fields)) + "\n").encode("utf-8"))
    return digest.hexdigest()

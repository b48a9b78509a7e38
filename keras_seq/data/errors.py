"""The error raised when a corpus is not installed.

No loader downloads anything: a missing corpus fails at once with a message
that says how to install it (`scripts/install_corpora.sh` installs all three).
"""

INSTALL_SCRIPT = "bash scripts/install_corpora.sh"


class CorpusNotFoundError(FileNotFoundError):
    """A corpus file or directory is missing; the message says how to install it.

    A subclass of `FileNotFoundError`, so code that already handles missing
    files keeps working.

    Args:
        corpus: a human-readable name of the corpus, e.g. `"trans-de-en"`.
        path: where the corpus was looked for.
        install: the instructions that install it.

    Example:

    >>> try:
    ...     raise CorpusNotFoundError("demo", "/nowhere", "pip install demo")
    ... except FileNotFoundError as error:
    ...     print(error)
    demo not found at /nowhere. To install it: pip install demo
    """

    def __init__(self, corpus, path, install):
        self.corpus = corpus
        self.install = install
        message = f"{corpus} not found at {path}. To install it: {install}"
        super().__init__(message)
        self.filename = str(path)

    def __str__(self):
        # FileNotFoundError would otherwise prepend "[Errno None]" once
        # `filename` is set.
        return self.args[0]

    def __reduce__(self):
        return (type(self), (self.corpus, self.filename, self.install))

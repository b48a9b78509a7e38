"""The punctuation clean-up of detokenization, with no TensorFlow or Keras.

`keras_seq.text.tokenizers` describes the rules (its module docstring) and
applies them in Python and in TensorFlow graphs; the TensorFlow-free
tokenizer of `keras_seq.text.portable_tokenizer` applies them too. They are
written here once, for both regex engines, and this module imports nothing
but the standard library, so a process without TensorFlow or Keras can use
it. Gluing `##` suffix pieces is the callers' first step, since the suffix
marker belongs to the vocabulary.
"""

import re

# `{alnum}` is a Unicode letter or digit, `{other}` any other character and
# `{digit}` a decimal digit. Python's `re` and RE2 (`tf.strings.regex_replace`)
# spell these classes differently but mean the same characters; everything
# else below is common syntax.
RULES = (
    (r"({digit}) ([.,:]) ({digit})", r"\1\2\3"),
    (r" ([.,!?;:%)\]}…])", r"\1"),
    (r"([(\[{¿¡„$]) ", r"\1"),
    (r"({alnum}) (['’]) (s|t|re|ve|ll|d|m)({other}|$)", r"\1\2\3\4"),
    (r"({alnum}) ([-/]) ({alnum})", r"\1\2\3"),
    (r'" ([^"]*?) "', r'"\1"'),
)
_PYTHON_CLASSES = {"alnum": r"[^\W_]", "other": r"[\W_]", "digit": r"\d"}
_RE2_CLASSES = {"alnum": r"[\p{L}\p{N}]", "other": r"[^\p{L}\p{N}]", "digit": r"\p{Nd}"}


def _spell(pattern, classes):
    for name, spelling in classes.items():
        pattern = pattern.replace("{" + name + "}", spelling)
    return pattern


PYTHON_RULES = tuple(
    (re.compile(_spell(pattern, _PYTHON_CLASSES)), rewrite)
    for pattern, rewrite in RULES
)
RE2_RULES = tuple(
    (_spell(pattern, _RE2_CLASSES), rewrite) for pattern, rewrite in RULES
)


def clean_up_spacing(text):
    """Applies the punctuation clean-up rules to a `str`.

    Args:
        text: a `str` of words joined with spaces (suffix pieces glued).

    Returns:
        The `str` with the spacing rules applied once each, in order.

    Example:

    >>> clean_up_spacing("i don ' t know , do you ?")
    "i don't know, do you?"
    """
    for pattern, rewrite in PYTHON_RULES:
        text = pattern.sub(rewrite, text)
    return text

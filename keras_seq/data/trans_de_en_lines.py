"""The line format of the `trans-de-en` dictionary, parsed into pairs.

The Debian package `trans-de-en` installs the TU Chemnitz dictionary as
`/usr/share/trans/de-en`, one entry a line::

    Abschied {m} | Er verabschiedete sich. :: leave | He took leave.

The German side is left of ` :: `, the English side right of it. Each side is
a list of alternatives separated by `|`, and the i-th German alternative
translates the i-th English one. Inside an alternative, synonyms are
separated by `;`. Annotations are written in `{}` (grammar), `[]` (usage,
domain), `<>` (other spellings, search keys) and `/.../` (abbreviations);
parentheses hold optional words and notes and are part of the text.

`parse_trans_line` is the public entry point; `keras_seq.data.translation`
uses the helpers below to read the whole file at once.
"""

import re

_KINDS = ("sentences", "phrases", "all")

# Annotations: {f}, [ugs.], <Aalmolch>. They never span lines.
_ANNOTATION = re.compile(r"\{[^{}\n]*\}|\[[^\[\]\n]*\]|<[^<>\n]*>")
# Abbreviations between slashes, standing alone: `Doktor {m} /Dr./`. A slash
# inside a word (`dafür/dagegen`) or between spaces (`fixed / off`) is text.
# The lookbehind after the first slash keeps the fast scan for "/".
_ABBREVIATION = re.compile(r"/(?<!\S/)[^\s/|:][^/|:\n]{0,40}?(?<=\S)/(?!\S)")
_SPACES = re.compile(r"  +")
# A space that a removed annotation leaves before a mark, as in
# `gesetzt [Sprw.].` or `Richtig [ugs.]!`.
_SPACE_BEFORE_MARK = re.compile(r" ([.!?,])(?=[\s;|]|$)")
_EMPTY_PARENTHESES = re.compile(r"\( *\)")
_INNER_PARENTHESES = re.compile(r"\(([^()\n]*)\)")
# A prepared side can only hold a sentence if some item ends in . ! or ?.
_ITEM_END = re.compile(r"[.!?]\s*(?:[;|]|$)")
# Dictionary placeholders (`to insert sth.`, `etw. einlegen`) end phrases
# with a full stop that does not end a sentence.
_PLACEHOLDER_END = re.compile(r"(?:^|[\s/(])(?:sth|sb|etw|jd|jdn|jdm|jds)\.$")
_SENTENCE_END = (".", "!", "?")
# Word alternatives written with a slash and no spaces: `Regel/Tage`.
_WORD_ALTERNATIVES = re.compile(r"\b(\w+)(?:/\w+)+\b")

# Separators inside parentheses are hidden behind these characters while a
# side is split, so that `(für; gegen)` stays one note.
_HIDDEN = {";": "\x00", "|": "\x01", "(": "\x02", ")": "\x03"}


def _reveal(text):
    """Undoes the hiding; chained `replace` is much faster than `translate`."""
    if _HIDDEN["("] not in text:
        return text
    for char, hidden in _HIDDEN.items():
        text = text.replace(hidden, char)
    return text


def _hide(match):
    inner = match.group(1).replace(";", _HIDDEN[";"]).replace("|", _HIDDEN["|"])
    return _HIDDEN["("] + inner + _HIDDEN[")"]


def _prepare(text):
    """Removes annotations, tidies spaces, hides parenthesised separators.

    Works on one line or on a whole file at once: no pattern crosses a line
    break, and preparing the file in one pass is much faster than per line.
    """
    text = _ANNOTATION.sub("", text)
    if "/" in text:
        text = _ABBREVIATION.sub("", text)
    if "(" in text:
        text = _EMPTY_PARENTHESES.sub("", text)
        text = text.replace("( ", "(").replace(" )", ")")
        # Innermost parentheses first, until none is left: handles nesting.
        while True:
            hidden = _INNER_PARENTHESES.sub(_hide, text)
            if hidden == text:
                break
            text = hidden
    return _SPACE_BEFORE_MARK.sub(r"\1", _SPACES.sub(" ", text))


def _split_side(text, reveal):
    """One side of an entry as a list of alternatives, each a list of synonyms."""
    if reveal:
        return [
            [
                _reveal(synonym)
                for synonym in map(str.strip, alternative.split(";"))
                if synonym
            ]
            for alternative in text.split("|")
        ]
    # An empty alternative stays, as an empty list, to keep positions.
    return [
        [synonym for synonym in map(str.strip, alternative.split(";")) if synonym]
        for alternative in text.split("|")
    ]


def _align(german, english):
    """Pairs of one alternative: first synonyms always, the rest by position
    only when both sides list as many synonyms."""
    if not german or not english:
        return []
    if len(german) == len(english):
        return list(zip(german, english))
    return [(german[0], english[0])]


def _is_sentence(text):
    """An example sentence: ends in . ! or ?, does not start in lower case,
    holds no `a/b` word alternatives and no `sth.`-style placeholder."""
    return (
        text.endswith(_SENTENCE_END)
        and not text[0].islower()
        and "/" not in text
        and not _PLACEHOLDER_END.search(text)
    )


def _ends_like_sentence(text):
    return text.endswith(_SENTENCE_END) and not _PLACEHOLDER_END.search(text)


def _is_phrase_pair(german, english):
    return not _ends_like_sentence(german) and not _ends_like_sentence(english)


def _may_hold_sentences(line):
    """A cheap test that skips the many lines without any sentence pair."""
    german, _, english = line.partition(" :: ")
    return bool(_ITEM_END.search(english) and _ITEM_END.search(german))


def _aligned_pairs(line):
    """All aligned pairs of a line that went through `_prepare`."""
    if line.startswith("#"):
        return []
    german, separator, english = line.partition(" :: ")
    if not separator or " :: " in english:
        return []
    reveal = _HIDDEN["("] in line
    if "|" not in line and ";" not in line:
        # One word or phrase a side, as in a third of the entries.
        german, english = german.strip(), english.strip()
        if reveal:
            german, english = _reveal(german), _reveal(english)
        return [(german, english)] if german and english else []
    pairs = []
    for german_synonyms, english_synonyms in _alternatives(german, english, reveal):
        pairs.extend(_align(german_synonyms, english_synonyms))
    return pairs


def _alternatives(german, english, reveal):
    """(German synonyms, English synonyms) of each alternative of a line's
    two sides; empty when the sides list different numbers of them."""
    german = _split_side(german, reveal)
    english = _split_side(english, reveal)
    if len(german) != len(english):
        return []
    return list(zip(german, english))


def parse_trans_line(line, kind="sentences"):
    """Parses one `trans-de-en` dictionary line into (German, English) pairs.

    The line is split at ` :: `. On each side, annotations in `{}`, `[]`,
    `<>` and standalone `/abbreviations/` are removed and whitespace is
    collapsed; parenthesised words are kept, as they belong to the text.
    Alternatives (`|`) are paired by position, and only when both sides have
    the same number of them. Within an alternative, the first German synonym
    (`;`) is paired with the first English one, and the other synonyms by
    position when both sides have the same number of synonyms. Separators
    inside parentheses do not split.

    Args:
        line: one line of the dictionary (a trailing newline is ignored).
        kind: `"sentences"` keeps pairs where both sides are example
            sentences: they end in `.`, `!` or `?`, do not start with a
            lower-case letter, contain no `/` and do not end with a
            placeholder such as `sth.` or `etw.`. `"phrases"` keeps pairs
            where neither side ends like a sentence. `"all"` keeps every
            aligned pair.

    Returns:
        A list of `(german, english)` string pairs; empty for comments
        (lines starting with `#`), blank or malformed lines.

    Example:

    >>> parse_trans_line("Hund {m} | Der Hund bellt. :: dog | The dog barks.")
    [('Der Hund bellt.', 'The dog barks.')]
    >>> parse_trans_line("Hund {m}; Köter {m} :: dog; cur", kind="phrases")
    [('Hund', 'dog'), ('Köter', 'cur')]
    """
    if kind not in _KINDS:
        raise ValueError(f"`kind` must be one of {_KINDS}; received kind={kind!r}")
    pairs = _aligned_pairs(_prepare(line.rstrip("\r\n")))
    if kind == "sentences":
        return [(de, en) for de, en in pairs if _is_sentence(de) and _is_sentence(en)]
    if kind == "phrases":
        return [(de, en) for de, en in pairs if _is_phrase_pair(de, en)]
    return pairs


def _first_alternatives(text):
    """`Sie hat ihre Regel/Tage.` -> `Sie hat ihre Regel.`; `None` when a
    slash stands between spaces (`angebracht / angezeigt`), whose
    alternatives may span several words."""
    text = _WORD_ALTERNATIVES.sub(r"\1", text)
    return None if "/" in text else text


def _variant_pairs(line):
    """Sentence pairs of a prepared line that `_aligned_pairs` leaves out.

    Two kinds: the further synonyms of an alternative whose sides list
    different numbers of synonyms (`Zu dumm!; Wie dumm! :: What a
    nuisance!` gives `Wie dumm!` -> `What a nuisance!`; `_align` keeps only
    the first two), and sentences with word alternatives written with a
    slash, reduced to the first alternative of each (`Sie hat ihre
    Regel/Tage.` -> `Sie hat ihre Regel.`).
    """
    german, separator, english = line.partition(" :: ")
    if not separator or " :: " in english:
        return []
    pairs = []
    for german_synonyms, english_synonyms in _alternatives(
        german, english, _HIDDEN["("] in line
    ):
        aligned = _align(german_synonyms, english_synonyms)
        candidates = list(aligned)
        if aligned and len(german_synonyms) != len(english_synonyms):
            first_german, first_english = aligned[0]
            candidates += [(other, first_english) for other in german_synonyms[1:]]
            candidates += [(first_german, other) for other in english_synonyms[1:]]
        for de, en in candidates:
            if "/" in de or "/" in en:
                de, en = _first_alternatives(de), _first_alternatives(en)
            elif (de, en) in aligned:
                continue  # `_aligned_pairs` gives it already.
            if de and en and _is_sentence(de) and _is_sentence(en):
                pairs.append((de, en))
    return pairs

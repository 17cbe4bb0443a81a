"""What a person types to find a record by name, as a RediSearch condition on TAG fields: every
word a part of one of the fields.

RediSearch looks up a part of a TAG value (`@field:{*part*}`, with the part escaped) only when
the part has two bytes or more (its MINPREFIX), so a word of one ASCII character is left out;
and it folds the letter case of ASCII letters alone, on both sides, so each word is also sent in
small letters, in capitals and with a capital first, which finds a name written any of those
ways whatever its letters. A part found in more than 200 different values (MAXEXPANSIONS) finds
200 of them: more of the name finds the rest. tests/resolvers/test_name_search.py pins each of
these against the real server.
"""

import unicodedata
from collections.abc import Sequence
from functools import reduce
from operator import or_
from typing import Any

from parley.core.errors import BadArgument, searchable_text

MAX_LENGTH = 100
"""Characters a search text may have."""
MIN_BYTES = 2
"""The shortest part of a value RediSearch looks up, in UTF-8 bytes (its MINPREFIX)."""


def words(text: str) -> list[str]:
    """The words of `text` that can be looked up: split at white space and at `|` (which
    separates a TAG field's values, so no stored value holds one), in Unicode's composed form
    (as names are typed and stored), without the words too short to look up."""
    if len(text) > MAX_LENGTH:
        raise BadArgument(f"A search text has at most {MAX_LENGTH} characters, not {len(text)}.")
    composed = unicodedata.normalize("NFC", searchable_text(text))
    return [w for w in composed.replace("|", " ").split() if len(w.encode()) >= MIN_BYTES]


def spellings(word: str) -> list[str]:
    """`word` as typed, in small letters, in capitals and with a capital first, each once as
    RediSearch reads it (ASCII letters in small letters)."""
    found: dict[str, None] = {}
    for spelling in (word, word.lower(), word.upper(), word.capitalize()):
        found["".join(c.lower() if c.isascii() else c for c in spelling)] = None
    return list(found)


def containing(fields: Sequence[Any], text: str) -> list[Any]:
    """One redis-om condition per word of `text`: the word is a part of one of `fields` (TAG
    fields of one model). All of them hold for a record that has every word."""
    return [
        reduce(or_, [field.contains(spelling) for field in fields for spelling in spellings(w)])
        for w in words(text)
    ]

"""The masked columns of each dead letter, in plain Python over any sequences or Arrow arrays:
the Spark job's batch functions (batches.py) and the in-process engine (local.py, tally.py)
both call it (`masked_rows` on a batch's columns, `Masker` across batches), the latter without
importing pandas."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from deadletter.pipeline.text import mining_parts, tokenize

Key = tuple[str | None, str | None, str | None]
Masked = tuple[str, str, str]

# Digits 2-9 as 1. Masking reads a digit only as a digit (`\d`, `[0-9a-f]`) or as a zero
# (`0x`), never by its value, so texts that differ only in such digits mask alike unless a
# digit is kept in what masking gives back (a class tag, a path in a signature): there every
# 1 may stand for another digit, and the text is masked as it is. Texts of one failure differ
# mostly in their numbers (line numbers in traces, ids, counts), so that the distinct texts
# to mask are a fraction of the distinct texts read.
DIGIT_CLASSES = bytes.maketrans(b"23456789", b"11111111")
# Distinct texts kept masked between calls; cleared when full (a cache, never a result).
KEPT = 100_000


# A UUID as rules.MASKS finds it. Masking replaces every such UUID with <UUID> before any
# rule reads its characters one by one; before that, the rules and readings of the text
# beside the masks see of a UUID only whether its first and last characters are digits or
# letters (and their case: a head, a span before a unit, `\d:\d`) and whether it holds a
# digit: the e-mail rule takes it whole, and a URL (`://`) or Java's `$1` noise, which
# might start or end inside one, keep a text as it is. So texts that differ only in their
# UUIDs mask alike, unless a UUID reaches what masking gives back (a path in a signature)
# or two of a text's UUIDs become one. Messages that carry a request id are distinct one by
# one: a tenth to a fifth of those a million dead letters hold.
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_LETTER_CLASS = str.maketrans("abcdefABCDEF", "aaaaaaAAAAAA")
_DIGIT = re.compile(r"[0-9]")


def _as_uuid_class(match: re.Match[str]) -> str:
    """The UUID with its first and last characters' classes, and whether it holds a digit."""
    uuid = match.group(0)
    inside = (
        "1aaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaa"
        if _DIGIT.search(uuid)
        else "aaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaa"
    )
    return uuid[0].translate(_LETTER_CLASS) + inside + uuid[-1].translate(_LETTER_CLASS)


def as_digit_class(text: str | None) -> str | None:
    """The text with its digits 2-9 as 1."""
    if not text:
        return text
    # UTF-8 holds bytes 0x32-0x39 only as those ASCII digits.
    translated = text.encode("utf-8", "surrogatepass").translate(DIGIT_CLASSES)
    return translated.decode("utf-8", "surrogatepass")


class Masker:
    """(signature, tokens_text, context_text) of dead letters' (error, description,
    error_class), each distinct text masked once, and texts that differ only in their digits'
    values once between them."""

    def __init__(self) -> None:
        self._by_class: dict[Key, Masked | None] = {}
        self._by_text: dict[Key, Masked] = {}
        self._tokenized: dict[str, str] = {}
        self._by_uuid_class: dict[Key, Masked | None] = {}

    def _tokens(self, text: str) -> str:
        found = self._tokenized.get(text)
        if found is None:
            if len(self._tokenized) >= KEPT:
                self._tokenized.clear()
            found = self._tokenized[text] = " ".join(tokenize(text))
        return found

    def _parts(self, key: Key) -> Masked:
        signature, headline, context = mining_parts(*key)
        return signature, self._tokens(headline), self._tokens(context) if context else ""

    def mask(self, key: Key) -> Masked:
        """The masked parts of one (error, description, error_class)."""
        shaped = (as_digit_class(key[0]), as_digit_class(key[1]), as_digit_class(key[2]))
        found = self.of_digit_class(shaped)
        return found if found is not None else self.of_text(key)

    def of_digit_class(self, shaped: Key) -> Masked | None:
        """The masked parts of every key whose texts give `shaped` (as_digit_class), or None
        where they depend on the digits' values: `of_text` then masks the texts themselves."""
        found = self._by_class.get(shaped, False)
        if found is False:
            found = self._of_uuid_class(shaped)
            if found is None:
                found = self._parts(shaped)
            if "1" in found[0] or "1" in found[1] or "1" in found[2]:
                found = None  # a digit reached the result: its value counts
            if len(self._by_class) >= KEPT:
                self._by_class.clear()
            self._by_class[shaped] = found
        return found  # type: ignore[return-value]

    def _of_uuid_class(self, shaped: Key) -> Masked | None:
        """The masked parts of `shaped` from those of the same texts with their UUIDs as
        classes (`_UUID`), where that is sure: no exception class given, no URL nor `$`,
        two distinct UUIDs stay two, and no part of one reaches the masked parts; else
        None."""
        error, description, error_class = shaped
        texts = (error or "") + "\n" + (description or "")
        if error_class is not None or "-" not in texts or "://" in texts or "$" in texts:
            return None
        uuids = set(_UUID.findall(texts))
        if not uuids:
            return None
        if len({_UUID.sub(_as_uuid_class, u) for u in uuids}) != len(uuids):
            return None
        key = (
            _UUID.sub(_as_uuid_class, error) if error else error,
            _UUID.sub(_as_uuid_class, description) if description else description,
            None,
        )
        found = self._by_uuid_class.get(key, False)
        if found is False:
            found = self._parts(key)
            if any("aaaa" in part or "AAAA" in part for part in found):
                found = None  # a UUID may have reached the result: its characters count
            if len(self._by_uuid_class) >= KEPT:
                self._by_uuid_class.clear()
            self._by_uuid_class[key] = found
        return found  # type: ignore[return-value]

    def of_text(self, key: Key) -> Masked:
        """The masked parts of one key, from its texts as they are."""
        found = self._by_text.get(key)
        if found is None:
            if len(self._by_text) >= KEPT:
                self._by_text.clear()
            found = self._by_text[key] = self._parts(key)
        return found

    def mask_all(self, keys: Iterable[Key]) -> list[Masked]:
        """`mask` of each key, each distinct key once."""
        seen: dict[Key, Masked] = {}
        out = []
        for key in keys:
            found = seen.get(key)
            if found is None:
                found = seen[key] = self.mask(key)
            out.append(found)
        return out


def masked_rows(error: Any, description: Any, error_class: Any) -> list[tuple[str, ...]]:
    """(signature, tokens_text, context_text) of each dead letter (its exception class as
    text.mining_parts takes it), from three sequences or Arrow arrays of texts: what a batch of
    either engine calls.

    Each distinct text is masked once: dead letters of one failure repeat their description
    nearly always and their headline often, and masking is the costly part.
    """
    cells = zip(
        map(text_cell, _values(error)),
        map(text_cell, _values(description)),
        map(text_cell, _values(error_class)),
        strict=True,
    )
    return Masker().mask_all(cells)  # type: ignore[return-value]


def _values(column: Any) -> Iterable[object]:
    """A column's values: an Arrow array's as Python objects, any other sequence as it is."""
    to_pylist = getattr(column, "to_pylist", None)
    return to_pylist() if callable(to_pylist) else column  # type: ignore[no-any-return]


def text_cell(value: object) -> str | None:
    """A text cell, None for a missing one (pandas gives None or NaN)."""
    return value if isinstance(value, str) else None

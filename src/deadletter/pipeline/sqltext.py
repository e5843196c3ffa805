"""text.py's masking, tokenising and plain-error headlines as Spark SQL expressions (JVM).

The Python functions in text.py stay the reference: every regex here is the Java spelling of
one there, and tests/pipeline/test_sqltext.py checks that both give the same tokens. The
differences between the two regex engines and how they are bridged:

- Java's `\\w`, `\\d`, `\\b` and `\\s` are ASCII unless `(?U)` is set; Python's are Unicode.
  Every pattern starts with `(?U)`.
- Python's `\\s` (str.isspace) also matches the separators U+001C..U+001F, Java's Unicode
  `\\s` does not: they are added by hand (`_SPACE`).
- Java writes a group in a replacement as `$1` (Python: `\\1`).
- Python masks quoted text with a callback (kept when it is an identifier). Java has no
  callback: the kept forms are one alternative of the pattern, written back between two
  private-use marks, and the other quotes leave an empty pair of marks that then becomes
  `<QUOTED>`. A text that already holds those marks (U+E000, U+E001) is masked differently.
- `str.splitlines` splits on more line ends than Java does by default: they are listed.

Left unbridged: Python's `\\w` counts the other-number digits (`²`) as word characters and
Java's counts combining marks; a word boundary next to such a character may differ.
"""

from __future__ import annotations

from typing import Any

_SPACE = r"\s\x{1c}-\x{1f}"
_KEEP_OPEN, _KEEP_CLOSE = "\ue000", "\ue001"

# text._MASKS in order, in Java syntax (the third field, text's shortcut, is kept for
# reading them side by side; see `mask`).
DIGIT = "0-9"
MASKS: list[tuple[str, str, str]] = [
    (rf"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^{_SPACE}'\"<>]+", "<URL>", "://"),
    (r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", "<EMAIL>", "@"),
    (
        r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
        "<UUID>",
        "-",
    ),
    (
        r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
        "<TS>",
        ":",
    ),
    (r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<TS>", ":"),
    (r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){3,}[0-9a-fA-F]{1,4}(?![\w:])", "<IP>", ":"),
    (r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b", "<IP>", "."),
    (r"(?<![\w.:/-])[A-Za-z][\w-]*(?:[.-][\w-]+)+:\d{2,5}\b", "<IP>", ":"),
    (
        r"\b(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) /\S*(?: HTTP/\d(?:\.\d)?)?",
        "$1 <PATH>",
        " /",
    ),
    (r"(?<![\w.])(?:/[\w.@%+-]+){2,}/?", "<PATH>", "/"),
    (r"\b[A-Za-z]:(?:\\[\w.$ -]+)+", "<PATH>", "\\"),
    (r"\b0x[0-9a-fA-F]+\b", "<HEX>", "0x"),
    (r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b", "<HEX>", DIGIT),
    (
        rf"(?<![\w.])\d+(?:\.\d+)?[{_SPACE}]?(?:bytes?|[KMGT]i?B|B)\b"
        rf"(?:[{_SPACE}]\(\d+(?:\.\d+)?[{_SPACE}]?[KMGT]i?B\))?",
        "<SIZE>",
        DIGIT,
    ),
    (
        rf"(?<![\w.])[<>]?\d+(?:\.\d+)?[{_SPACE}]?(?:ms|us|µs|ns|s|sec|secs|seconds?|m|mins?"
        r"|minutes?|h|hours?)\b",
        "<DUR>",
        DIGIT,
    ),
    (r"(?<![\w:.])\d{1,2}:\d{2}(?![\w:])", "<DUR>", ":"),
]
_IDENT = r"[A-Za-z_][A-Za-z_.\[\]-]{0,199}"
_REQUEST = r"(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) <PATH>"
QUOTED = (
    rf"('(?:{_IDENT}|{_REQUEST})'|\"(?:{_IDENT}|{_REQUEST})\")"
    r"|'[^'\n]{0,200}'|\"[^\"\n]{0,200}\""
)
TOKEN_SPLIT = rf"[{_SPACE},;=()\[\]{{}}|]+|::"
EDGE_PUNCT = r"^[.:!?\"`]+|[.:!?\"`]+$"
ONLY_PUNCT = r"^[.:!?\"`]+$"
NUMBER = r"^[-+]?\d+(?:[.,]\d+)*%?$"
LINE_ENDS = r"\r\n|[\n\r\x{0b}\x{0c}\x{1c}\x{1d}\x{1e}\x{85}\x{2028}\x{2029}]"
STRIP = rf"^[{_SPACE}]+|[{_SPACE}]+$"
# An error that may hold a Python or Java stack frame (a superset of text._PY_FRAME and
# text._JAVA_FRAME matching some line): its signature is left to text.exception_signature.
MAY_HAVE_FRAMES = r"File \"[^\"]+\", line \d+, in \S|at [\w$.<>/]+\("


def _u(pattern: str) -> str:
    return "(?U)" + pattern


def _F() -> Any:
    from pyspark.sql import functions as F

    return F


def strip(col: Any) -> Any:
    """str.strip(): Unicode white space at both ends."""
    return _F().regexp_replace(col, _u(STRIP), "")


def mask(col: Any) -> Any:
    """text.mask on the JVM.

    Unlike text.mask, every expression runs on every text: a `when(has, replace(prev),
    prev)` chain names the previous step twice, and the expression tree would double with
    each of the sixteen steps.
    """
    F = _F()
    for pattern, placeholder, _needs in MASKS:
        col = F.regexp_replace(col, _u(pattern), placeholder)
    col = F.regexp_replace(col, _u(QUOTED), f"{_KEEP_OPEN}$1{_KEEP_CLOSE}")
    col = F.regexp_replace(col, _KEEP_OPEN + _KEEP_CLOSE, "<QUOTED>")
    return F.regexp_replace(col, f"[{_KEEP_OPEN}{_KEEP_CLOSE}]", "")


def _is_placeholder(token: Any) -> Any:
    from deadletter.pipeline.text import PLACEHOLDERS

    return token.isin(*sorted(PLACEHOLDERS))


def _mask_token(token: Any) -> Any:
    F = _F()
    return (
        F.when(token.rlike(r"^\p{L}+$") | _is_placeholder(token), token)
        .when(token.rlike(_u(NUMBER)), F.lit("<NUM>"))
        .when(token.rlike(_u(r"\d")) & (F.instr(token, "<") == 0), F.lit("<ID>"))
        .when(token.rlike("<[A-Z]+>"), F.lit("<ID>"))
        .otherwise(token)
    )


def tokens(col: Any) -> Any:
    """text.tokenize on the JVM: an array of masked tokens, runs of variables as one."""
    F = _F()
    raw = F.filter(F.split(mask(col), _u(TOKEN_SPLIT), -1), lambda t: t != "")
    # Each step reads the previous array once and its element (a lambda variable) freely:
    # the regexes run once per token.
    stripped = F.transform(
        raw,
        lambda t: F.when(t.rlike(ONLY_PUNCT), t).otherwise(F.regexp_replace(t, EDGE_PUNCT, "")),
    )
    words = F.transform(stripped, _mask_token)

    def keep(out: Any, t: Any) -> Any:
        after_variable = _is_placeholder(t) & _is_placeholder(F.get(out, F.size(out) - 1))
        return F.when(F.coalesce(after_variable, F.lit(False)), out).otherwise(
            F.concat(out, F.array(t))
        )

    # One pass with the output as accumulator: `words` is computed once, not per element.
    return F.aggregate(words, F.array().cast("array<string>"), keep)


def plain_headline(error: Any) -> Any:
    """text.exception_signature's headline of an error without stack frames: its non-blank
    lines, stripped, joined by one space."""
    F = _F()
    lines = F.transform(F.split(error, _u(LINE_ENDS), -1), strip)
    return F.coalesce(F.array_join(F.filter(lines, lambda s: s != ""), " "), F.lit(""))


def may_have_frames(error: Any) -> Any:
    """True when text.exception_signature might find a stack frame in `error`."""
    return _F().coalesce(error.rlike(_u(MAY_HAVE_FRAMES)), _F().lit(False))


# Payload shape --------------------------------------------------------------------------
# A JSON string literal as Python's json module accepts it (no raw control characters, only
# the standard escapes), and a JSON number standing alone. Possessive loops: a long string
# value is one step, not one stack frame per character.
_LIT = r'"(?:[^"\\\x{00}-\x{1f}]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+"'
_JSON_SPACE = r"[ \t\n\r]*"
_NUMBER = r"(?<![\w.+-])-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![\w.+-])"
_KEY_OR_VALUE = rf"{_LIT}(?!{_JSON_SPACE}:)|({_LIT}){_JSON_SPACE}:"
_SHAPE_SEP, _KEY_SEP = "\x00", "\x01"


def body_shape(body: Any) -> Any:
    """What text.key_paths reads of a JSON body, values left out: the text with every string
    literal as `"` and every number as `0`, then the literals that are keys, in order. Bodies
    of one message type share a shape, so key paths are computed once per shape
    (`key_paths_of_shape`) instead of once per message."""
    F = _F()
    skeleton = F.regexp_replace(F.regexp_replace(body, _LIT, '"'), _NUMBER, "0")
    keys = F.array_join(F.regexp_extract_all(body, F.lit(_KEY_OR_VALUE), 1), _KEY_SEP)
    return F.concat(skeleton, F.lit(_SHAPE_SEP), keys)


def key_paths_of_shape(shape: str | None) -> list[str]:
    """text.key_paths of any body with this shape: the shape is turned back into JSON with
    empty strings and zeros as values, which has the same key paths. A body that is not
    JSON keeps a quote no literal accounted for, and gives [] as text.key_paths does."""
    from deadletter.pipeline.text import key_paths

    if not shape:
        return []
    skeleton, _, joined = shape.rpartition(_SHAPE_SEP)
    pieces = skeleton.split('"')
    literals = joined.split(_KEY_SEP) if len(pieces) > 1 else []
    if len(literals) != len(pieces) - 1:
        return []
    out = [pieces[0]]
    for literal, piece in zip(literals, pieces[1:], strict=True):
        out += [literal or '""', piece]
    return key_paths("".join(out))

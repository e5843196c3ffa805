"""Pure-Python text handling: variable masking, tokenising, exception signatures, key paths."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import msgspec

from deadletter.pipeline import rules

# The rules (rules.py) compiled once; see there for what each one is for.
DIGIT = rules.DIGIT
_Mask = tuple[re.Pattern[str], str, str, re.Pattern[str] | None]
_MASKS: list[_Mask] = [
    (re.compile(pattern), placeholder, needs, re.compile(gate) if gate else None)
    for pattern, placeholder, needs, gate in rules.MASKS
]
_QUOTED = re.compile(rules.QUOTED)
_QUOTED_KEPT = re.compile(rules.QUOTED_KEPT)
_NUMBER = re.compile(rules.NUMBER)
_CLASS_TAG = re.compile(rules.CLASS_TAG)
_CAUSE = re.compile(rules.CAUSE)
_HAS_DIGIT = re.compile(r"\d")
_PLACEHOLDER_INSIDE = re.compile(r"<[A-Z]+>")
_TOKEN_SPLIT = re.compile(rules.TOKEN_SPLIT)
_EDGE_PUNCT = rules.EDGE_PUNCT
_HEAD = re.compile(rules.HEAD)
_BACKQUOTED = re.compile(r"`[^`'\n]*['`]")
HEAD_MARK = rules.HEAD_MARK
CAUSE = "<CAUSE>"
TAIL_MARK = rules.TAIL_MARK

PLACEHOLDERS = frozenset(
    {"<URL>", "<EMAIL>", "<UUID>", "<TS>", "<IP>", "<PATH>", "<HEX>", "<DUR>", "<QUOTED>"}
    | {"<SIZE>", "<NUM>", "<ID>", "<CAUSE>", "<*>"}
)


def _mask_quoted(match: re.Match[str]) -> str:
    inner = next(g for g in match.groups() if g is not None)
    if _QUOTED_KEPT.match(inner):
        return match.group(0)
    return "<QUOTED>"


def mask(text: str) -> str:
    """Replace the variable parts of an error text with typed placeholders."""
    has_digit = _HAS_DIGIT.search(text) is not None
    for pattern, placeholder, needs, gate in _MASKS:
        if (has_digit if needs == DIGIT else needs in text) and (
            gate is None or gate.search(text) is not None
        ):
            text = pattern.sub(placeholder, text)
    if "'" in text or '"' in text or "`" in text:
        text = _QUOTED.sub(_mask_quoted, text)
    return text


def _mask_token(token: str) -> str:
    if token.isalpha() or token in PLACEHOLDERS:
        return token
    if _NUMBER.match(token):
        return "<NUM>"
    if _CLASS_TAG.match(token):
        return token
    # Any remaining token with a digit (ord-48213, SKU-9A3F, v2) is an identifier instance,
    # and so is a token that glues a masked variable to more text (host/<IP>).
    if _HAS_DIGIT.search(token) and "<" not in token:
        return "<ID>"
    if _PLACEHOLDER_INSIDE.search(token):
        return "<ID>"
    return token


def tokenize(text: str) -> list[str]:
    """Masked tokens of one line of error text.

    A run of variables becomes one placeholder (the first one's): a list of hosts, a size
    with its unit or a count followed by an id is one variable however long it is, so the
    same event keeps one token count (as Loghub-2.0 does when it compares templates).
    A leading component name (`useradd: ...`) is one token ending in HEAD_MARK, and the
    place of the last ": " outside quotes is marked with TAIL_MARK: the miner decides from the
    data whether the name and the tail are variables (mining.mine_all).
    """
    out: list[str] = []
    head = _HEAD.match(text) if ":" in text[:80] else None
    if head:
        out.append(head.group(1) + HEAD_MARK)
        text = text[head.end() :]
    cause = _CAUSE.search(text) if ": " in text else None
    if cause is not None and _outside_quotes(text[: cause.start()]):
        # A wrapped cause (`...: java.io.IOException: No space left on device`) is the text
        # of another error: one variable, whatever its class and message.
        _tokens_of(text[: cause.start()], out)
        out.append(CAUSE)
        return out
    stem, sep, tail = text.rpartition(": ")
    if not sep and text.rstrip().endswith(":"):
        # An empty detail (`invalid value: `) is the tail's empty value.
        stem, sep, tail = text.rstrip()[:-1], ":", ""
    if sep and stem.strip() and _outside_quotes(stem):
        _tokens_of(stem, out)
        mark = len(out)
        out.append(TAIL_MARK)
        _tokens_of(tail, out)
        # A tail of variables alone varies already: no mark, the tokens stay as they were.
        if len(out) > mark + 1 and all(t in PLACEHOLDERS for t in out[mark + 1 :]):
            del out[mark]
            if mark and mark < len(out) and out[mark - 1] in PLACEHOLDERS:
                del out[mark]
    else:
        _tokens_of(text, out)
    return out


def _outside_quotes(stem: str) -> bool:
    """Whether a ": " after `stem` is outside quotes and brackets (`[instance: 7] Took`)."""
    if "`" in stem:
        stem = _BACKQUOTED.sub("", stem)
    return (
        stem.count('"') % 2 == 0
        and stem.count("'") % 2 == 0
        and all(stem.count(a) == stem.count(b) for a, b in ("()", "[]", "{}"))
    )


def _tokens_of(text: str, out: list[str]) -> None:
    if not _spans(text):
        _split_tokens_of(text, out)
        return
    seen = _TOKENS_SEEN
    for raw in _TOKEN_SPLIT.split(mask(text)):
        token = seen.get(raw)
        if token is None:
            token = raw.strip(_EDGE_PUNCT) or raw
            if token:
                token = _mask_token(token)
            if len(seen) >= _TOKENS_KEPT:
                seen.clear()
            seen[raw] = token
        if token and not (out and token in PLACEHOLDERS and out[-1] in PLACEHOLDERS):
            out.append(token)


def _spans(text: str) -> bool:
    """Whether a mask may cross a separator in `text` (rules.SPANS)."""
    for pattern, needs in _SPANS:
        if needs in text and (pattern is None or pattern.search(text) is not None):
            return True
    return False


def _split_tokens_of(text: str, out: list[str]) -> None:
    """`_tokens_of` for a text where no mask crosses a separator (rules.SPANS): split once,
    then mask only the tokens not seen before, each on its own.

    Most tokens are words seen before, and the variable ones (ids, counts, hex values) repeat
    their shape: a token's masked form depends on its digits only through which are digits
    and which zeros (`0x`), so `ord-48213` is looked up as `ord-11111`. A token with `<` is
    the exception (`<5` stays itself) and is looked up as it is.
    """
    seen = _RAW_SEEN
    by_class = _CLASS_SEEN
    for raw in _TOKEN_SPLIT.split(text):
        token = seen.get(raw)
        if token is None:
            key = None if "<" in raw else raw.translate(_ONE_DIGIT)
            token = None if key is None else by_class.get(key)
            if token is None:
                if len(seen) >= _TOKENS_KEPT or len(by_class) >= _TOKENS_KEPT:
                    seen.clear()
                    by_class.clear()
                token = _masked_token(raw, _WORD_MASKS)
                # A token that keeps its digits (a class tag) is looked up as it is, apart
                # from the others: `TAG_1011` is not what `TAG_2033` gives.
                if key is None or _HAS_DIGIT.search(token):
                    seen[raw] = token
                else:
                    by_class[key] = token
        if token and not (out and token in PLACEHOLDERS and out[-1] in PLACEHOLDERS):
            out.append(token)


def _masked_token(raw: str, word_masks: list[_Mask]) -> str:
    """One token of a text where no mask crosses a separator, masked alone (`word_masks`:
    the masks whose `needs` a word of ASCII letters, digits and `_` can hold)."""
    if _ASCII_WORD.fullmatch(raw):
        # As `mask`, less the masks such a word cannot satisfy; it has no edge punctuation.
        has_digit = _HAS_DIGIT.search(raw) is not None
        for pattern, placeholder, needs, gate in word_masks:
            if (has_digit if needs == DIGIT else needs in raw) and (
                gate is None or gate.search(raw) is not None
            ):
                raw = pattern.sub(placeholder, raw)
        return _mask_token(raw)
    masked = mask(raw)
    token = masked.strip(_EDGE_PUNCT) or masked
    return _mask_token(token) if token else token


# Each raw token's masked form: words repeat across messages far more than messages do, and
# the per-token rules cost more than a lookup. Bounded: cleared when full.
_TOKENS_SEEN: dict[str, str] = {}
_TOKENS_KEPT = 200_000
# The same for `_split_tokens_of`, whose tokens are not masked yet; and by the token with its
# digits 2-9 as 1, for the tokens whose masked form keeps no digit.
_RAW_SEEN: dict[str, str] = {}
_CLASS_SEEN: dict[str, str] = {}
_SPANS = [(re.compile(p) if p else None, needs) for p, needs in rules.SPANS]
_ONE_DIGIT = str.maketrans("23456789", "11111111")
_ASCII_WORD = re.compile(r"[A-Za-z0-9_]+")
# The masks whose `needs` a word of ASCII letters, digits and `_` can hold (`_masked_token`).
_WORD_MASKS = [m for m in _MASKS if m[2] == DIGIT or _ASCII_WORD.fullmatch(m[2])]


def clear_caches() -> None:
    """Forget the tokens masked so far: they were masked by the masks of the time, so code
    that replaces the masks (`_MASKS`, `_WORD_MASKS`) clears them before and after."""
    _TOKENS_SEEN.clear()
    _RAW_SEEN.clear()
    _CLASS_SEEN.clear()


# Exception signatures -----------------------------------------------------------------

_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+, in (\S+)')
_PY_EXC = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
_JAVA_FRAME = re.compile(r"^\s*at ([\w$.<>/]+)\(([^)]*)\)")
_JAVA_EXC = re.compile(
    r"^(?:Caused by: )?([a-zA-Z_$][\w$]*(?:\.[\w$]+)+(?:Exception|Error|Throwable)\w*)"
)
_LAMBDA_NOISE = re.compile(r"\$\$Lambda\$?[\w/]*|\$\d+|0x[0-9a-fA-F]+")
TOP_FRAMES = 3


_PY_ROOTS = re.compile(r"^.*/(?:site-packages|dist-packages|lib/python[\d.]*|app|src)/")


@functools.lru_cache(maxsize=4096)
def _module_of(path: str) -> str:
    """Module-like name of a source path, independent of where it is installed."""
    path = _PY_ROOTS.sub("", path.replace("\\", "/"))
    return path.removesuffix(".py").replace("/", ".").strip(".")


def exception_signature(error: str | None) -> tuple[str, str]:
    """(signature, headline) of an error text.

    The signature is the exception type plus the innermost frames (Python and Java traces),
    with line numbers, lambda ids and addresses left out; empty when there is no trace. The
    headline is the line that states the failure, used for template mining.
    """
    if not error:
        return "", ""
    lines = error.splitlines()
    if len(lines) == 1:
        # Most errors are one line: a trace needs a frame, and a frame alone is read below.
        line = lines[0]
        if not (
            ('File "' in line and _PY_FRAME.match(line))
            or ("at " in line and _JAVA_FRAME.match(line))
        ):
            return "", line.strip()
    lines = [line for line in lines if line.strip()]
    if not lines:
        return "", ""
    # Only the last traceback of a chain ("During handling of the above exception...")
    # names the failure that killed the message.
    # The substring tests skip line-by-line scans that cannot match (most errors are one line).
    starts = (
        [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent")]
        if "Traceback (most recent" in error
        else []
    )
    tail = lines[starts[-1] :] if starts else lines
    py_frames = (
        [(i, m) for i, m in enumerate(_PY_FRAME.match(line) for line in tail) if m]
        if 'File "' in error
        else []
    )
    if py_frames:
        last = py_frames[-1][0]
        # The exception line is the first unindented line after the innermost frame.
        after = [line for line in tail[last + 1 :] if not line[:1].isspace()]
        headline = after[0].strip() if after else tail[-1].strip()
        exc = _PY_EXC.match(headline)
        exc_type = exc.group(1) if exc else headline.split(":", 1)[0]
        frames = [f"{_module_of(m.group(1))}:{m.group(2)}" for _, m in py_frames[-TOP_FRAMES:]]
        frames.reverse()  # innermost first, as in Java
        return f"{exc_type} @ {' < '.join(frames)}", headline
    java_frames = (
        [(i, m) for i, m in enumerate(_JAVA_FRAME.match(line) for line in lines) if m]
        if "at " in error
        else []
    )
    if java_frames:
        # The root cause is the last "Caused by"; its frames follow it.
        start = 0
        if "Caused by:" in error:
            for i, line in enumerate(lines):
                if line.lstrip().startswith("Caused by:"):
                    start = i
        head = lines[start].strip().removeprefix("Caused by: ")
        exc = _JAVA_EXC.match(head)
        exc_type = exc.group(1) if exc else head.split(":", 1)[0]
        frames_after = [m for i, m in java_frames if i >= start]
        top = frames_after[:TOP_FRAMES] or [m for _, m in java_frames[:TOP_FRAMES]]
        names = [_LAMBDA_NOISE.sub("", m.group(1)) for m in top]
        return f"{exc_type} @ {' < '.join(names)}", head
    return "", " ".join(line.strip() for line in lines)


_LEADING_NAME = re.compile(r"^([A-Za-z_$][\w.$]*)(?::\s*|$)")


def _last_name(name: str) -> str:
    return re.split(r"[.$]", name)[-1]


def without_class(headline: str, error_class: str) -> str:
    """The headline without a leading exception name that is `error_class`, however it is
    qualified (`ValueError: x`, `builtins.ValueError: x` and `x` all give `x`)."""
    match = _LEADING_NAME.match(headline)
    if match is None or _last_name(match.group(1)) != _last_name(error_class):
        return headline
    return headline[match.end() :].strip()


def mining_parts(
    error: str | None, description: str | None, error_class: str | None = None
) -> tuple[str, str, str]:
    """(signature, text to mine, context): the context is the description when the error gave
    the text to mine, so that both parts of a dead letter count (see mining.with_context).

    An exception class the consumer gave as a field is the signature, in place of the one
    read from the text, and its name is taken off the headline: dead letters of two classes
    never share a pattern, and those of one class share it however the text spells the class.
    """
    signature, headline = exception_signature(error)
    if error_class is not None and error_class.strip():
        signature = error_class.strip()
        headline = without_class(headline, signature)
    text = (description or "").strip()
    if headline:
        return signature, headline, text
    return signature, text, ""


# Payload shape ------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


_DECODE = msgspec.json.Decoder().decode


def key_paths(body: str | None, max_paths: int = 200) -> list[str]:
    """Sorted `path:type` entries of a JSON body (`items[].sku:string`); [] when not JSON."""
    if not body:
        return []
    try:
        value = _DECODE(body)
    except msgspec.DecodeError:
        try:
            value = json.loads(body)
        except (ValueError, TypeError):
            return []
    out: set[str] = set()

    def walk(node: Any, prefix: str) -> None:
        if len(out) >= max_paths:
            return
        if isinstance(node, dict):
            for key, child in node.items():
                path = f"{prefix}.{key}" if prefix else str(key)
                out.add(f"{path}:{_type_name(child)}")
                walk(child, path)
        elif isinstance(node, list):
            for child in node[:20]:
                walk(child, f"{prefix}[]")

    walk(value, "")
    return sorted(out)

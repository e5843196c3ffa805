"""The tokeniser as it was written first, kept as the oracle of text.tokenize: every mask
over the whole text, then one split, then the rules of each token, with no cache."""

from __future__ import annotations

from deadletter.pipeline import text


def tokenize(line: str) -> list[str]:
    out: list[str] = []
    head = text._HEAD.match(line) if ":" in line[:80] else None
    if head:
        out.append(head.group(1) + text.HEAD_MARK)
        line = line[head.end() :]
    stem, sep, tail = line.rpartition(": ")
    if not sep and line.rstrip().endswith(":"):
        stem, sep, tail = line.rstrip()[:-1], ":", ""
    if sep and stem.strip() and text._outside_quotes(stem):
        _tokens_of(stem, out)
        mark = len(out)
        out.append(text.TAIL_MARK)
        _tokens_of(tail, out)
        if len(out) > mark + 1 and all(t in text.PLACEHOLDERS for t in out[mark + 1 :]):
            del out[mark]
            if mark and mark < len(out) and out[mark - 1] in text.PLACEHOLDERS:
                del out[mark]
    else:
        _tokens_of(line, out)
    return out


def _tokens_of(line: str, out: list[str]) -> None:
    for raw in text._TOKEN_SPLIT.split(text.mask(line)):
        token = raw.strip(text._EDGE_PUNCT) or raw
        if token:
            token = text._mask_token(token)
        if token and not (out and token in text.PLACEHOLDERS and out[-1] in text.PLACEHOLDERS):
            out.append(token)

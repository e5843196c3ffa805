"""The self-contained HTML report: inline SVG charts and a table, no external resources."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from html import escape as escape_html
from typing import Any

from deadletter.terminal import terminal_safe


def page_text(text: str) -> str:
    """`text` for the page: its markup escaped, and what would hide or reorder it (a control,
    a mark that turns a line around) shown as its \\uXXXX escape, as the command line shows it
    (`terminal_safe`): a dead letter's error is the text of whoever rejected it."""
    return escape_html(terminal_safe(text))


COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"]
TOP = 8
MAX_HOURS = 24 * 90


def label(pattern: dict[str, Any]) -> str:
    """The template, after the exception class a consumer gave as a field (its name is taken
    off the text mined, text.mining_parts, so the label puts it back); or for dead letters
    that carried no error text at all (they ran out of claims, say) a label naming why they
    were dead-lettered."""
    template = str(pattern.get("template") or "")
    signature = str(pattern.get("signature") or "")
    if signature and " @ " not in signature and not template.startswith(signature):
        return f"{signature}: {template}" if template else signature
    if template:
        return template
    reasons = ", ".join(_texts(pattern.get("reasons"))) or "unknown reason"
    return f"(no error text: {reasons})"


def sureness(pattern: dict[str, Any]) -> str:
    """One line on how sure a stored pattern is (purity.explain): its purity, and for an
    impure one each place that looks like two failures, with its values."""
    purity = pattern.get("purity")
    if not isinstance(purity, int | float):
        return f"pattern {pattern.get('id')}: {label(pattern)}"
    line = f"pattern {pattern.get('id')}: {label(pattern)} (purity {purity:.2f})"
    if not pattern.get("impure"):
        return line
    places = [
        f"#{v.get('variable')} {' / '.join(_texts(v.get('values')))}"
        for v in pattern.get("variables") or []
        if isinstance(v, dict) and v.get("warning")
    ]
    return f"{line}; impure, it may mix failures: " + ("; ".join(places) or "see its report")


def _texts(values: list[Any] | None) -> list[str]:
    """A list's values as text, without the nulls a malformed input row leaves."""
    return [str(v) for v in values or [] if v is not None]


def _shown(example: dict[str, Any] | None) -> Any:
    """The example with its body decoded when it is JSON text, so that it shows once encoded
    rather than as a string of escaped quotes."""
    if not example or not isinstance(example.get("body"), str):
        return example
    try:
        body = json.loads(example["body"])
    except ValueError:
        return example
    return {**example, "body": body}


def _bar_chart(patterns: list[dict[str, Any]]) -> str:
    top = patterns[:15]
    if not top:
        return "<p>No dead letters.</p>"
    width, row_h, label_w = 760, 22, 130
    peak = max(p["count"] for p in top) or 1
    bars = []
    for i, p in enumerate(top):
        w = (width - label_w - 60) * p["count"] / peak
        y = i * row_h
        bars.append(
            f'<text x="0" y="{y + 15}" font-size="12">{page_text(p["id"])}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" '
            f'fill="{COLORS[i % len(COLORS)]}"><title>{page_text(label(p))}</title></rect>'
            f'<text x="{label_w + w + 4:.1f}" y="{y + 15}" font-size="12">{p["count"]}</text>'
        )
    height = row_h * len(top)
    return (
        f'<svg width="{width}" height="{height}" '
        f'role="img" aria-label="top patterns">{"".join(bars)}</svg>'
    )


def _shift(hour: str, by: int) -> str:
    moved = datetime.fromisoformat(hour.replace("Z", "+00:00")) + timedelta(hours=by)
    return moved.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _time_chart(patterns: list[dict[str, Any]]) -> str:
    top = [p for p in patterns[:TOP] if p["hourly_counts"]]
    seen = sorted({h for p in top for h, _ in p["hourly_counts"]})
    if not seen:
        return "<p>No timestamps.</p>"
    # Every hour of the range, quiet ones included, so the x axis is linear in time.
    first, last = (datetime.fromisoformat(h.replace("Z", "+00:00")) for h in (seen[0], seen[-1]))
    span = min(int((last - first).total_seconds() // 3600), MAX_HOURS)
    hours = [
        (first + timedelta(hours=i)).strftime("%Y-%m-%dT%H:%M:%S.000Z") for i in range(span + 1)
    ]
    if len(hours) < 3:
        # One or two busy hours: a quiet hour on each side, so each line is a visible peak.
        hours = [_shift(hours[0], -1), *hours, _shift(hours[-1], 1)]
    hours = sorted(set(hours) | set(seen))
    width, height, pad = 760, 240, 40
    index = {h: i for i, h in enumerate(hours)}
    peak = max(c for p in top for _, c in p["hourly_counts"]) or 1
    step = (width - 2 * pad) / max(1, len(hours) - 1)

    def xy(h: str, c: int) -> str:
        x = pad + index[h] * step
        y = height - pad - (height - 2 * pad) * c / peak
        return f"{x:.1f},{y:.1f}"

    lines = []
    for i, p in enumerate(top):
        counts = dict((h, c) for h, c in p["hourly_counts"])
        points = " ".join(xy(h, counts.get(h, 0)) for h in hours)
        color = COLORS[i % len(COLORS)]
        lines.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}">'
            f"<title>{page_text(p['id'])}: {page_text(label(p))}</title></polyline>"
        )
        lines += [
            f'<circle cx="{xy(h, c).split(",")[0]}" cy="{xy(h, c).split(",")[1]}" r="3" '
            f'fill="{color}"><title>{page_text(h)}: {c}</title></circle>'
            for h, c in p["hourly_counts"]
        ]
    axes = (
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
        f'stroke="#333"/><line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" '
        f'stroke="#333"/><text x="{pad}" y="{height - 10}" font-size="11">'
        f'{page_text(hours[0])}</text><text x="{width - pad}" y="{height - 10}" font-size="11" '
        f'text-anchor="end">{page_text(hours[-1])}</text><text x="4" y="{pad}" font-size="11">'
        f"{peak}/h</text>"
    )
    legend = "".join(
        f'<span style="color:{COLORS[i % len(COLORS)]}">&#9632; {page_text(p["id"])}</span> '
        for i, p in enumerate(top)
    )
    return (
        f'<svg width="{width}" height="{height}" '
        f'role="img" aria-label="dead letters per hour">{axes}{"".join(lines)}</svg>'
        f"<p>{legend}</p>"
    )


def _cell_list(values: list[Any]) -> str:
    return "<br>".join(page_text(v) for v in _texts(values)) or "&ndash;"


def _variables(variables: list[dict[str, Any]]) -> str:
    """Why the members are one pattern: each variable of the template with the values its
    members hold there, so that a reader can judge the pattern before redriving it."""
    if not variables:
        return ""
    items = "".join(
        f"<li><code>{page_text(str(v['token']))}</code> #{v['variable']}: "
        + ", ".join(
            f"<code>{page_text(str(x))}</code>" + (f" &times;{n}" if n is not None else "")
            for x, n in zip(v["values"], v.get("counts") or [None] * len(v["values"]), strict=False)
        )
        + (f" &hellip; ({v['distinct']} values)" if v["distinct"] > len(v["values"]) else "")
        + (f" (e.g. <code>{page_text(str(v['example']))}</code>)" if v.get("example") else "")
        + _warning(v)
        + "</li>"
        for v in variables
    )
    return f'<ul class="variables">{items}</ul>'


def _warning(variable: dict[str, Any]) -> str:
    if not variable.get("warning"):
        return ""
    return f' <strong class="warning">{page_text(str(variable["warning"]))}</strong>'


def _purity(p: dict[str, Any]) -> str:
    """A mark on a pattern that may hold more than one failure (purity.explain)."""
    if not p.get("impure"):
        return ""
    return (
        f' <strong class="warning">impure: purity {float(p.get("purity") or 0):.2f},'
        " check the values below before redriving</strong>"
    )


def _row(p: dict[str, Any]) -> str:
    attrs = [
        f"{a['name']}={a['value']} (lift {a['lift']})" for a in p["overrepresented_attributes"]
    ]
    example = json.dumps(_shown(p.get("example")), indent=2, ensure_ascii=False)
    samples = _texts(p["sample_message_ids"])
    return (
        f'<tr id="{page_text(p["id"])}"><td><code>{page_text(p["id"])}</code></td>'
        f"<td>{p['count']}</td><td><code>{page_text(label(p))}</code>"
        f"{_purity(p)}{_variables(p.get('variables') or [])}"
        f"<br><small>{page_text(p.get('signature') or '')}</small></td>"
        f"<td>{_cell_list(p['source_queues'])}</td><td>{_cell_list(p['reasons'])}</td>"
        f"<td>{page_text(p['first_seen'] or '')}<br>{page_text(p['last_seen'] or '')}</td>"
        f"<td>{_cell_list(p['key_paths_missing'])}</td><td>{_cell_list(attrs)}</td>"
        f"<td><details><summary>{page_text(', '.join(samples[:2]))}</summary>"
        f"<pre>{page_text(example)}</pre></details></td></tr>"
    )


def render(patterns: list[dict[str, Any]], total: int) -> str:
    """The report page for a list of patterns as `analysis.summarize_keys` returns them."""
    rows = "".join(_row(p) for p in patterns)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Dead-letter failure patterns</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; width: 100%; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 4px 6px; vertical-align: top; text-align: left; }}
th {{ background: #f3f3f3; }}
code {{ white-space: pre-wrap; word-break: break-word; }}
pre {{ max-width: 40em; overflow: auto; font-size: 11px; }}
ul.variables {{ margin: 2px 0; padding-left: 1.2em; font-size: 12px; }}
.warning {{ color: #a40; }}
</style></head><body>
<h1>Dead-letter failure patterns</h1>
<p>{total} dead letters in {len(patterns)} patterns.</p>
<h2>Top patterns</h2>{_bar_chart(patterns)}
<h2>Dead letters per hour (top {TOP} patterns)</h2>{_time_chart(patterns)}
<h2>All patterns</h2>
<table><thead><tr><th>Pattern</th><th>Count</th><th>Template / signature</th>
<th>Source queues</th><th>Reasons</th><th>First / last seen</th>
<th>Key paths missing</th><th>Over-represented attributes</th><th>Example</th></tr></thead>
<tbody>{rows}</tbody></table>
</body></html>
"""

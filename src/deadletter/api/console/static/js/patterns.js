// Page 4: the failure patterns `deadletter analyze --queue` stored for a DLQ; browse or redrive one.

import * as api from "./api.js";
import { add, h, pretty, shortId, when } from "./dom.js";
import { redrivePanel } from "./redrive.js";

// Shown in their own columns, or used by the links.
const SHOWN = new Set(["id", "template", "count", "message_ids", "signature"]);
// The order the facts are read in: where and when first, the evidence last.
const ORDER = ["alert", "rate_per_minute", "source_queues", "reasons", "first_seen", "last_seen", "hourly_counts", "key_paths_missing",
  "overrepresented_attributes", "key_paths_in_all", "sample_message_ids", "example"];

function list(value) {
  return Array.isArray(value) ? value.map((v) => (typeof v === "object" && v !== null ? JSON.stringify(v) : String(v))).join(", ") : String(value);
}

function fact(name, ...value) {
  return h("div", { class: "fact" }, h("span", { class: "fact-name", text: `${name}:` }), " ", ...value);
}

// The fields `analyze` adds (docs/pipeline.md) in words; any other field by its name, with a
// nested value folded away rather than printed as JSON inline.
function facts(p, dlq) {
  const out = [];
  const rank = (k) => (ORDER.includes(k) ? ORDER.indexOf(k) : ORDER.length);
  const rest = Object.entries(p).filter(([k, v]) => !SHOWN.has(k) && v !== null && v !== undefined)
    .sort(([a], [b]) => rank(a) - rank(b));
  for (const [key, value] of rest) {
    if (Array.isArray(value) && !value.length) continue;
    if (key === "alert" && typeof value === "object") out.push(fact("alert", alertWords(value)));
    else if (key === "rate_per_minute") out.push(fact("rate", `${value} a minute (last 5 minutes)`));
    else if (key === "source_queues") out.push(fact("from", list(value)));
    else if (key === "reasons") out.push(fact("reason", list(value)));
    else if (key === "first_seen") out.push(fact("seen", `${when(value)}${p.last_seen ? " – " + when(p.last_seen) : ""}`));
    else if (key === "last_seen") { if (!p.first_seen) out.push(fact("last seen", when(value))); }
    else if (key === "key_paths_missing") out.push(fact("lacks", list(value)));
    else if (key === "key_paths_in_all") out.push(fact("all have", list(value)));
    else if (key === "overrepresented_attributes" && Array.isArray(value)) {
      out.push(fact("mostly", value.map((a) => `${a.name}=${a.value}` +
        (a.share !== undefined ? ` (${Math.round(a.share * 100)}%, lift ${a.lift})` : "")).join(", ")));
    } else if (key === "hourly_counts" && Array.isArray(value)) {
      const counts = value.map((pair) => Number(pair[1]) || 0);
      out.push(fact("per hour", `${counts.length} ${counts.length === 1 ? "hour" : "hours"}, at most ${Math.max(...counts)} in one`));
    } else if (key === "sample_message_ids" && Array.isArray(value)) {
      out.push(fact("samples", ...value.flatMap((id, i) => [i ? ", " : "",
        h("a", { href: `#/dlq/${encodeURIComponent(dlq)}/messages/${encodeURIComponent(id)}`, title: id, text: `…${shortId(id)}` })])));
    } else if (value !== null && typeof value === "object" && !(Array.isArray(value) && value.every((v) => typeof v !== "object" || v === null))) {
      out.push(h("details", { class: "fact" }, h("summary", { text: key.replace(/_/g, " ") }), h("pre", { text: pretty(value) })));
    } else {
      out.push(fact(key.replace(/_/g, " "), list(value)));
    }
  }
  return out;
}

// The alert the server raised when the pattern was stored (docs/pipeline.md, "Alerts").
function alertWords(a) {
  return `${a.kind === "rate_jump" ? "rate jumped" : "new pattern"} ${when(a.at)}`;
}

// One line per alerted pattern, newest first: what started or sped up, and when.
function alertLines(patterns) {
  const alerted = patterns.filter((p) => p.alert && p.alert.at).sort((a, b) => (a.alert.at < b.alert.at ? 1 : -1));
  if (!alerted.length) return null;
  return h("ul", { id: "pattern-alerts" }, alerted.slice(0, 10).map((p) => h("li", { "data-pattern": p.id },
    `${alertWords(p.alert)}: `, h("code", { text: p.id }), ` ${p.template || ""} (${p.count ?? "?"} so far)`)));
}

export async function patternsPage(el, dlq) {
  const patterns = await api.patterns(dlq);
  const panel = api.session.canChange
    ? redrivePanel(dlq, { defaults: {}, patterns, label: "Redrive…", onDone: () => {} })
    : null;
  const base = `#/dlq/${encodeURIComponent(dlq)}`;
  const command = h("code", { text: `deadletter analyze --queue ${dlq}` });
  add(el,
    h("p", { class: "crumbs" }, h("a", { href: "#/", text: "Queues" }), " / ",
      h("a", { href: base, text: dlq }), " / patterns"),
    h("h1", { text: `Failure patterns in ${dlq}` }),
    patterns.length
      ? h("p", { class: "muted", id: "patterns-note" }, "Stored by ", command, "; counts are as of that analysis.")
      : h("p", { class: "muted", id: "patterns-note" }, "No patterns stored for this DLQ. Run ", command, " to find them and store them here."),
    alertLines(patterns),
    patterns.length ? h("table", { class: "grid", id: "patterns" },
      h("thead", {}, h("tr", {}, ["pattern", "count", "template", "more", ""].map((t) => h("th", { text: t })))),
      h("tbody", {}, patterns.map((p) => h("tr", { "data-pattern": p.id },
        h("td", { class: "pattern-id" }, h("code", { text: p.id })),
        h("td", { class: "num", text: p.count ?? (p.message_ids || []).length }),
        h("td", { class: "template" }, h("code", { text: p.template || "" }),
          p.signature ? h("div", { class: "muted small-note", text: p.signature }) : null),
        h("td", { class: "facts" }, facts(p, dlq)),
        h("td", { class: "actions" },
          h("a", { href: `${base}?pattern=${encodeURIComponent(p.id)}`, text: "browse" }),
          panel ? h("button", { type: "button", class: "small", text: "redrive these",
            onclick: () => panel.open({ pattern: p.id, source: "", reason: "", since: "", until: "" }) }) : null)))))
      : null,
    panel ? panel.element : null);
  return { dispose: () => { if (panel) panel.dispose(); } };
}

// Page 4: the failure patterns `deadletter analyze` stored for a DLQ; browse or redrive one.

import * as api from "./api.js";
import { add, h, pretty } from "./dom.js";
import { redrivePanel } from "./redrive.js";

const KNOWN = new Set(["id", "template", "count", "message_ids"]);

export async function patternsPage(el, dlq) {
  const list = await api.patterns(dlq);
  const panel = api.session.canChange
    ? redrivePanel(dlq, { defaults: {}, patterns: list, label: "Redrive…", onDone: () => {} })
    : null;
  const base = `#/dlq/${encodeURIComponent(dlq)}`;
  add(el, 
    h("p", { class: "crumbs" }, h("a", { href: "#/", text: "Queues" }), " / ",
      h("a", { href: base, text: dlq }), " / patterns"),
    h("h1", { text: `Failure patterns in ${dlq}` }),
    h("p", { class: "muted", text: "Stored by `deadletter analyze --url`; counts are as of that analysis." }),
    list.length ? h("table", { class: "grid", id: "patterns" },
      h("thead", {}, h("tr", {}, ["pattern", "count", "template", "more", ""].map((t) => h("th", { text: t })))),
      h("tbody", {}, list.map((p) => h("tr", { "data-pattern": p.id },
        h("td", { text: p.id }),
        h("td", { class: "num", text: p.count ?? (p.message_ids || []).length }),
        h("td", {}, h("code", { text: p.template || "" })),
        h("td", { class: "muted small", text: Object.entries(p).filter(([k]) => !KNOWN.has(k)).map(([k, v]) => `${k}: ${pretty(v)}`).join("; ") }),
        h("td", {},
          h("a", { href: `${base}?pattern=${encodeURIComponent(p.id)}`, text: "browse" }),
          panel ? h("button", { type: "button", class: "small", text: "redrive these",
            onclick: () => panel.open({ pattern: p.id, source: "", reason: "", since: "", until: "" }) }) : null)))))
      : h("p", { class: "muted", text: "No patterns stored for this DLQ. Run `deadletter analyze --url ...`." }),
    panel ? panel.element : null);
  return { dispose: () => { if (panel) panel.dispose(); } };
}

// A queue's retry policy, Solace's redelivery count, its dead letters by reason and its
// consumer tags' own policies: shown in words on the queue's page,
// and changed there by those who may (one JSON-patch of the queue's metadata each; the
// server checks the ranges and says what is wrong).

import * as api from "./api.js";
import { errorBox, h } from "./dom.js";

export function retryText(policy) {
  if (!policy) return "none: a message given back, or whose claim lapses, is visible again at once";
  return `${policy.minimum_backoff} s, doubling after each delivery up to ${policy.maximum_backoff} s`;
}

export function redeliveryText(meta) {
  if (meta._max_redelivery === undefined || meta._max_redelivery === null) return "— (no dead-letter policy)";
  return `${meta._max_redelivery} (${meta._max_claim_count} deliveries before the DLQ)`;
}

// A queue's dead letters by reason (`_dead_letter_routes`), inactive ones marked.
export function routesText(meta) {
  const routes = Object.entries(meta._dead_letter_routes || {}).sort();
  if (!routes.length) return "none: every reason to the DLQ";
  const off = new Set(meta._dead_letter_routes_inactive || []);
  return routes.map(([reason, q]) => `${reason} → ${q}${off.has(reason) ? " (inactive: deleted)" : ""}`).join(", ");
}

// A consumer tag's dead-letter policy in words: "(own)" marks what is the tag's, not the queue's.
export function tagPolicyText(tag) {
  const p = tag.dead_letter;
  const own = (value) => (value !== null && value !== undefined ? " (own)" : "");
  let text = p ? `${p.queue}${own(tag.dead_letter_queue)} after ${p.max_claims}${own(tag.max_claims)} deliveries`
    : "no dead-letter policy";
  if (p && !p.active) text += " (inactive: its DLQ was deleted)";
  if (tag.retry_policy) text += `; retry ${retryText(tag.retry_policy)} (own)`;
  return text;
}

// One row per consumer tag of queue `name`, filled in once its tags are read.
function tagRows(name) {
  const body = h("tbody", { id: "settings-tags" });
  api.call("GET", `/v2/queues/${encodeURIComponent(name)}/tags`).then(({ doc }) => {
    body.replaceChildren(...(doc.tags || []).map((t) => h("tr", { "data-tag": t.name },
      h("th", { text: `tag ${t.name}` }), h("td", { text: tagPolicyText(t) }))));
  }).catch(() => body.replaceChildren());
  return body;
}

function number(id, value, label) {
  return h("label", {}, label, " ",
    h("input", { id, type: "number", min: "0", step: "1", inputmode: "numeric", value: value ?? "", required: true }));
}

// The card; `onSaved(meta)` gets the queue's metadata as it is after a change.
export function settingsCard(name, meta, onSaved) {
  const card = h("section", { class: "card", id: "queue-settings" });
  const problems = h("div");

  async function change(operations) {
    try {
      await api.patchQueue(name, operations);
      const fresh = await api.queue(name);
      render(fresh);
      onSaved(fresh);
    } catch (err) {
      problems.replaceChildren(errorBox(err));
    }
  }

  function render(m) {
    problems.replaceChildren();
    const policy = m._retry_policy || null;
    const rows = [
      h("tr", {}, h("th", { text: "retry backoff" }), h("td", { id: "settings-retry", text: retryText(policy) })),
      h("tr", {}, h("th", { text: "max redelivery (Solace)" }), h("td", { id: "settings-redelivery", text: redeliveryText(m) })),
      h("tr", {}, h("th", { text: "dead letters by reason" }), h("td", { id: "settings-routes", text: routesText(m) })),
    ];
    const forms = [];
    if (api.session.canChange) {
      const low = number("retry-min", policy?.minimum_backoff, "minimum (s)");
      const high = number("retry-max", policy?.maximum_backoff, "maximum (s)");
      forms.push(h("form", { class: "settings-form", id: "retry-form", onsubmit: (e) => {
        e.preventDefault();
        const value = {
          minimum_backoff: Number(low.querySelector("input").value),
          maximum_backoff: Number(high.querySelector("input").value),
        };
        change([{ op: "add", path: "/metadata/_retry_policy", value }]);
      } }, h("strong", { text: "Retry backoff " }), low, " ", high, " ",
      h("button", { type: "submit", class: "primary", id: "retry-save", text: "Save" }), " ",
      policy ? h("button", { type: "button", id: "retry-remove", text: "Remove",
        onclick: () => change([{ op: "remove", path: "/metadata/_retry_policy" }]) }) : null));
      if (m._max_redelivery !== undefined && m._max_redelivery !== null) {
        const count = number("redelivery", m._max_redelivery, "redeliveries");
        forms.push(h("form", { class: "settings-form", id: "redelivery-form", onsubmit: (e) => {
          e.preventDefault();
          const value = Number(count.querySelector("input").value);
          change([{ op: "add", path: "/metadata/_max_redelivery", value }]);
        } }, h("strong", { text: "Max redelivery " }), count, " ",
        h("button", { type: "submit", class: "primary", id: "redelivery-save", text: "Save" })));
      }
    }
    card.replaceChildren(h("h2", { text: "Retry and redelivery" }),
      h("table", { class: "grid settings" }, h("tbody", {}, rows), tagRows(name)), ...forms, problems);
  }

  render(meta);
  return card;
}

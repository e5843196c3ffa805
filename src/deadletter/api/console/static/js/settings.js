// A queue's retry policy, Solace's redelivery count, its dead letters by reason and its
// consumer tags' own policies: shown in words on the queue's page,
// and changed there by those who may (one JSON-patch of the queue's metadata each, one PATCH
// of a tag for its own policy; the server checks the ranges and the DLQ rules and says what
// is wrong).

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

// The reasons a route may name (docs/api.md, "Dead letters by reason").
export const REASONS = ["max_claims", "expired", "rejected", "delivery_failed", "maxlen"];

const tagPath = (queue, tag) => `/v2/queues/${encodeURIComponent(queue)}/tags/${encodeURIComponent(tag)}`;

// A number field of a tag's form, empty while the tag takes the queue's value.
function tagNumber(cls, value, min, label) {
  return h("input", { class: cls, type: "number", min, step: "1", inputmode: "numeric", value: value ?? "",
    placeholder: "inherit", "aria-label": label });
}

// A tag's own max claims, DLQ and retry backoff, set or given back to the queue ("inherit"
// sends null). A backoff with one bound left empty is sent as given (null): the server says
// what is missing rather than the page reading the empty bound as 0.
function tagForm(queue, t, patchTag) {
  const claims = tagNumber("tag-max-claims", t.max_claims, "1", `tag ${t.name} max claims`);
  const dlq = h("input", { class: "tag-dlq", type: "text", value: t.dead_letter_queue ?? "",
    placeholder: "inherit", "aria-label": `tag ${t.name} DLQ` });
  const low = tagNumber("tag-retry-min", t.retry_policy?.minimum_backoff, "0", `tag ${t.name} retry minimum (s)`);
  const high = tagNumber("tag-retry-max", t.retry_policy?.maximum_backoff, "0", `tag ${t.name} retry maximum (s)`);
  const bound = (input) => (input.value === "" ? null : Number(input.value));
  const inherit = (field) => h("button", { type: "button", class: `tag-inherit-${field.replaceAll("_", "-")}`,
    text: "inherit", title: "take the queue's", disabled: t[field] === null || t[field] === undefined, onclick: () => patchTag(t.name, { [field]: null }) });
  return h("form", { class: "settings-form tag-form", onsubmit: (e) => {
    e.preventDefault();
    patchTag(t.name, {
      max_claims: bound(claims),
      dead_letter_queue: dlq.value.trim() || null,
      retry_policy: low.value === "" && high.value === "" ? null
        : { minimum_backoff: bound(low), maximum_backoff: bound(high) },
    });
  } }, h("label", {}, "max claims ", claims), inherit("max_claims"), " ",
  h("label", {}, "DLQ ", dlq), inherit("dead_letter_queue"), " ",
  h("label", {}, "retry ", low), " – ", h("label", {}, high, " s"), inherit("retry_policy"), " ",
  h("button", { type: "submit", class: "primary tag-save", text: "Save" }));
}

// One row per consumer tag of queue `name`, filled in once its tags are read; with a form for
// its own policy when `patchTag` is given.
function tagRows(name, patchTag) {
  const body = h("tbody", { id: "settings-tags" });
  api.call("GET", `/v2/queues/${encodeURIComponent(name)}/tags`).then(({ doc }) => {
    body.replaceChildren(...(doc.tags || []).flatMap((t) => [
      h("tr", { "data-tag": t.name }, h("th", { text: `tag ${t.name}` }), h("td", { text: tagPolicyText(t) })),
      patchTag ? h("tr", { class: "tag-edit", "data-tag-edit": t.name }, h("th"), h("td", {}, tagForm(name, t, patchTag)))
        : null,
    ].filter(Boolean)));
  }).catch(() => body.replaceChildren());
  return body;
}

// The queue's routes, each with its Remove button, and a form adding (or replacing) one: the
// whole `_dead_letter_routes` is written in one patch, so a refused route changes nothing.
function routesForm(m, change) {
  const routes = m._dead_letter_routes || {};
  const write = (next) => change([{ op: "add", path: "/metadata/_dead_letter_routes", value: next }]);
  const reason = h("select", { id: "route-reason", "aria-label": "reason" },
    REASONS.map((r) => h("option", { value: r, text: r })));
  const dlq = h("input", { id: "route-dlq", type: "text", required: true, placeholder: "DLQ name", "aria-label": "DLQ" });
  const off = new Set(m._dead_letter_routes_inactive || []);
  const listed = Object.entries(routes).sort().map(([r, q]) => h("li", { "data-reason": r },
    `${r} → ${q}${off.has(r) ? " (inactive)" : ""} `,
    h("button", { type: "button", class: "route-remove", text: "Remove", onclick: () => {
      const next = { ...routes };
      delete next[r];
      write(next);
    } })));
  return h("form", { class: "settings-form", id: "routes-form", onsubmit: (e) => {
    e.preventDefault();
    write({ ...routes, [reason.value]: dlq.value.trim() });
  } }, h("strong", { text: "Dead letters by reason " }), reason, " → ", dlq, " ",
  h("button", { type: "submit", class: "primary", id: "route-add", text: "Add route" }),
  listed.length ? h("ul", { id: "routes-list" }, listed) : null);
}

function number(id, value, label) {
  return h("label", {}, label, " ",
    h("input", { id, type: "number", min: "0", step: "1", inputmode: "numeric", value: value ?? "", required: true }));
}

// The card; `onSaved(meta)` gets the queue's metadata as it is after a change.
export function settingsCard(name, meta, onSaved) {
  const card = h("section", { class: "card", id: "queue-settings" });
  const problems = h("div");

  async function saved(write) {
    try {
      await write();
      const fresh = await api.queue(name);
      render(fresh);
      onSaved(fresh);
    } catch (err) {
      problems.replaceChildren(errorBox(err));
    }
  }
  const change = (operations) => saved(() => api.patchQueue(name, operations));
  const patchTag = (tag, fields) => saved(() => api.call("PATCH", tagPath(name, tag), { body: fields }));

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
      forms.push(routesForm(m, change));
    }
    card.replaceChildren(h("h2", { text: "Retry and redelivery" }),
      h("table", { class: "grid settings" }, h("tbody", {}, rows), tagRows(name, api.session.canChange ? patchTag : null)), ...forms, problems);
  }

  render(meta);
  return card;
}

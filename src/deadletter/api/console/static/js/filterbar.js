// The dead-letter filter language (docs/api.md, "Selecting dead letters") as the DLQ page's
// filter bar: the fields, their place in the page's address, the preview count, and the purge
// of what the filter selects. Each field is one name of the language, sent to the server as
// it is: the browse, the count, the purge and the redrive all read the same filter. The
// DLQ's saved filters are listed to apply, and the fields saved under a name (savedfilters.js).

import * as api from "./api.js";
import { confirmAction, debounce, h, isoToLocal, localToIso, shown } from "./dom.js";
import { savedFilters } from "./savedfilters.js";

const REASONS = ["", "max_claims", "rejected", "expired", "delivery_failed", "maxlen"];

// Each field: its name in the language, its label, what it takes, and the older short name
// a link may still use (#/dlq/q?source=orders, ?pattern=p-…, ?q=timeout).
export const FIELDS = [
  { key: "source_queue", id: "filter-source", label: "source", kind: "source", alias: "source" },
  { key: "source_tag", id: "filter-tag", label: "tag", hint: "consumer tag" },
  { key: "reason", id: "filter-reason", label: "reason", kind: "reason" },
  { key: "error_class", id: "filter-error-class", label: "error class", hint: "KeyError" },
  { key: "error_contains", id: "filter-text", label: "error contains", hint: "text in the error", alias: "q" },
  { key: "error_matches", id: "filter-error-matches", label: "error matches", hint: "regular expression" },
  { key: "pattern_id", id: "filter-pattern", label: "pattern", kind: "pattern", alias: "pattern" },
  { key: "attribute", id: "filter-attribute", label: "attribute", kind: "attributes", hint: "NAME=VALUE or NAME" },
  { key: "body", id: "filter-body", label: "body (JMESPath)", hint: "!(customer.id)" },
  { key: "older_than", id: "filter-older-than", label: "older than", hint: "2h", size: 6 },
  { key: "newer_than", id: "filter-newer-than", label: "newer than", hint: "7d", size: 6 },
  { key: "since", id: "filter-since", label: "since", kind: "time" },
  { key: "until", id: "filter-until", label: "until", kind: "time" },
  { key: "min_deaths", id: "filter-min-deaths", label: "min deaths", kind: "number" },
  { key: "max_deaths", id: "filter-max-deaths", label: "max deaths", kind: "number" },
  { key: "filter", id: "filter-saved", label: "saved filter", kind: "saved" },
];

// `attribute` may be given more than once (each must hold): one value is a string, more a list.
const oneOrMore = (values) => (values.length > 1 ? values : values[0]);

// The filter of the page's address: the language's names (or a field's older short name).
export function readFilter(params) {
  const where = {};
  for (const f of FIELDS) {
    const given = params.getAll(f.key);
    if (!given.length && f.alias) given.push(...params.getAll(f.alias));
    const values = given.map((v) => v.trim()).filter(Boolean);
    if (values.length) where[f.key] = f.kind === "attributes" ? oneOrMore(values) : values[0];
  }
  return where;
}

// The page's address for `where`: a name given more than once is repeated.
export function toQuery(where) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(where)) {
    for (const v of [].concat(value)) query.append(key, v);
  }
  return query.toString();
}

export const isFiltered = (where) => Object.keys(where).length > 0;

export function describe(where) {
  return Object.entries(where).flatMap(([k, v]) => [].concat(v).map((x) => `${k}=${x}`)).join(", ");
}

// The attribute field: one predicate per input, "+" adds another.
function attributeInputs(f, value) {
  const inputs = [];
  const box = h("span", { class: "attribute-inputs" });
  const more = h("button", { type: "button", id: "filter-attribute-add", class: "small", text: "+",
    title: "another attribute (each must hold)", onclick: () => add("").focus() });
  function add(text) {
    const n = inputs.length;
    const input = h("input", { id: n ? `${f.id}-${n + 1}` : f.id, type: "search", size: 14,
      class: n ? "filter-attribute-more" : "", placeholder: f.hint, "aria-label": `attribute ${n + 1}` });
    input.value = text;
    inputs.push(input);
    box.insertBefore(input, more);
    return input;
  }
  box.append(more);
  const given = [].concat(value || "");
  for (const text of given.length ? given : [""]) add(text);
  return {
    element: box,
    get value() {
      const held = inputs.map((i) => i.value.trim()).filter(Boolean);
      return held.length ? oneOrMore(held) : "";
    },
    set value(text) {
      for (const extra of inputs.splice(1)) extra.remove();
      inputs[0].value = text;
    },
  };
}

// The bar. `onApply(where)` is called with the filter the fields hold (a field left empty
// filters nothing); `preview(where)` shows how many dead letters the server says it selects.
export function filterBar(dlq, where, { sources = [], patterns = [], saved = [], onApply }) {
  const inputs = new Map();
  for (const f of FIELDS) {
    let input;
    if (f.kind === "attributes") {
      inputs.set(f.key, attributeInputs(f, where[f.key]));
      continue;
    }
    if (f.kind === "saved") {
      input = h("select", { id: f.id }, h("option", { value: "", text: "none" }),
        saved.map((s) => h("option", { value: s.name, text: s.name })));
    } else if (f.kind === "source") {
      input = h("select", { id: f.id }, h("option", { value: "", text: "any source" }),
        sources.map((n) => h("option", { value: n, text: n })));
    } else if (f.kind === "reason") {
      input = h("select", { id: f.id }, REASONS.map((r) => h("option", { value: r, text: r || "any reason" })));
    } else if (f.kind === "pattern") {
      input = h("select", { id: f.id }, h("option", { value: "", text: "any pattern" }),
        patterns.map((p) => h("option", { value: p.id, text: `${p.id}: ${p.template || ""}` })));
    } else if (f.kind === "time") {
      input = h("input", { id: f.id, type: "datetime-local" });
    } else if (f.kind === "number") {
      input = h("input", { id: f.id, type: "number", min: 0, step: 1, class: "short" });
    } else {
      input = h("input", { id: f.id, type: "search", placeholder: f.hint || "", size: f.size || 14 });
    }
    const value = where[f.key] || "";
    if (f.kind === "time") input.value = isoToLocal(value);
    else {
      // A value the select does not list (a pattern gone, a source not named) stays chosen.
      if (input.tagName === "SELECT" && value && ![...input.options].some((o) => o.value === value)) {
        input.append(h("option", { value, text: value }));
      }
      input.value = value;
    }
    inputs.set(f.key, input);
  }
  const held = () => {
    const out = {};
    for (const f of FIELDS) {
      const input = inputs.get(f.key);
      const raw = f.kind === "time" ? localToIso(input.value) : input.value;
      const value = typeof raw === "string" ? raw.trim() : raw;
      if (value) out[f.key] = value;
    }
    return out;
  };
  const keep = savedFilters(dlq, { saved, held, chosen: () => inputs.get("filter").value, onApply });
  const count = h("output", { id: "filter-preview", class: "preview", role: "status" });
  const form = h("form", { id: "filters", class: "fields filter-bar" },
    FIELDS.map((f) => h("label", {}, f.label, inputs.get(f.key).element || inputs.get(f.key))),
    h("span", { class: "filter-buttons" },
      h("button", { type: "submit", id: "filter-apply", text: "Apply" }),
      h("button", { type: "button", id: "filter-clear", text: "Clear",
        onclick: () => { for (const input of inputs.values()) input.value = ""; onApply({}); } }),
      keep.element),
    count);
  // Choosing a saved filter applies it at once; the fields then narrow it.
  inputs.get("filter").addEventListener("change", () => {
    const name = inputs.get("filter").value;
    if (name) onApply({ filter: name });
  });
  form.addEventListener("submit", (event) => { event.preventDefault(); onApply(held()); });
  // While the fields change, the count of what they would select follows (the preview of a
  // redrive or a purge before anything moves); a bad value says why in its place.
  const ask = debounce(() => preview(held()), 400);
  form.addEventListener("input", ask);
  form.addEventListener("change", ask);

  let asked = 0;
  async function preview(wanted) {
    const mine = ++asked;
    count.textContent = "counting…";
    count.classList.remove("bad");
    try {
      const n = await api.countDeadLetters(dlq, wanted);
      if (mine !== asked) return null;
      count.dataset.count = String(n);
      count.textContent = `selects ${n} dead letter${n === 1 ? "" : "s"}`;
      return n;
    } catch (err) {
      if (mine !== asked) return null;
      delete count.dataset.count;
      count.classList.add("bad");
      count.textContent = shown(err.description || String(err));
      return null;
    }
  }
  return { element: form, preview };
}

// Deletes what `where` selects, after a confirmation that says how many that is now.
export async function purgeSelection(dlq, where) {
  const n = await api.countDeadLetters(dlq, where);
  const text = `Delete the ${n} dead letter${n === 1 ? "" : "s"} of ${dlq} that the filter selects (${describe(where)})? This cannot be undone.`;
  if (!(await confirmAction(text))) return null;
  return api.purgeDeadLetters(dlq, where);
}

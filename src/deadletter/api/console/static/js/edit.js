// A dead letter's "Edit and retry": its body edited as JSON and sent as a patch (PATCH
// .../dead_letters/{id}), kept in place or redriven at once; and its history, edits included
// with who made them, when, the patch and (on the first) the original.

import * as api from "./api.js";
import { errorBox, h, pretty, when } from "./dom.js";

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const holdsNull = (v) => v === null || (typeof v === "object" && Object.values(v).some(holdsNull));

// The JSON Merge Patch (RFC 7396) that turns `a` into `b`: members removed are null, changed
// ones patched in turn, anything but an object replaced whole.
export function mergeDiff(a, b) {
  if (!isObject(a) || !isObject(b)) return b;
  const out = {};
  for (const key of Object.keys(a)) if (!(key in b)) out[key] = null;
  for (const [key, value] of Object.entries(b)) {
    if (!(key in a) || !same(a[key], value)) out[key] = mergeDiff(a[key], value);
  }
  return out;
}

// The patch of the document {"body", "attributes"} that makes the body `edited`: a merge
// patch of what changed, or, where the new body holds a null (which a merge patch can only
// read as "remove"), a JSON Patch replacing the body. Null when nothing changed.
export function bodyPatch(base, edited) {
  if (same(base, edited)) return null;
  if (holdsNull(edited)) return { json: true, document: [{ op: "replace", path: "/body", value: edited }] };
  return { json: false, document: { body: mergeDiff(base, edited) } };
}

export function editCard(dlq, m, { onEdited } = {}) {
  let base = m.body;
  const text = h("textarea", { id: "edit-body", class: "json", rows: 12, spellcheck: "false", "aria-label": "body as JSON" });
  text.value = pretty(base);
  const redrive = h("input", { id: "edit-redrive", type: "checkbox" });
  const apply = h("button", { type: "submit", id: "edit-apply", class: "primary", text: "Apply edit" });
  redrive.addEventListener("change", () => { apply.textContent = redrive.checked ? "Apply and redrive" : "Apply edit"; });
  const problems = h("div");
  const outcome = h("p", { id: "edit-outcome", role: "status", class: "muted" });
  const form = h("form", { id: "edit-form", hidden: true },
    h("p", { class: "muted", text: "The body as JSON. Applied as a JSON Merge Patch of what changed, kept in the history with who and when; the original body is kept with the first edit." }),
    text,
    h("div", { class: "fields" },
      h("label", { class: "inline" }, redrive, " then redrive it to its source queue"), apply),
    problems);
  const toggle = h("button", { type: "button", id: "edit-button", text: "Edit the body…",
    onclick: () => { form.hidden = !form.hidden; if (!form.hidden) text.focus(); } });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problems.replaceChildren();
    let edited;
    try {
      edited = JSON.parse(text.value);
    } catch (err) {
      problems.replaceChildren(errorBox({ title: "Not JSON", description: err.message }));
      return;
    }
    const patch = bodyPatch(base, edited);
    if (!patch) {
      const how = redrive.checked ? " To send it back as it is: Redrive this message…" : "";
      problems.replaceChildren(errorBox({ title: "Edit", description: `The body is unchanged.${how}` }));
      return;
    }
    apply.disabled = true;
    try {
      const doc = await api.editDeadLetter(dlq, m.id, patch.document, { json: patch.json, redrive: redrive.checked });
      if (doc.redrive) {
        const to = (m.provenance || {}).source_queue;
        outcome.replaceChildren("Edited and sent back", to ? " to " : "",
          to ? h("a", { href: `#/queues/${encodeURIComponent(to)}`, text: to }) : "",
          ` (redrive ${doc.redrive.id}: ${doc.redrive.status}).`);
        form.hidden = true;
        toggle.disabled = true;
      } else {
        base = doc.message.body;
        text.value = pretty(base);
        outcome.textContent = `Edited; ${patch.json ? "a JSON Patch" : "a merge patch"} kept in the history.`;
      }
      if (onEdited) onEdited(doc);
    } catch (err) {
      problems.replaceChildren(errorBox(err));
    } finally {
      apply.disabled = false;
    }
  });
  return h("section", { class: "card", id: "edit-card" }, h("h2", {}, "Edit and retry ", toggle), form, outcome);
}

function who(by) {
  if (!by) return "";
  return by.credential ? `${by.credential} (${by.project})` : `project ${by.project}`;
}

const DETAILS = new Set(["at", "event", "by", "patch", "original"]);

function item(e) {
  const rest = Object.entries(e).filter(([k, v]) => !DETAILS.has(k) && v !== null)
    .map(([k, v]) => `${k} ${typeof v === "object" ? JSON.stringify(v) : v}`).join(", ");
  const line = [`${when(e.at)} · ${e.event}`, e.by ? `by ${who(e.by)}` : "", rest].filter(Boolean).join(" · ");
  if (e.event !== "edited") return h("li", {}, line);
  const patch = e.patch || {};
  return h("li", { class: "edit-event" }, line,
    h("details", {}, h("summary", { text: patch.type === "json" ? "JSON Patch" : "merge patch" }),
      h("pre", { class: "patch", text: pretty(patch.document) })),
    e.original ? h("details", { class: "original" }, h("summary", { text: "original" }),
      h("pre", { class: "original-body", text: pretty(e.original.body) })) : null);
}

export function historyList(history) {
  const events = history || [];
  if (!events.length) return h("p", { class: "muted", text: "none" });
  return h("ol", { class: "history" }, events.map(item));
}

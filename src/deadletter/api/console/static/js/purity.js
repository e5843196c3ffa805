// How sure a failure pattern is, as the analysis stored it (docs/pipeline.md): its purity
// score, the impure flag, and each variable position's values with their counts; a pattern
// split by hand at one of its positions (POST .../patterns/{id}/split); and the redrive
// form's warning over an impure pattern.

import * as api from "./api.js";
import { confirmAction, h, shown } from "./dom.js";

// As the server reads a stored pattern (engine/canary.py `impure`): its flag when it has
// one, else a purity score under PURE_AT_LEAST. A pattern that says nothing is taken as pure.
const PURE_AT_LEAST = 0.9;

export function purityOf(p) {
  let score = p.purity;
  let flag = p.impure;
  if (score && typeof score === "object") {
    flag = score.impure ?? flag;
    score = score.score;
  }
  const known = typeof score === "number";
  const impure = typeof flag === "boolean" ? flag : known && score < PURE_AT_LEAST;
  return { score: known ? score : null, impure };
}

// The variable positions that look like two failures (the analysis's warnings).
function flagged(p) {
  return (Array.isArray(p.variables) ? p.variables : []).filter((v) => v && v.warning);
}

// One line under the template: the score, and for an impure pattern what it means; nothing
// for a pattern that states neither (an older analysis's, a part of a split).
export function purityLine(p) {
  const { score, impure } = purityOf(p);
  if (score === null && !impure) return null;
  const said = score === null ? "purity not stated" : `purity ${score.toFixed(2)}`;
  const line = h("div", { class: "muted small-note purity", "data-purity": score ?? "", text: said });
  if (!impure) return line;
  const where = flagged(p).map((v) => `#${v.variable}`);
  return h("div", { class: "purity-box" }, line,
    h("div", { class: "error impure-warning", role: "note",
      text: "Impure: it may mix failures of different causes" +
        (where.length ? ` (${where.length === 1 ? "position" : "positions"} ${where.join(", ")})` : "") +
        ". A canary redrive of it is refused unless forced; split it where it mixes them." }));
}

// The values of one variable position as stored: the most frequent first, with their counts.
function valuesText(v) {
  const values = Array.isArray(v.values) ? v.values : [];
  const counts = Array.isArray(v.counts) ? v.counts : [];
  const listed = values.map((value, i) => `${value === "" ? "(empty)" : value} (${counts[i] ?? "?"})`);
  const more = typeof v.distinct === "number" && v.distinct > values.length
    ? `, +${v.distinct - values.length} more` : "";
  return listed.join(", ") + more;
}

// The positions, folded under a summary (open when one is flagged); each, when `dlq` and
// `onSplit(position)` are given (a role that may change the DLQ) and it holds two values or
// more, with its every value on demand and a "split here" button.
export function variablesBlock(p, { dlq, onSplit } = {}) {
  const variables = (Array.isArray(p.variables) ? p.variables : []).filter((v) => v && typeof v === "object");
  if (!variables.length) return null;
  const warned = flagged(p).length;
  const rows = variables.map((v) => h("div", { class: "fact variable", "data-variable": v.variable },
    h("span", { class: "fact-name", text: `#${v.variable} ${v.token || "<*>"}:` }), " ",
    h("span", { class: "values", text: valuesText(v) }),
    h("span", { class: "muted distinct", text: ` · ${v.distinct ?? "?"} ${v.distinct === 1 ? "value" : "values"}` }),
    v.warning ? h("div", { class: "muted small-note variable-warning", text: `⚠ ${v.warning}` }) : null,
    onSplit && (v.distinct ?? 0) >= 2
      ? [h("button", { type: "button", class: "small split-here", "data-variable": v.variable,
        title: `One pattern per value at position ${v.variable}, the value in its template`,
        text: "split here", onclick: () => onSplit(v.variable, v) }), allValues(dlq, p, v.variable)]
      : null));
  return h("details", { class: "fact variables", open: warned > 0 },
    h("summary", { text: `${variables.length} variable ${variables.length === 1 ? "position" : "positions"}` +
      (warned ? ` · ${warned} flagged` : "") }),
    ...rows);
}

// Where a pattern split by hand came from, or what a split one became.
export function splitFact(p) {
  const s = p.split;
  if (s && typeof s === "object") {
    return h("div", { class: "fact split-from" }, h("span", { class: "fact-name", text: "split from:" }),
      ` ${s.from} at #${s.position} (${s.value === "" ? "empty" : s.value})`);
  }
  if (Array.isArray(p.split_into) && p.split_into.length) {
    return h("div", { class: "fact split-into" }, h("span", { class: "fact-name", text: "split into:" }),
      ` ${p.split_into.join(", ")}; these stayed (gone from the DLQ, or not read by the template)`);
  }
  return null;
}

function splitCall(dlq, p, body) {
  const path = `/v2/queues/${encodeURIComponent(dlq)}/patterns/${encodeURIComponent(p.id)}/split`;
  return api.call("POST", path, { body }).then((r) => r.doc);
}

// What a split at `position` would make (the server's dry run): every value the pattern's
// dead letters hold there, with its count.
export const splitPreview = (dlq, p, position) => splitCall(dlq, p, { position, dry_run: true });

// The most frequent first, as the analysis lists a position's values.
const valueCounts = (made) => [...made].sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1))
  .map((n) => `${n.value === "" ? "(empty)" : n.value} (${n.count})`).join(", ");

// Ask, with what the split would make, then split `p` at `position`; the server's answer,
// or null when not confirmed.
export async function splitPattern(dlq, p, position) {
  const preview = await splitPreview(dlq, p, position);
  const ok = await confirmAction(`Split pattern ${p.id} at position ${position} into ${preview.patterns.length} ` +
    `patterns, one per value: ${valueCounts(preview.patterns)}` +
    (preview.unread ? `; ${preview.unread} dead letters stay in ${p.id}` : "") +
    "? Each new pattern's template holds its value; a later analysis stores its own patterns in their place.");
  if (!ok) return null;
  return splitCall(dlq, p, { position });
}

// Every value of one position with its count, read from the dead letters when first opened.
function allValues(dlq, p, position) {
  const list = h("div", { class: "muted small-note every-value", text: "reading the dead letters…" });
  const box = h("details", { class: "fact all-values" }, h("summary", { text: "every value" }), list);
  box.addEventListener("toggle", () => {
    if (!box.open || box.dataset.read) return;
    box.dataset.read = "yes";
    splitPreview(dlq, p, position).then((preview) => {
      list.textContent = shown(valueCounts(preview.patterns) +
        (preview.unread ? ` · ${preview.unread} not read (gone from the DLQ, or not read by the template)` : ""));
    }).catch((err) => { list.textContent = shown(err.description || err.message || String(err)); });
  });
  return box;
}

// The redrive form's note over an impure pattern, with the `force` a canary over it needs;
// `update(pattern)` shows it for the pattern selected (hidden for none or a pure one).
export function impureNote() {
  const force = h("input", { id: "redrive-force", type: "checkbox" });
  const text = h("span", {});
  const element = h("div", { class: "error impure-warning", id: "redrive-impure", role: "note", hidden: true },
    text, " ", h("label", { class: "inline" }, force, " force a canary over it"));
  return {
    element,
    force,
    update(p) {
      const { score, impure } = p ? purityOf(p) : { impure: false };
      element.hidden = !impure;
      force.checked = false;
      if (!impure) return;
      text.textContent = `Pattern ${p.id} is flagged impure` + (score === null ? "" : ` (purity ${score.toFixed(2)})`) +
        ": it may mix failures of different causes, so a canary drawn from it cannot vouch for the rest. " +
        "Split it on the patterns page, or redrive it with force.";
    },
  };
}

// Failure groups as units: a selection (the browser's filters, or a pattern) archived or
// discarded after a confirmation that says how many (the server's own preview), and the
// archive page: archived dead letters to restore, and the discard log.

import { call, session } from "./api.js";
import { add, clear, confirmAction, errorBox, h, idLabel, when } from "./dom.js";

const ARCHIVE_PAGE = 100;
const DAY = 86400;
const q = (name) => `/v2/queues/${encodeURIComponent(name)}`;
const get = async (path, query) => (await call("GET", path, { query })).doc;
const post = async (dlq, what, body) => (await call("POST", `${q(dlq)}/dead_letters/${what}`, { body })).doc;
const plural = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;

// The browser's filters in the filter language's names (its text search is error_contains).
// The group the browser's filter bar selects: its filter, in the language's names (filterbar.js).
export function selectionOf(f) {
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v));
}

function describe(selection) {
  return Object.entries(selection).map(([k, v]) => `${k}=${v}`).join(" ");
}

// "Archive…" and "Discard…" for the group `selection()` names; `why` and the retention are
// asked beside them. `archive(sel)` and `discard(sel)` act on another selection (a pattern's).
// With `buttons: false` only the days and the why are shown (a page whose rows have buttons).
export function groupActions(dlq, { selection, onDone, onError, buttons = true }) {
  const days = h("input", { id: "archive-days", type: "number", min: "1", max: "366", value: "30",
    title: "days the archive keeps them", class: "narrow" });
  const why = h("input", { id: "discard-why", type: "text", placeholder: "why discard (required)" });
  const said = h("span", { id: "group-note", class: "muted", role: "status" });

  async function archive(sel) {
    if (!Object.keys(sel).length) { said.textContent = "Choose a filter or a pattern first: an archive takes a group."; return; }
    const retention = Math.round(Number(days.value || 30) * DAY);
    try {
      const preview = await post(dlq, "archive", { ...sel, retention, dry_run: true });
      const n = preview.to_archive;
      if (!n) { said.textContent = "Nothing to archive: the group is empty."; return; }
      if (!(await confirmAction(`Archive ${plural(n, "dead letter")} of ${dlq} (${describe(sel)}) for ${days.value} days? They leave the active view and can be restored.`))) return;
      const done = await post(dlq, "archive", { ...sel, retention });
      said.textContent = `Archived ${plural(done.archived, "dead letter")}.`;
      onDone();
    } catch (err) { onError(err); }
  }

  async function discard(sel) {
    if (!Object.keys(sel).length) { said.textContent = "Choose a filter or a pattern first: a discard takes a group."; return; }
    const reason = why.value.trim();
    if (!reason) { said.textContent = "Say why first: the discard log keeps it."; why.focus(); return; }
    try {
      const preview = await post(dlq, "discard", { ...sel, why: reason, dry_run: true });
      const n = preview.to_discard;
      if (!n) { said.textContent = "Nothing to discard: the group is empty."; return; }
      if (!(await confirmAction(`Discard ${plural(n, "dead letter")} of ${dlq} (${describe(sel)}) for good, because “${reason}”?`))) return;
      const done = await post(dlq, "discard", { ...sel, why: reason });
      said.textContent = `Discarded ${plural(done.discarded, "dead letter")}; kept in the discard log.`;
      onDone();
    } catch (err) { onError(err); }
  }

  const element = h("span", { class: "group-actions" },
    buttons ? h("button", { type: "button", id: "archive-group", text: "Archive…", onclick: () => archive(selection()) }) : null,
    h("label", {}, "archive for days", days),
    why,
    buttons ? h("button", { type: "button", id: "discard-group", class: "danger", text: "Discard…", onclick: () => discard(selection()) }) : null,
    said);
  return { element, archive, discard };
}

function errorOf(m) {
  const p = m.provenance || {};
  return p.error_class || (p.error || p.description || "").split("\n").pop();
}

// #/dlq/{q}/archive: the archive, with restore, and the discard log.
export async function archivePage(el, dlq) {
  const base = `#/dlq/${encodeURIComponent(dlq)}`;
  const selected = new Set();
  const problems = h("div");
  const rows = h("tbody", { id: "archived" });
  const log = h("tbody", { id: "discards" });
  const note = h("p", { class: "muted", id: "archive-note" });
  const show = (err) => problems.replaceChildren(errorBox(err));

  async function restore(sel, what) {
    try {
      const preview = await post(dlq, "restore", { ...sel, dry_run: true });
      if (!preview.to_restore) return;
      if (!(await confirmAction(`Restore ${plural(preview.to_restore, "dead letter")} (${what}) into ${dlq}?`))) return;
      await post(dlq, "restore", sel);
      selected.clear();
      await load();
    } catch (err) { show(err); }
  }
  const actions = session.canChange ? [
    h("button", { type: "button", id: "restore-selected", text: "Restore selected",
      onclick: () => selected.size && restore({ message_ids: [...selected] }, "selected") }),
    h("button", { type: "button", id: "restore-all", text: "Restore all", onclick: () => restore({}, "all") }),
  ] : [];

  add(el,
    h("p", { class: "crumbs" }, h("a", { href: "#/", text: "Queues" }), " / ",
      h("a", { href: base, text: dlq }), " / archive"),
    h("h1", { text: `Archive of ${dlq}` }),
    h("p", { class: "muted", text: "Archived dead letters are out of the DLQ's active view (browse, counts, redrives, purges and analysis skip them), kept until the date shown, then deleted and recorded in the discard log." }),
    problems,
    h("div", { class: "toolbar" }, ...actions),
    h("div", { class: "table-wrap" }, h("table", { class: "grid archived" },
      h("thead", {}, h("tr", {}, ["", "id", "source", "reason", "error", "archived", "kept until"].map((t) => h("th", { text: t })))),
      rows)),
    note,
    h("h2", { text: "Discard log" }),
    h("div", { class: "table-wrap" }, h("table", { class: "grid discards" },
      h("thead", {}, h("tr", {}, ["at", "kind", "count", "by", "why", "selection"].map((t) => h("th", { text: t })))),
      log)));

  async function load() {
    const [archived, discards] = await Promise.all([
      get(`${q(dlq)}/dead_letters`, { archived: true, limit: ARCHIVE_PAGE }),
      get(`${q(dlq)}/dead_letters/discards`, { limit: 50 })]);
    const messages = archived.messages || [];
    clear(rows);
    for (const m of messages) {
      const p = m.provenance || {};
      const kept = m.archived || {};
      const box = h("input", { type: "checkbox", value: m.id, checked: selected.has(m.id), "aria-label": "select" });
      box.addEventListener("change", () => { if (box.checked) selected.add(m.id); else selected.delete(m.id); });
      rows.append(h("tr", { "data-id": m.id }, h("td", {}, box), h("td", { class: "id" }, idLabel(m.id)),
        h("td", { text: p.source_queue || "" }), h("td", { text: p.reason || "" }),
        h("td", { class: "error-text", text: errorOf(m) }), h("td", { text: when(kept.at) }),
        h("td", { class: "kept-until", text: when(kept.keep_until) })));
    }
    if (!messages.length) rows.append(h("tr", {}, h("td", { colspan: 7, class: "muted", text: "Nothing archived." })));
    note.textContent = messages.length === ARCHIVE_PAGE ? `The first ${ARCHIVE_PAGE} archived dead letters.` : "";
    clear(log);
    for (const r of discards.discards || []) {
      const by = r.by ? (r.by.credential || r.by.project || "") : "(retention)";
      log.append(h("tr", { "data-discard": r.id }, h("td", { text: when(r.at) }), h("td", { text: r.kind }),
        h("td", { class: "num", text: r.count }), h("td", { text: by }), h("td", { class: "why", text: r.why }),
        h("td", { text: describe(r.selection) || "(archive)" })));
    }
    if (!(discards.discards || []).length) log.append(h("tr", {}, h("td", { colspan: 6, class: "muted", text: "Nothing discarded." })));
    problems.replaceChildren();
  }

  await load();
  return { queues: [dlq], refresh: () => load().catch(show) };
}

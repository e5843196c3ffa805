// Page 3: a DLQ's dead letters, a window at a time, with filters; one dead letter in full.

import * as api from "./api.js";
import { add, age, clear, confirmAction, errorBox, h, idLabel, pretty, shown, when } from "./dom.js";
import { editCard, historyList } from "./edit.js";
import { filterBar, isFiltered, purgeSelection, readFilter, toQuery } from "./filterbar.js";
import { redrivePanel } from "./redrive.js";
import { groupActions, selectionOf } from "./groups.js";
import { autoRedrivePanel } from "./autoredrive.js";

function errorText(m) {
  const p = m.provenance || {};
  const error = p.error_class && p.error !== p.error_class ? `${p.error_class}: ${p.error || ""}` : p.error;
  return [error, p.description].filter(Boolean).join(" — ");
}

// The deaths per queue and reason (RabbitMQ's x-death), the most recent first.
function deathList(deaths) {
  if (!(deaths || []).length) return "";
  return h("ul", { id: "deaths", class: "deaths" }, deaths.map((d) =>
    h("li", { text: `${d.queue} · ${d.reason} · ${d.count}× · ${when(d.first_at)}${d.count > 1 ? ` – ${when(d.last_at)}` : ""}` })));
}

export async function deadLetterBrowser(el, dlq, params) {
  const f = readFilter(params);
  const [srcs, stats, firstPats, saved] = await Promise.all([api.sources(dlq), api.stats(dlq),
    api.patterns(dlq), api.savedFilters(dlq)]);
  let pats = firstPats;
  const names = [...new Set([...srcs.map((s) => s.name), ...Object.keys((stats.dead_letter || {}).by_source || {})])];
  const bar = filterBar(dlq, f, { sources: names, patterns: pats, saved, onApply: (where) => {
    const query = toQuery(where);
    location.hash = `#/dlq/${encodeURIComponent(dlq)}${query ? "?" + query : ""}`;
  } });
  const filters = bar.element;

  const selected = new Set();
  const body = h("tbody", { id: "dead-letters" });
  const note = h("span", { class: "muted", id: "browse-note" });
  const problems = h("div");
  const prev = h("button", { type: "button", text: "← Previous" });
  const next = h("button", { type: "button", text: "Next →" });
  const count = h("span", { id: "selected-count", text: "0 selected" });
  const canChange = api.session.canChange;
  const panel = canChange ? redrivePanel(dlq, {
    defaults: f, patterns: pats, selected: () => [...selected], label: "Redrive…", detached: true,
    filter: isFiltered(f) ? f : null, onDone: () => load(true).catch(show) }) : null;
  const auto = autoRedrivePanel(dlq);

  const group = canChange ? groupActions(dlq, { selection: () => selectionOf(f),
    onDone: () => load().catch(show), onError: (err) => show(err) }) : null;
  const actions = canChange ? [
    panel.button,
    h("button", { type: "button", id: "delete-selected", class: "danger", text: "Delete selected",
      onclick: async () => {
        if (!selected.size) return;
        if (!(await confirmAction(`Delete ${selected.size} dead letters for good?`))) return;
        try { await api.deleteMessages(dlq, [...selected]); selected.clear(); await load(true); } catch (err) { show(err); }
      } }),
    // With a filter, the purge deletes what it selects (DELETE .../dead_letters); without, the DLQ.
    h("button", { type: "button", id: "purge", class: "danger", text: isFiltered(f) ? "Purge selection…" : "Purge DLQ",
      onclick: async () => {
        try {
          if (isFiltered(f)) {
            if ((await purgeSelection(dlq, f)) === null) return;
          } else {
            if (!(await confirmAction(`Purge every message of ${dlq}? This cannot be undone.`))) return;
            await api.purge(dlq);
          }
          selected.clear(); await load(true);
        } catch (err) { show(err); }
      } }),
  ] : [];

  add(el, 
    h("p", { class: "crumbs" }, h("a", { href: "#/", text: "Queues" }), " / ",
      h("a", { href: `#/queues/${encodeURIComponent(dlq)}`, text: dlq }), " / dead letters"),
    h("h1", {}, `Dead letters in ${dlq} `,
      h("a", { class: "small", href: `#/dlq/${encodeURIComponent(dlq)}/patterns`, text: "failure patterns" }), " ",
      h("a", { class: "small", id: "archive-link", href: `#/dlq/${encodeURIComponent(dlq)}/archive`, text: "archive and discard log" })),
    filters, problems,
    h("div", { class: "toolbar" }, h("button", { type: "button", id: "select-page", text: "Select page",
      onclick: () => { for (const box of body.querySelectorAll("input[type=checkbox]")) { box.checked = true; selected.add(box.value); } count.textContent = `${selected.size} selected`; } }),
    count, ...actions),
    group ? h("div", { class: "toolbar", id: "group-toolbar" }, group.element) : null,
    panel ? panel.element : null,
    auto.element,
    h("div", { class: "table-wrap" }, h("table", { class: "grid dead-letters" },
      h("thead", {}, h("tr", {}, ["", "id", "source", "reason", "error", "claims", "dead-lettered", "pattern"].map((t) => h("th", { text: t })))),
      body)),
    h("div", { class: "pager" }, prev, next, note));

  const markers = [null];
  let nextMarker = null;

  async function fetchPage(start) {
    const page = await api.deadLetters(dlq, f, start);
    return { rows: page.messages, next: page.next, note: "" };
  }

  // `fresh`: after an action of this page, the preview is counted again at once.
  async function load(fresh = false) {
    // Read again each time: the patterns page's live job may have stored new ones.
    pats = await api.patterns(dlq).catch(() => pats);
    const patternOf = new Map(pats.flatMap((x) => (x.message_ids || []).map((id) => [String(id), x])));
    const page = await fetchPage(markers[markers.length - 1]);
    nextMarker = page.next;
    note.textContent = shown(page.note);
    clear(body);
    for (const m of page.rows) {
      const p = m.provenance || {};
      const box = h("input", { type: "checkbox", value: m.id, checked: selected.has(m.id), "aria-label": "select" });
      box.addEventListener("change", () => {
        if (box.checked) selected.add(m.id); else selected.delete(m.id);
        count.textContent = `${selected.size} selected`;
      });
      body.append(h("tr", { "data-id": m.id },
        h("td", {}, box),
        h("td", { class: "id" }, idLabel(m.id, { href: `#/dlq/${encodeURIComponent(dlq)}/messages/${encodeURIComponent(m.id)}` })),
        h("td", { class: "source", text: p.source_queue || "" }),
        h("td", { class: "reason", text: p.reason || "" }),
        h("td", { class: "error-text", text: errorText(m), title: errorText(m) }),
        h("td", { class: "num", text: p.claim_count ?? m.claim_count }),
        h("td", { class: "seen", text: when(p.dead_lettered_at) }),
        h("td", { class: "pattern" }, patternOf.has(m.id) ? idLabel(patternOf.get(m.id).id, {
          href: `#/dlq/${encodeURIComponent(dlq)}/patterns?pattern=${encodeURIComponent(patternOf.get(m.id).id)}`,
          title: patternOf.get(m.id).template || "" }) : null)));
    }
    if (!page.rows.length) body.append(h("tr", {}, h("td", { colspan: 8, class: "muted", text: "No dead letters match." })));
    prev.disabled = markers.length === 1;
    next.disabled = !nextMarker;
    count.textContent = `${selected.size} selected`;
    problems.replaceChildren();
    // The preview count again at most every 5 s: a count by error, body or deaths reads the DLQ.
    if (fresh || Date.now() - previewed > 5000) { previewed = Date.now(); bar.preview(f); }
  }
  let previewed = 0;

  prev.addEventListener("click", () => { markers.pop(); load().catch(show); });
  next.addEventListener("click", () => { markers.push(nextMarker); load().catch(show); });
  function show(err) { problems.replaceChildren(errorBox(err)); }

  await Promise.all([load(), auto.refresh()]);
  return {
    queues: [dlq],
    refresh: () => Promise.all([load(), auto.refresh()]).catch(show),
    dispose: () => { if (panel) panel.dispose(); },
  };
}

function table(rows) {
  return h("table", { class: "kv" }, rows.map(([k, v]) => h("tr", {}, h("th", { text: k }), h("td", {}, v ?? ""))));
}

export async function deadLetterMessage(el, dlq, id) {
  const problems = h("div");
  add(el, h("p", { class: "crumbs" }, h("a", { href: "#/", text: "Queues" }), " / ",
    h("a", { href: `#/dlq/${encodeURIComponent(dlq)}`, text: dlq }), " / ", id), problems);
  let m;
  try {
    m = await api.message(dlq, id);
  } catch (err) {
    if (err.status === 404 && !api.isQueueMissing(err)) { el.append(h("p", { text: "This message is no longer in the queue (redriven, deleted or expired)." })); return {}; }
    throw err;
  }
  const p = m.provenance || {};
  const attrs = (x) => Object.entries(x.attributes || {}).map(([k, a]) => [k, `${a.type}: ${a.value}`]);
  const attrsTable = (x) => (attrs(x).length ? table(attrs(x)) : h("p", { class: "muted", text: "none" }));
  const bodyText = h("pre", { id: "message-body", class: "body", text: pretty(m.body) });
  const attrsBox = h("div", {}, attrsTable(m));
  const historyBox = h("div", { id: "history" }, historyList(m.history));
  // An edit kept in place shows at once; one redriven leaves the DLQ (the edit card says so).
  function onEdited(doc) {
    if (doc.redrive) return;
    bodyText.textContent = shown(pretty(doc.message.body));
    attrsBox.replaceChildren(attrsTable(doc.message));
    historyBox.replaceChildren(historyList(doc.message.history));
  }
  const panel = api.session.canChange
    ? redrivePanel(dlq, { messageId: id, label: "Redrive this message…", onDone: onRedriven })
    : null;
  // Once moved, the message is no longer in the DLQ: the page says where it went.
  function onRedriven(task) {
    if (task.status !== "COMPLETED" || !task.moved) return;
    const to = task.destination || p.source_queue;
    done.replaceChildren(h("p", { id: "redriven", role: "status" }, "Redriven to ",
      h("a", { href: `#/queues/${encodeURIComponent(to)}`, text: to }), " as a new message."));
  }
  const done = h("div");
  const del = api.session.canChange ? h("button", { type: "button", class: "danger", id: "delete-message", text: "Delete this dead letter",
    onclick: async () => {
      if (!(await confirmAction("Delete this dead letter for good?"))) return;
      try { await api.deleteMessages(dlq, [id]); location.hash = `#/dlq/${encodeURIComponent(dlq)}`; } catch (err) { problems.replaceChildren(errorBox(err)); }
    } }) : null;
  add(el,
    h("h1", { text: `Dead letter ${id}` }),
    panel ? h("div", { class: "message-actions" }, panel.element, del) : null,
    done,
    h("section", { class: "card" }, h("h2", { text: "Provenance" }), table([
      ["source queue", p.source_queue], ["reason", p.reason], ["description", p.description],
      ...(p.error_class ? [["error class", h("code", { id: "error-class", text: p.error_class })]] : []),
      ["error", p.error ? h("pre", { class: "error-detail", text: p.error }) : ""],
      ...(p.error_stack ? [["stack", h("pre", { id: "error-stack", class: "error-detail", text: p.error_stack })]] : []),
      ["deaths", deathList(p.deaths)],
      ["dead-lettered", when(p.dead_lettered_at)], ["claim count", p.claim_count],
      ["original id", p.original_message_id], ["original enqueue", when(p.original_enqueued_at)],
      ["age", age(m.age)], ["ttl left", age(m.ttl)]])),
    h("section", { class: "card" }, h("h2", { text: "Body" }), bodyText),
    h("section", { class: "card" }, h("h2", { text: "Attributes" }), attrsBox),
    api.session.canChange ? editCard(dlq, m, { onEdited }) : null,
    h("section", { class: "card" }, h("h2", { text: "History" }), historyBox));
  return { dispose: () => { if (panel) panel.dispose(); } };
}

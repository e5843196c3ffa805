// Page 3: a DLQ's dead letters, a window at a time, with filters; one dead letter in full.

import * as api from "./api.js";
import { add, age, clear, confirmAction, errorBox, h, idLabel, isoToLocal, localToIso, pretty, when } from "./dom.js";
import { redrivePanel } from "./redrive.js";
import { groupActions, selectionOf } from "./groups.js";

const TEXT_SCAN_PAGE = 200;   // rows read per request while searching error texts
const TEXT_SCAN_PAGES = 5;    // requests per page of results, at most
const REASONS = ["", "max_claims", "rejected", "expired", "delivery_failed"];

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

function matches(m, f) {
  const p = m.provenance || {};
  if (f.source && p.source_queue !== f.source) return false;
  if (f.reason && p.reason !== f.reason) return false;
  if (f.since && p.dead_lettered_at < f.since) return false;
  if (f.until && p.dead_lettered_at >= f.until) return false;
  if (f.q && !errorText(m).toLowerCase().includes(f.q.toLowerCase())) return false;
  return true;
}

export async function deadLetterBrowser(el, dlq, params) {
  const f = {
    source: params.get("source") || "", reason: params.get("reason") || "",
    since: params.get("since") || "", until: params.get("until") || "",
    pattern: params.get("pattern") || "", q: params.get("q") || "",
  };
  const [srcs, stats, firstPats] = await Promise.all([api.sources(dlq), api.stats(dlq), api.patterns(dlq)]);
  let pats = firstPats;
  const names = [...new Set([...srcs.map((s) => s.name), ...Object.keys((stats.dead_letter || {}).by_source || {})])];

  const source = h("select", { id: "filter-source" }, h("option", { value: "", text: "any source" }),
    names.map((n) => h("option", { value: n, text: n })));
  source.value = f.source;
  const reason = h("select", { id: "filter-reason" }, REASONS.map((r) => h("option", { value: r, text: r || "any reason" })));
  reason.value = f.reason;
  const since = h("input", { id: "filter-since", type: "datetime-local", value: isoToLocal(f.since) });
  const until = h("input", { id: "filter-until", type: "datetime-local", value: isoToLocal(f.until) });
  const pattern = h("select", { id: "filter-pattern" }, h("option", { value: "", text: "any pattern" }),
    pats.map((p) => h("option", { value: p.id, text: `${p.id}: ${p.template || ""}` })));
  pattern.value = f.pattern;
  const text = h("input", { id: "filter-text", type: "search", placeholder: "text in the error", value: f.q });
  const filters = h("form", { id: "filters", class: "fields" },
    h("label", {}, "source", source), h("label", {}, "reason", reason),
    h("label", {}, "since", since), h("label", {}, "until", until),
    h("label", {}, "pattern", pattern), h("label", {}, "error contains", text),
    h("button", { type: "submit", id: "filter-apply", text: "Apply" }));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    const put = (k, v) => { if (v) next.set(k, v); };
    put("source", source.value); put("reason", reason.value);
    put("since", localToIso(since.value)); put("until", localToIso(until.value));
    put("pattern", pattern.value); put("q", text.value.trim());
    const query = next.toString();
    location.hash = `#/dlq/${encodeURIComponent(dlq)}${query ? "?" + query : ""}`;
  });

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
    onDone: () => load().catch(show) }) : null;

  const group = canChange ? groupActions(dlq, { selection: () => selectionOf(f),
    onDone: () => load().catch(show), onError: (err) => show(err) }) : null;
  const actions = canChange ? [
    panel.button,
    h("button", { type: "button", id: "delete-selected", class: "danger", text: "Delete selected",
      onclick: async () => {
        if (!selected.size) return;
        if (!(await confirmAction(`Delete ${selected.size} dead letters for good?`))) return;
        try { await api.deleteMessages(dlq, [...selected]); selected.clear(); await load(); } catch (err) { show(err); }
      } }),
    h("button", { type: "button", id: "purge", class: "danger", text: "Purge DLQ",
      onclick: async () => {
        if (!(await confirmAction(`Purge every message of ${dlq}? This cannot be undone.`))) return;
        try { await api.purge(dlq); selected.clear(); await load(); } catch (err) { show(err); }
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
    h("div", { class: "table-wrap" }, h("table", { class: "grid dead-letters" },
      h("thead", {}, h("tr", {}, ["", "id", "source", "reason", "error", "claims", "dead-lettered", "pattern"].map((t) => h("th", { text: t })))),
      body)),
    h("div", { class: "pager" }, prev, next, note));

  const markers = [null];
  let nextMarker = null;

  async function fetchPage(start) {
    if (f.pattern) {
      const p = pats.find((x) => x.id === f.pattern);
      const ids = (p && p.message_ids) || [];
      const from = Number(start || 0);
      const found = await api.messagesByIds(dlq, ids.slice(from, from + api.BROWSE_PAGE));
      const end = from + api.BROWSE_PAGE;
      return { rows: found.filter((m) => matches(m, f)), next: end < ids.length ? String(end) : null,
        note: `pattern ${f.pattern}: ids ${from + 1}–${Math.min(end, ids.length)} of ${ids.length}` };
    }
    if (!f.q) {
      const page = await api.deadLetters(dlq, f, start);
      return { rows: page.messages, next: page.next, note: "" };
    }
    const rows = [];
    let marker = start;
    let scanned = 0;
    for (let i = 0; i < TEXT_SCAN_PAGES && rows.length < api.BROWSE_PAGE; i++) {
      const page = await api.deadLetters(dlq, f, marker, TEXT_SCAN_PAGE);
      scanned += page.messages.length;
      rows.push(...page.messages.filter((m) => matches(m, f)));
      marker = page.next;
      if (!marker) break;
    }
    return { rows, next: marker, note: `${rows.length} matching “${f.q}” in ${scanned} dead letters read` };
  }

  async function load() {
    // Read again each time: the patterns page's live job may have stored new ones.
    pats = await api.patterns(dlq).catch(() => pats);
    const patternOf = new Map(pats.flatMap((x) => (x.message_ids || []).map((id) => [String(id), x])));
    const page = await fetchPage(markers[markers.length - 1]);
    nextMarker = page.next;
    note.textContent = page.note;
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
  }

  prev.addEventListener("click", () => { markers.pop(); load().catch(show); });
  next.addEventListener("click", () => { markers.push(nextMarker); load().catch(show); });
  function show(err) { problems.replaceChildren(errorBox(err)); }

  await load();
  return {
    queues: [dlq],
    refresh: () => load().catch(show),
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
  const attrs = Object.entries(m.attributes || {}).map(([k, a]) => [k, `${a.type}: ${a.value}`]);
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
    h("section", { class: "card" }, h("h2", { text: "Body" }), h("pre", { id: "message-body", class: "body", text: pretty(m.body) })),
    h("section", { class: "card" }, h("h2", { text: "Attributes" }), attrs.length ? table(attrs) : h("p", { class: "muted", text: "none" })),
    h("section", { class: "card" }, h("h2", { text: "History" }),
      (m.history || []).length
        ? h("ol", { class: "history" }, m.history.map((e) => h("li", {}, `${when(e.at)} · ${e.event}`,
          ` · ${Object.entries(e).filter(([k]) => k !== "at" && k !== "event" && e[k] !== null).map(([k, v]) => `${k} ${v}`).join(", ")}`)))
        : h("p", { class: "muted", text: "none" })));
  return { dispose: () => { if (panel) panel.dispose(); } };
}

// Page 4: the failure patterns `deadletter analyze --queue` (or `--follow`) stored for a DLQ,
// kept current as they are stored again; browse or redrive one.

import * as api from "./api.js";
import { add, clear, errorBox, h, idLabel, pretty, svg, when } from "./dom.js";
import { purityLine, splitFact, splitPattern, variablesBlock } from "./purity.js";
import { redrivePanel } from "./redrive.js";
import { groupActions } from "./groups.js";

// Shown in their own columns, or used by the links.
const SHOWN = new Set(["id", "template", "count", "message_ids", "signature", "rate_per_minute",
  "first_seen", "last_seen", "minute_counts", "purity", "impure", "variables", "split", "split_into", "split_at"]);
// The order the facts are read in: where and when first, the evidence last.
const ORDER = ["alert", "source_queues", "reasons", "hourly_counts", "key_paths_missing",
  "overrepresented_attributes", "key_paths_in_all", "sample_message_ids", "example"];
// Stores of patterns come as feed events; the slow re-read catches a page that missed one.
const SLOW_MS = 10000;
// The trend: at most this many buckets, the newest on the right.
const TREND_BUCKETS = 30;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
// Items of a fact shown before the rest is folded away (30 key paths would fill a screen).
const LIST_SHOWN = 6;
// Requests one look at which patterns still hold dead letters may make (20 ids each); a
// pattern not reached in time is taken to hold some, and is looked at again next time.
const PROBE_BUDGET = 50;
const PROBES_AT_ONCE = 4;

function list(value) {
  return Array.isArray(value) ? value.map((v) => (typeof v === "object" && v !== null ? JSON.stringify(v) : String(v))).join(", ") : String(value);
}

function fact(name, ...value) {
  return h("div", { class: "fact" }, h("span", { class: "fact-name", text: `${name}:` }), " ", ...value);
}

// A fact of many items: the first LIST_SHOWN on its line, the rest folded under `+N more`.
function many(name, items) {
  const join = (xs) => xs.flatMap((x, i) => [i ? ", " : "", x]);
  if (items.length <= LIST_SHOWN) return fact(name, ...join(items));
  return h("details", { class: "fact many" },
    h("summary", {}, h("span", { class: "fact-name", text: `${name}:` }), " ", ...join(items.slice(0, LIST_SHOWN)),
      h("span", { class: "muted", text: ` +${items.length - LIST_SHOWN} more` })),
    h("div", { class: "rest" }, ...join(items.slice(LIST_SHOWN))));
}

const strings = (value) => value.map((v) => (typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)));

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
    else if (key === "source_queues") out.push(fact("from", list(value)));
    else if (key === "reasons") out.push(fact("reason", list(value)));
    else if (key === "key_paths_missing" && Array.isArray(value)) out.push(many("lacks", strings(value)));
    else if (key === "key_paths_in_all" && Array.isArray(value)) out.push(many("all have", strings(value)));
    else if (key === "overrepresented_attributes" && Array.isArray(value)) {
      out.push(fact("mostly", value.map((a) => `${a.name}=${a.value}` +
        (a.share !== undefined ? ` (${Math.round(a.share * 100)}%, lift ${a.lift})` : "")).join(", ")));
    } else if (key === "hourly_counts" && Array.isArray(value)) {
      const counts = value.map((pair) => Number(pair[1]) || 0);
      out.push(fact("per hour", `${counts.length} ${counts.length === 1 ? "hour" : "hours"}, at most ${Math.max(...counts)} in one`));
    } else if (key === "sample_message_ids" && Array.isArray(value)) {
      out.push(many("samples", value.map((id) =>
        idLabel(id, { href: `#/dlq/${encodeURIComponent(dlq)}/messages/${encodeURIComponent(id)}` }))));
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
function alertLines(patterns, resolved) {
  const alerted = patterns.filter((p) => p.alert && p.alert.at).sort((a, b) => (a.alert.at < b.alert.at ? 1 : -1));
  if (!alerted.length) return null;
  return h("ul", { id: "pattern-alerts" }, alerted.slice(0, 10).map((p) => h("li", { "data-pattern": p.id },
    `${alertWords(p.alert)}: `, idLabel(p.id), ` ${p.template || ""} (${p.count ?? "?"} so far)`,
    resolved(p) ? h("span", { class: "muted", text: " · no dead letters left" }) : null)));
}

// Counts per bucket as the server stores them ([[bucket start, count], ...]), the empty
// buckets between filled in: from the oldest filled bucket among the last TREND_BUCKETS to the
// newest.
export function trendCounts(pairs, width) {
  const points = (pairs || []).map(([at, n]) => [Date.parse(at), Number(n) || 0]).filter(([t]) => !Number.isNaN(t));
  if (!points.length) return [];
  const last = Math.max(...points.map(([t]) => t));
  const counts = new Array(TREND_BUCKETS).fill(0);
  for (const [t, n] of points) {
    const back = Math.round((last - t) / width);
    if (back < TREND_BUCKETS) counts[TREND_BUCKETS - 1 - back] += n;
  }
  const first = counts.findIndex((n) => n > 0);
  return first < 0 ? [] : counts.slice(first);
}

// A small inline SVG of the pattern's dead letters per bucket: per minute when the live job
// stored them (`minute_counts`), else per hour (`hourly_counts`).
function sparkline(p) {
  const perMinute = Array.isArray(p.minute_counts) && p.minute_counts.length;
  const counts = trendCounts(perMinute ? p.minute_counts : p.hourly_counts, perMinute ? MINUTE_MS : HOUR_MS);
  if (!counts.length) return h("span", { class: "muted", text: "—" });
  const unit = perMinute ? "minute" : "hour";
  const peak = Math.max(...counts, 1);
  const w = 3;
  const height = 20;
  const bars = counts.map((n, i) => svg("rect", {
    x: i * (w + 1), y: height - Math.max(n ? 2 : 0, Math.round((n / peak) * height)),
    width: w, height: Math.max(n ? 2 : 0, Math.round((n / peak) * height)), "data-count": n,
  }));
  const title = svg("title");
  title.textContent = `per ${unit}, oldest first: ${counts.join(" ")}`;
  return svg("svg", { class: "sparkline", width: counts.length * (w + 1), height, role: "img",
    "aria-label": `dead letters per ${unit}: ${counts.join(", ")}`, "data-unit": unit }, title, ...bars);
}

function rateText(p) {
  return typeof p.rate_per_minute === "number" ? `${p.rate_per_minute}/min` : "—";
}

// Whether each pattern's dead letters are still in the DLQ. A pattern whose dead letters were
// all redriven, deleted or expired stays listed (it is the record of what failed) but has
// nothing left to browse or redrive. Dead letters' ids are never used again, so a pattern found
// empty stays empty until a store gives it other ids; one found holding some is looked at again
// only after something left the DLQ.
function presenceOf(dlq) {
  const known = new Map();   // pattern id -> { key, left, from }
  let stale = true;          // something may have left the DLQ since the last look
  const keyOf = (ids) => `${ids.length}:${ids[0] ?? ""}:${ids[ids.length - 1] ?? ""}`;

  // One pattern: its ids 20 at a time, from where they were found last time, until one is
  // there (it holds some) or none was (it holds none); null when the budget ran out first.
  async function probe(ids, key, was, take) {
    const starts = [];
    for (let i = 0; i < ids.length; i += api.PAGE) starts.push(i);
    const first = was && was.left ? Math.max(0, starts.indexOf(was.from)) : 0;
    for (const at of [...starts.slice(first), ...starts.slice(0, first)]) {
      if (!take()) return null;
      if ((await api.messagesByIds(dlq, ids.slice(at, at + api.PAGE))).length) return { key, left: true, from: at };
    }
    return { key, left: false, from: 0 };
  }

  async function look(patterns) {
    const stats = await api.stats(dlq).catch(() => null);
    const empty = stats !== null && ((stats.messages || {}).total ?? null) === 0;
    const due = [];
    for (const p of patterns) {
      const ids = (p.message_ids || []).map(String);
      const key = keyOf(ids);
      const was = known.get(p.id);
      if (!ids.length) known.delete(p.id);   // no ids stored: nothing to tell
      else if (empty) known.set(p.id, { key, left: false, from: 0 });
      else if (was && was.left === false && was.key === key) continue;
      else if (was && was.left === true && !stale) continue;
      else due.push([p.id, ids, key, was]);
    }
    let budget = PROBE_BUDGET;
    const take = () => budget-- > 0;
    // A few patterns at a time, so a page of many patterns opens without waiting on each.
    const workers = Array.from({ length: PROBES_AT_ONCE }, async () => {
      for (let next = due.shift(); next; next = due.shift()) {
        const [id, ids, key, was] = next;
        const state = await probe(ids, key, was, take).catch(() => null);
        // Not known this time: offered, as before the look.
        if (state) known.set(id, state); else known.delete(id);
      }
    });
    await Promise.all(workers);
    stale = false;
  }

  return {
    look,
    resolved: (p) => known.get(p.id)?.left === false,
    somethingLeft() { stale = true; },
  };
}

// Feed events after which a pattern's dead letters may be gone.
const LEAVING = new Set(["redriven", "deleted", "expired", "archived", "discarded", "poll", "resync"]);

export async function patternsPage(el, dlq) {
  let patterns = await api.patterns(dlq);
  const presence = presenceOf(dlq);
  await presence.look(patterns);
  const resolved = presence.resolved;
  const open = () => patterns.filter((p) => !resolved(p));
  const panel = api.session.canChange
    ? redrivePanel(dlq, { defaults: {}, patterns: open(), label: "Redrive…", detached: true,
      onDone: () => { presence.somethingLeft(); refresh().catch(show); } })
    : null;
  const base = `#/dlq/${encodeURIComponent(dlq)}`;
  // A pattern's group archived or discarded from its row (the days and why beside "Redrive…").
  const group = api.session.canChange ? groupActions(dlq, { selection: () => ({}), buttons: false,
    onDone: () => { presence.somethingLeft(); refresh().catch(show); }, onError: (err) => show(err) }) : null;
  const command = h("code", { text: `deadletter analyze --queue ${dlq}` });
  const follow = h("code", { text: `deadletter analyze --queue ${dlq} --follow` });
  const note = h("p", { class: "muted", id: "patterns-note" });
  const alerts = h("div", { id: "pattern-alerts-box" });
  const problems = h("div");
  const table = h("div", { id: "patterns-box", class: "table-wrap" });
  const resolvedNote = h("p", { class: "muted", id: "resolved-note" });
  const splitNote = h("p", { class: "muted", id: "split-note", hidden: true });

  // "split here" on a variable position: the server replaces the pattern, the page re-reads.
  async function split(p, position) {
    problems.replaceChildren();
    try {
      const done = await splitPattern(dlq, p, position);
      if (!done) return;
      splitNote.hidden = false;
      splitNote.textContent = `Split ${done.pattern_id} at position ${done.position} into ` +
        done.patterns.map((n) => `${n.id} (${n.count})`).join(", ") +
        (done.unread ? `; ${done.unread} stayed in ${done.pattern_id}` : "") + ".";
      await refresh();
    } catch (err) {
      show(err);
    }
  }

  function row(p) {
    const done = resolved(p);
    return h("tr", { "data-pattern": p.id, id: `pattern-${p.id}`, class: done ? "resolved" : null },
      // The actions under the id, in the first column: in view on a narrow screen too.
      h("td", { class: "pattern-id" }, idLabel(p.id), h("div", { class: "actions" }, done
        ? h("span", { class: "muted resolved-mark", text: "no dead letters left" })
        : [h("a", { href: `${base}?pattern=${encodeURIComponent(p.id)}`, text: "browse" }),
          panel ? h("button", { type: "button", class: "small", text: "redrive these",
            onclick: () => panel.open({ pattern: p.id, source: "", reason: "", since: "", until: "" }) }) : null,
          group ? h("button", { type: "button", class: "small archive-pattern", text: "archive",
            onclick: () => group.archive({ pattern_id: p.id }) }) : null,
          group ? h("button", { type: "button", class: "small danger discard-pattern", text: "discard",
            onclick: () => group.discard({ pattern_id: p.id }) }) : null])),
      h("td", { class: "num count", text: p.count ?? (p.message_ids || []).length }),
      h("td", { class: "num rate", text: rateText(p) }),
      h("td", { class: "seen first-seen", text: p.first_seen ? when(p.first_seen) : "—" }),
      h("td", { class: "seen last-seen", text: p.last_seen ? when(p.last_seen) : "—" }),
      h("td", { class: "trend" }, sparkline(p)),
      h("td", { class: "template" }, h("code", { text: p.template || "" }),
        p.signature ? h("div", { class: "muted small-note signature", title: p.signature, text: p.signature }) : null,
        purityLine(p),
        variablesBlock(p, { dlq, onSplit: api.session.canChange && !done ? (at) => split(p, at) : null })),
      h("td", { class: "facts" }, splitFact(p), facts(p, dlq)));
  }

  function draw() {
    clear(note).append(...(patterns.length
      ? ["Stored by ", command, " or kept current by ", follow, "; this page follows each store."]
      : ["No patterns stored for this DLQ. Run ", command, " to find them and store them here, or ", follow, " to keep them current."]));
    add(clear(alerts), alertLines(patterns, resolved));
    // The patterns that still hold dead letters first; the others last, greyed.
    const shown = [...open(), ...patterns.filter(resolved)];
    const gone = patterns.length - open().length;
    resolvedNote.hidden = !gone;
    resolvedNote.textContent = gone
      ? `${gone} of ${patterns.length} ${patterns.length === 1 ? "pattern has" : "patterns have"}` +
        " no dead letters left in this DLQ (redriven, deleted or expired): listed last, with nothing to browse or redrive."
      : "";
    add(clear(table), patterns.length ? h("table", { class: "grid patterns", id: "patterns" },
      h("thead", {}, h("tr", {}, ["pattern", "count", "rate", "first seen", "last seen", "trend", "template", "more"]
        .map((t) => h("th", { text: t, class: `col-${t.replace(/ /g, "-")}` })))),
      h("tbody", {}, shown.map(row))) : null);
    if (panel) panel.setPatterns(open());
    // The link a dead letter's cell follows (#/dlq/…/patterns?pattern=id) lands on its row.
    const wanted = new URLSearchParams(location.hash.split("?")[1] || "").get("pattern");
    const target = wanted ? document.getElementById(`pattern-${wanted}`) : null;
    if (target) target.classList.add("wanted");
  }

  add(el,
    h("p", { class: "crumbs" }, h("a", { href: "#/", text: "Queues" }), " / ",
      h("a", { href: base, text: dlq }), " / patterns"),
    h("h1", { text: `Failure patterns in ${dlq}` }),
    note, problems, alerts,
    panel ? h("div", { class: "toolbar" }, panel.button, group.element,
      h("a", { class: "small", href: `${base}/archive`, text: "archive and discard log" })) : null,
    panel ? panel.element : null,
    splitNote, resolvedNote, table);
  draw();
  const wanted = el.querySelector("tr.wanted");
  if (wanted) wanted.scrollIntoView({ block: "center" });

  async function refresh() {
    patterns = await api.patterns(dlq);
    await presence.look(patterns);
    draw();
    problems.replaceChildren();
  }
  const show = (err) => problems.replaceChildren(errorBox(err));
  const slow = setInterval(() => { presence.somethingLeft(); refresh().catch(show); }, SLOW_MS);
  return {
    queues: [dlq],
    onEvent: (event) => { if (LEAVING.has(event.type)) presence.somethingLeft(); },
    refresh: () => refresh().catch(show),
    dispose: () => { clearInterval(slow); if (panel) panel.dispose(); },
  };
}

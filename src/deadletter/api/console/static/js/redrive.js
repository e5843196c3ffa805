// Page 5's panel: start a redrive with filters (and a canary), follow its task to the end,
// cancel it, or resume it when its canary paused it.

import * as api from "./api.js";
import { confirmAction, errorBox, h, isoToLocal, localToIso } from "./dom.js";
import { impureNote } from "./purity.js";

const POLL_MS = 500;
// Once a task has ended, how its group fared (`follow`) still changes as messages die again.
const FOLLOW_MS = 5000;
const ENDED = new Set(["COMPLETED", "CANCELLED"]);
const REASONS = ["", "max_claims", "rejected", "expired", "delivery_failed"];

const FILTERS = ["source_queue", "reason", "since", "until", "pattern_id", "message_ids"];

// options: defaults {source, reason, since, until, pattern}, selected() -> ids, label, onDone();
// or messageId: the panel redrives that one message, and the filters do not apply; or filter:
// the page's filter bar (filterbar.js) selects, the panel shows none of its own.
// The page's filter, as the panel shows it in place of its own fields.
function selection(where) {
  const text = Object.entries(where).map(([k, v]) => `${k}=${v}`).join(", ");
  return h("p", { id: "redrive-filter", class: "muted" }, text
    ? `Moves the dead letters the filter above selects: ${text}.` : "");
}

export function redrivePanel(dlq, options = {}) {
  const single = options.messageId || null;
  const given = options.filter || null;
  const d = options.defaults || {};
  const source = h("input", { id: "redrive-source", placeholder: "any source", value: d.source || "" });
  const reason = h("select", { id: "redrive-reason" },
    REASONS.map((r) => h("option", { value: r, text: r || "any reason" })));
  reason.value = d.reason || "";
  const since = h("input", { id: "redrive-since", type: "datetime-local", value: isoToLocal(d.since) });
  const until = h("input", { id: "redrive-until", type: "datetime-local", value: isoToLocal(d.until) });
  const pattern = h("select", { id: "redrive-pattern" }, h("option", { value: "", text: "no pattern" }));
  const onlySelected = h("input", { id: "redrive-selected", type: "checkbox" });
  const destination = h("input", { id: "redrive-destination", placeholder: "each message's source queue" });
  const rate = h("input", { id: "redrive-rate", type: "number", min: 1, placeholder: "as fast as possible" });
  // A canary: a sample first (N dead letters or P%), watched for re-deaths before the rest.
  const canary = h("input", { id: "redrive-canary", placeholder: "none (e.g. 10 or 5%)", pattern: "\\s*\\d+(\\.\\d+)?%?\\s*" });
  const watch = h("input", { id: "redrive-watch", type: "number", min: 1, placeholder: "60" });
  const maxRedeath = h("input", { id: "redrive-max-redeath", type: "number", min: 0, max: 100, step: "any", placeholder: "0" });
  // A transform: a merge patch of {"body", "attributes"} applied to each dead letter as it moves.
  const transform = h("input", { id: "redrive-transform", size: 44, placeholder: '{"body": {"customer": {"id": "unknown"}}}' });
  // Over a pattern flagged impure: what that means, and the force a canary over it needs.
  const impure = impureNote();
  const start = h("button", { id: "redrive-start", type: "submit", class: "primary", text: "Start redrive" });
  const bar = h("progress", { id: "redrive-bar", max: 1, value: 0 });
  const percent = h("span", { id: "redrive-percent", text: "" });
  const status = h("span", { id: "redrive-status", class: "muted" });
  const cancel = h("button", { id: "redrive-cancel", type: "button", text: "Cancel", hidden: true });
  const resume = h("button", { id: "redrive-resume", type: "button", class: "primary", text: "Resume: move the rest", hidden: true });
  const problems = h("div", { class: "problems" });
  const outcome = h("p", { id: "redrive-canary-outcome", class: "canary-outcome", hidden: true });
  const fared = h("p", { id: "redrive-follow", class: "muted", hidden: true });
  const progress = h("div", { class: "progress", id: "redrive-progress", hidden: true }, bar, percent, status, resume, cancel, outcome, fared);
  const form = single
    ? h("form", { id: "redrive-form", class: "redrive", hidden: true },
      h("div", { class: "fields" }, h("label", {}, "destination", destination)),
      h("p", { class: "muted", text: "Moves this message back, with a fresh delivery count, to its source queue or to the destination given." }),
      start)
    : h("form", { id: "redrive-form", class: "redrive", hidden: !options.open },
      h("div", { class: "fields" },
        given ? selection(given) : [h("label", {}, "source", source), h("label", {}, "reason", reason),
          h("label", {}, "since", since), h("label", {}, "until", until), h("label", {}, "pattern", pattern)],
        options.selected ? h("label", { class: "inline" }, onlySelected, " only the selected messages") : null,
        h("label", {}, "destination", destination),
        h("label", {}, "rate (msg/s)", rate)),
      h("div", { class: "fields canary-fields" },
        h("label", {}, "canary (N or P%)", canary),
        h("label", {}, "watch (s)", watch),
        h("label", {}, "max re-death (%)", maxRedeath),
        h("label", {}, "transform (merge patch, each as it moves)", transform)),
      impure.element,
      h("p", { class: "muted", text: "Empty filters take every dead letter in the DLQ when the task starts (after a confirmation). " +
        "With a canary the task moves that sample first, watches it, then moves the rest, or pauses when more than the max re-death died again." }),
      start);
  const toggle = h("button", { id: "redrive-button", type: "button", class: "primary",
    text: options.label || "Redrive…", onclick: () => { form.hidden = !form.hidden; } });
  // `detached`: the page puts `button` with its other actions (at the top of a long list),
  // and the card shows only while the form is open or a task is followed.
  const detached = Boolean(options.detached);
  const element = h("section", { class: detached ? "card redrive-card detached" : "card redrive-card", id: "redrive-card" },
    detached ? null : h("div", { class: "lane-head" }, toggle), form, progress, problems);

  let timer = null;
  let task = null;
  let stopped = false;
  let doneTold = false;

  // (with the page's filter, its pattern: the note on an impure one shows for it too)
  let wantedPattern = (given && given.pattern_id) || d.pattern || "";
  let known = new Map();  // the patterns offered, by id
  const patternChosen = () => impure.update(known.get(pattern.value));
  pattern.addEventListener("change", () => { wantedPattern = pattern.value; patternChosen(); });
  let listed = null;
  // The options again only when they changed, so a refresh leaves an open select alone.
  function listPatterns(list) {
    known = new Map(list.map((p) => [p.id, p]));
    const texts = list.map((p) => [p.id, `${p.id}: ${p.template || ""} (${p.count ?? "?"})`]);
    const signature = JSON.stringify(texts);
    if (signature === listed) return;
    listed = signature;
    pattern.replaceChildren(h("option", { value: "", text: "no pattern" }),
      ...texts.map(([value, text]) => h("option", { value, text })));
    pattern.value = list.some((p) => p.id === wantedPattern) ? wantedPattern : "";
    patternChosen();
  }
  const patternsLoaded = (single ? Promise.resolve([]) : options.patterns ? Promise.resolve(options.patterns) : api.patterns(dlq))
    .then(listPatterns).catch(() => {});

  function draw(t) {
    if (!task || task.id !== t.id) doneTold = false;  // a new task is told done once too
    task = t;
    progress.hidden = false;
    const total = t.to_move || 0;
    const pct = total ? Math.floor((100 * t.moved) / total) : (t.status === "COMPLETED" ? 100 : 0);
    bar.max = Math.max(total, 1);
    bar.value = total ? t.moved : (pct === 100 ? 1 : 0);
    percent.textContent = `${pct}%`;
    progress.dataset.status = t.status;
    const c = t.canary;
    const paused = t.status === "PAUSED";
    status.textContent = ` ${t.moved} of ${total} moved` + (t.skipped ? `, ${t.skipped} skipped` : "") +
      (t.gone ? `, ${t.gone} gone (left the DLQ or were claimed meanwhile)` : "") + ` · ${t.status}` + (t.failure_reason ? ` (${t.failure_reason})` : "") +
      (paused && c && c.reason ? `: ${c.reason}` : "");
    outcome.hidden = !c;
    if (c) {
      const verdict = c.decision === "paused" ? `paused: ${c.reason}`
        : c.decision === "continued" ? "the sample stayed fixed: the rest went on"
        : c.watch_until ? `watching until ${new Date(c.watch_until).toLocaleTimeString()}` : "moving the sample";
      outcome.dataset.decision = c.decision || "";
      outcome.textContent = `Canary (${c.requested}, watched ${c.watch} s, at most ${c.max_redeath}% may die again): ` +
        `${c.sample} of ${c.size} moved, ${c.redeaths} died again — ${verdict}` +
        (c.resumed_at ? ` · resumed ${new Date(c.resumed_at).toLocaleTimeString()}` : "");
    }
    const f = t.follow;
    fared.hidden = !(f && f.redriven && ENDED.has(t.status));
    if (!fared.hidden) {
      fared.textContent = `Since it ran: ${f.came_back_dead} of ${f.redriven} came back dead, ${f.still_out} still out.`;
    }
    const running = t.status === "RUNNING";
    cancel.hidden = !(running || paused);
    resume.hidden = !paused || !api.session.canChange;
    start.disabled = running || paused || t.status === "CANCELLING";
  }

  async function poll() {
    if (!task || stopped) return;
    try {
      draw(await api.redrive(dlq, task.id));
    } catch (err) {
      problems.replaceChildren(errorBox(err));
    }
    if (!stopped && (task.status === "RUNNING" || task.status === "CANCELLING")) {
      timer = setTimeout(poll, POLL_MS);
      return;
    }
    if (!stopped && options.onDone && !doneTold) {
      doneTold = true;
      options.onDone(task);
    }
    if (!stopped && ENDED.has(task.status)) timer = setTimeout(poll, FOLLOW_MS);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problems.replaceChildren();
    const body = {};
    if (single) {
      body.message_ids = [single];
    } else if (given) {
      Object.assign(body, given);
    } else {
      if (source.value.trim()) body.source_queue = source.value.trim();
      if (reason.value) body.reason = reason.value;
      if (localToIso(since.value)) body.since = localToIso(since.value);
      if (localToIso(until.value)) body.until = localToIso(until.value);
      if (pattern.value) body.pattern_id = pattern.value;
    }
    if (!single) {
      if (onlySelected.checked && options.selected) {
        const ids = options.selected();
        if (!ids.length) { problems.replaceChildren(errorBox({ title: "Redrive", description: "No message is selected." })); return; }
        body.message_ids = ids;
      }
      if (rate.value) body.rate = Number(rate.value);
      if (transform.value.trim()) {
        try { body.transform = JSON.parse(transform.value); } catch (err) {
          problems.replaceChildren(errorBox({ title: "Transform", description: `not JSON: ${err.message}` }));
          return;
        }
      }
      const size = canary.value.trim();
      if (size) {
        body.canary = size.endsWith("%") ? size : Number(size);
        if (watch.value) body.watch = Number(watch.value);
        if (maxRedeath.value) body.max_redeath = Number(maxRedeath.value);
        if (impure.force.checked && body.pattern_id) body.force = true;
      } else if (watch.value || maxRedeath.value) {
        problems.replaceChildren(errorBox({ title: "Redrive", description: "A watch and a max re-death go with a canary." }));
        return;
      }
    }
    if (destination.value.trim()) body.destination = destination.value.trim();
    // Without a filter the task takes the whole DLQ: ask first, as for a purge; with the
    // page's filter, ask with the count of what it selects now (a dry run of the same body).
    const filtered = given ? Object.keys(given).length > 0 || "message_ids" in body : FILTERS.some((k) => k in body);
    if (!filtered && !single && !(await confirmEverything())) return;
    try {
      if (filtered && given && !(await confirmSelection(body))) return;
      draw(await api.startRedrive(dlq, body));
      clearTimeout(timer);
      timer = setTimeout(poll, POLL_MS);
    } catch (err) {
      problems.replaceChildren(errorBox(err));
    }
  });

  async function confirmSelection(body) {
    const n = (await api.startRedrive(dlq, { ...body, dry_run: true })).to_move;
    const where = destination.value.trim() ? `to ${destination.value.trim()}` : "to their source queues";
    return confirmAction(`Redrive the ${n} dead letter${n === 1 ? "" : "s"} of ${dlq} that the filter selects ${where}?`);
  }

  async function confirmEverything() {
    let total = null;
    try { total = ((await api.stats(dlq)).messages || {}).total; } catch { /* ask without the count */ }
    const what = total === null || total === undefined ? "every dead letter" : `all ${total} dead letters`;
    const where = destination.value.trim() ? `to ${destination.value.trim()}` : "to their source queues";
    return confirmAction(`Redrive ${what} in ${dlq} ${where}? No filter is set.`);
  }

  resume.addEventListener("click", async () => {
    try {
      draw(await api.resumeRedrive(dlq, task.id));
      clearTimeout(timer);
      timer = setTimeout(poll, POLL_MS);
    } catch (err) {
      problems.replaceChildren(errorBox(err));
    }
  });

  cancel.addEventListener("click", async () => {
    try {
      await api.cancelRedrive(dlq, task.id);
      await poll();
    } catch (err) {
      problems.replaceChildren(errorBox(err));
    }
  });

  // A task already running for this DLQ (started elsewhere) is followed too, and one its
  // canary paused is shown with its reason, to resume or cancel.
  api.redrives(dlq).then((list) => {
    const open = list.find((t) => ["RUNNING", "CANCELLING"].includes(t.status) || (!single && t.status === "PAUSED"));
    if (open && !task) { draw(open); if (open.status !== "PAUSED") timer = setTimeout(poll, POLL_MS); }
  }).catch(() => {});

  return {
    element,
    button: toggle,
    // The patterns the select offers (a page that learns which still hold dead letters).
    setPatterns(list) { patternsLoaded.then(() => listPatterns(list)); },
    open(values = {}) {
      form.hidden = false;
      if ("source" in values) source.value = values.source || "";
      if ("reason" in values) reason.value = values.reason || "";
      if ("since" in values) since.value = isoToLocal(values.since);
      if ("until" in values) until.value = isoToLocal(values.until);
      if ("pattern" in values) {
        wantedPattern = values.pattern || "";
        pattern.value = wantedPattern;
        patternsLoaded.then(() => { pattern.value = wantedPattern; patternChosen(); });
      }
      if ("selected" in values) onlySelected.checked = Boolean(values.selected);
      element.scrollIntoView({ block: "nearest" });
    },
    dispose() { stopped = true; clearTimeout(timer); },
  };
}

// The DLQ page's automatic redrive panel: the DLQ's policy, its state, rounds and next round,
// with stop, resume and delete; a form sets one (a source and a reason, or the whole DLQ;
// every N minutes; each dead letter at most M rounds; with a canary).

import * as api from "./api.js";
import { confirmAction, errorBox, h, shown, when } from "./dom.js";

const REASONS = ["", "max_claims", "rejected", "expired", "delivery_failed"];
const path = (dlq) => `/v2/queues/${encodeURIComponent(dlq)}/dead_letters/auto_redrive`;

// The policy, or null when the DLQ has none.
async function read(dlq) {
  try {
    return (await api.call("GET", path(dlq))).doc;
  } catch (err) {
    if (err.status === 404 && !api.isQueueMissing(err)) return null;
    throw err;
  }
}

function selects(filter) {
  const parts = Object.entries(filter || {}).map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(", ") : v}`);
  return parts.length ? parts.join(" · ") : "the whole DLQ";
}

function minutes(seconds) {
  return seconds % 60 ? `${seconds} s` : `${seconds / 60} min`;
}

export function autoRedrivePanel(dlq) {
  const canChange = api.session.canChange;
  const state = h("span", { id: "auto-redrive-state", class: "auto-state" });
  const summary = h("p", { id: "auto-redrive-summary" });
  const next = h("p", { id: "auto-redrive-next", class: "muted" });
  const last = h("p", { id: "auto-redrive-last", class: "muted" });
  const why = h("p", { id: "auto-redrive-why", role: "status", hidden: true });
  const problems = h("div");

  const source = h("input", { id: "auto-redrive-source", placeholder: "any source" });
  const reason = h("select", { id: "auto-redrive-reason" },
    REASONS.map((r) => h("option", { value: r, text: r || "any reason" })));
  const every = h("input", { id: "auto-redrive-every", type: "number", min: 1, max: 10080, value: 10 });
  const rounds = h("input", { id: "auto-redrive-rounds", type: "number", min: 1, max: 100, value: 5 });
  const canary = h("input", { id: "auto-redrive-canary", placeholder: "none (e.g. 10 or 5%)" });
  const form = h("form", { id: "auto-redrive-form", class: "redrive", hidden: true },
    h("div", { class: "fields" },
      h("label", {}, "source", source), h("label", {}, "reason", reason),
      h("label", {}, "every (min)", every), h("label", {}, "max rounds", rounds),
      h("label", {}, "canary (N or P%)", canary)),
    h("p", { class: "muted", text: "Each round sends back what the filters select (empty filters: the whole DLQ, after a " +
      "confirmation), as a redrive task with the canary. A dead letter sent back max rounds times stays, marked " +
      "exhausted in its history; a round whose canary pauses pauses the policy." }),
    h("button", { id: "auto-redrive-save", type: "submit", class: "primary", text: "Set automatic redrive" }));
  form.addEventListener("submit", (event) => { event.preventDefault(); save(); });

  const button = (id, text, onclick, cls) => h("button", { id, type: "button", class: cls, text, hidden: true, onclick });
  const edit = button("auto-redrive-edit", "Set…", () => { form.hidden = !form.hidden; });
  const stop = button("auto-redrive-stop", "Stop", () => act("POST", "/stop"), "danger");
  const resume = button("auto-redrive-resume", "Resume", () => act("POST", "/resume"), "primary");
  const remove = button("auto-redrive-delete", "Delete", async () => {
    if (await confirmAction(`Delete the automatic redrive of ${dlq}? Its round in flight is cancelled.`)) act("DELETE", "");
  }, "danger");

  const element = h("section", { class: "card", id: "auto-redrive" },
    h("h2", {}, "Automatic redrive ", state), summary, next, last, why,
    canChange ? h("div", { class: "toolbar" }, edit, stop, resume, remove) : null,
    canChange ? form : null, problems);

  async function act(method, suffix) {
    try {
      await api.call(method, path(dlq) + suffix);
      await refresh();
    } catch (err) { problems.replaceChildren(errorBox(err)); }
  }

  async function save() {
    const filter = {};
    if (source.value.trim()) filter.source_queue = source.value.trim();
    if (reason.value) filter.reason = reason.value;
    if (!Object.keys(filter).length &&
        !(await confirmAction(`Send back every dead letter of ${dlq}, every ${every.value} min?`))) return;
    const body = { filter, interval: Math.round(Number(every.value) * 60), max_rounds: Number(rounds.value) };
    if (canary.value.trim()) body.canary = canary.value.trim();
    try {
      await api.call("PUT", path(dlq), { body });
      form.hidden = true;
      await refresh();
    } catch (err) { problems.replaceChildren(errorBox(err)); }
  }

  function draw(p) {
    element.dataset.state = p ? p.state : "none";
    state.textContent = p ? p.state : "none";
    state.dataset.state = p ? p.state : "none";
    stop.hidden = !p || p.state === "stopped";
    resume.hidden = !p || p.state === "active";
    remove.hidden = !p;
    edit.hidden = false;
    edit.textContent = p ? "Change…" : "Set…";
    if (!p) {
      summary.textContent = "None: dead letters stay until redriven by hand.";
      next.textContent = last.textContent = "";
      why.hidden = true;
      return;
    }
    const c = p.canary;
    summary.textContent = shown(`Sends back ${selects(p.filter)} every ${minutes(p.interval)}, each dead letter at most ` +
      `${p.max_rounds} times${c ? `, canary ${c.size} watched ${c.watch} s` : ""}. ` +
      `${p.rounds} round${p.rounds === 1 ? "" : "s"} · ${p.moved} moved · ${p.exhausted} exhausted.`);
    next.textContent = p.next_round_at ? `Next round ${when(p.next_round_at)}` : `No next round: ${p.state}`;
    const r = p.last_round;
    last.replaceChildren();
    if (r) {
      last.append(`Last round ${when(r.at)}: ${r.outcome.replaceAll("_", " ")}, ${r.eligible} to send back, ` +
        `${r.kept} kept, ${r.moved} moved`);
      if (r.task_id) last.append(" · task ", h("code", { text: r.task_id }));
      if (r.reason) last.append(` (${shown(r.reason)})`);
    }
    why.hidden = !p.reason;
    why.textContent = shown(p.reason || "");
  }

  async function refresh() {
    draw(await read(dlq));
    problems.replaceChildren();
  }

  return { element, refresh };
}

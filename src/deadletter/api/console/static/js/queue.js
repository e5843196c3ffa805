// Page 2: one queue as two strips, the main queue above its DLQ, cells with delivery-count
// badges and the max-claims threshold between them, updated live.

import * as api from "./api.js";
import { add, age, clear, errorBox, h, preview, shortId } from "./dom.js";
import { redrivePanel } from "./redrive.js";

const WINDOW = 50;   // cells drawn per strip; the rest is summarised

export async function queuePicture(el, name, params) {
  const meta = await api.queue(name);
  const dlq = meta._dead_letter_queue || null;
  const maxClaims = meta._max_claim_count || null;
  const srcs = dlq ? [] : await api.sources(name);
  const isDlq = srcs.length > 0;

  const problems = h("div");
  const mainStrip = h("div", { class: "strip", id: "main-strip" });
  const mainDepth = h("span", { class: "depth", id: "main-depth" });
  const mainMore = h("span", { class: "more", id: "main-more" });
  const dlqStrip = h("div", { class: "strip quarantine", id: "dlq-strip" });
  const dlqDepth = h("span", { class: "depth", id: "dlq-depth" });
  const dlqMore = h("span", { class: "more", id: "dlq-more" });
  const legend = h("span", { class: "muted", id: "main-legend" });
  let seen = new Set();
  let claimsLeft = new Map();   // claim id -> seconds left when last read
  let readAt = Date.now();

  add(el, 
    h("p", { class: "crumbs" }, h("a", { href: "#/", text: "Queues" }), " / ", name),
    h("h1", {}, name, isDlq ? h("span", { class: "tag dlq", text: "DLQ" }) : null),
    problems,
    h("section", { class: "picture" },
      h("div", { class: "lane" },
        h("div", { class: "lane-head" },
          h("strong", { text: isDlq ? "DEAD-LETTER QUEUE" : "MAIN QUEUE" }), " ", mainDepth, " ", legend),
        h("div", { class: "row" },
          h("span", { class: "end-label", text: "head →" }), mainStrip, mainMore,
          h("span", { class: "end-label", text: isDlq ? "no workers" : "→ consumers" }))),
      dlq ? h("div", { class: "threshold", id: "threshold" },
        h("span", { class: "arrow", "aria-hidden": "true", text: "↓" }),
        h("span", { text: `maxClaimCount = ${maxClaims}` }),
        h("span", { class: "muted", text: " — the next claim after this many deliveries moves the message down" }))
        : null,
      dlq ? h("div", { class: "lane" },
        h("div", { class: "lane-head" },
          h("strong", { text: "DLQ" }), " ",
          h("a", { href: `#/dlq/${encodeURIComponent(dlq)}`, text: dlq }), " ",
          h("span", { class: "muted", text: "quarantine — no workers attached" }), " ", dlqDepth),
        h("div", { class: "row" }, dlqStrip, dlqMore))
        : null,
      !dlq && !isDlq ? h("p", { class: "muted", text: "No dead-letter policy: messages are never moved." }) : null),
    isDlq ? h("p", {}, h("a", { href: `#/dlq/${encodeURIComponent(name)}`, text: "Browse these dead letters" }),
      " · sources: ", srcs.map((s) => s.name).join(", ")) : null);

  const panel = dlq && api.session.canChange
    ? redrivePanel(dlq, { defaults: { source: name }, label: "redrive DLQ", onDone: () => refresh() })
    : null;
  if (panel) el.append(panel.element);

  function cell(m, { claimsLimit, inDlq }) {
    const left = m.claim_id && claimsLeft.has(m.claim_id)
      ? Math.max(0, claimsLeft.get(m.claim_id) - (Date.now() - readAt) / 1000) : null;
    const classes = ["cell"];
    if (m.claim_id) classes.push("claimed");
    if (!seen.has(m.id)) classes.push("fresh");
    if (claimsLimit && m.claim_count >= claimsLimit) classes.push("hot");
    const link = inDlq ? `#/dlq/${encodeURIComponent(dlq || name)}/messages/${encodeURIComponent(m.id)}` : null;
    const label = h(link ? "a" : "span", { class: "cell-label", href: link, text: preview(m.body) });
    return h("div", {
      class: classes.join(" "), "data-id": m.id, "data-claims": m.claim_count,
      title: `${m.id}\nage ${age(m.age)}, delivered ${m.claim_count}×` +
        (m.provenance ? `\nfrom ${m.provenance.source_queue} (${m.provenance.reason})` : ""),
    },
    h("span", { class: "badge", text: m.claim_count }),
    label,
    h("span", { class: "cell-id", text: shortId(m.id) }),
    m.claim_id ? h("span", { class: "timer", "data-claim": m.claim_id, text: left === null ? "claimed" : `claim ${Math.ceil(left)}s` }) : null);
  }

  async function refresh() {
    const [stats, window, dlqStats, dlqWindow] = await Promise.all([
      api.stats(name),
      api.headWindow(name, WINDOW),
      dlq ? api.stats(dlq) : null,
      dlq ? api.deadLetters(dlq, {}, null, WINDOW) : null,
    ]);
    const claimIds = [...new Set(window.map((m) => m.claim_id).filter(Boolean))];
    const claims = await Promise.all(claimIds.map((id) => api.claim(name, id).catch(() => null)));
    claimsLeft = new Map(claimIds.map((id, i) => [id, claims[i] ? claims[i].ttl - claims[i].age : 0]));
    readAt = Date.now();

    const m = stats.messages || {};
    mainDepth.textContent = `depth = ${m.total ?? 0}`;
    legend.textContent = `free ${m.free ?? 0} · in flight ${m.claimed ?? 0} · delayed ${m.delayed ?? 0}`;
    clear(mainStrip).append(...window.map((msg) => cell(msg, { claimsLimit: maxClaims })));
    if (!window.length) mainStrip.append(h("span", { class: "empty", text: "empty" }));
    const rest = (m.total ?? 0) - window.length;
    mainMore.textContent = rest > 0 ? `+${rest} more` : "";

    if (dlq) {
      const d = dlqStats.messages || {};
      dlqDepth.textContent = `depth = ${d.total ?? 0}`;
      const cells = dlqWindow.messages;
      clear(dlqStrip).append(...cells.map((msg) => cell(msg, { inDlq: true })));
      if (!cells.length) dlqStrip.append(h("span", { class: "empty", text: "empty" }));
      const restDlq = (d.total ?? 0) - cells.length;
      dlqMore.textContent = restDlq > 0 ? `+${restDlq} more` : "";
      seen = new Set([...window, ...cells].map((x) => x.id));
    } else {
      seen = new Set(window.map((x) => x.id));
    }
    problems.replaceChildren();
  }

  function tick() {
    for (const timer of el.querySelectorAll(".timer[data-claim]")) {
      const left = claimsLeft.get(timer.dataset.claim);
      if (left !== undefined) timer.textContent = `claim ${Math.max(0, Math.ceil(left - (Date.now() - readAt) / 1000))}s`;
    }
  }

  await refresh();
  const ticking = setInterval(tick, 1000);
  // Claims that lapse and delays that end emit no event: a slow refresh catches them.
  const slow = setInterval(() => refresh().catch(show), 5000);
  function show(err) { problems.replaceChildren(errorBox(err)); }
  return {
    queues: dlq ? [name, dlq] : [name],
    refresh: () => refresh().catch(show),
    dispose: () => { clearInterval(ticking); clearInterval(slow); if (panel) panel.dispose(); },
  };
}

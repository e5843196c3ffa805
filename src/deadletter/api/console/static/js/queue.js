// Page 2: one queue as two strips, the main queue above its DLQ, cells with delivery-count
// badges and the max-claims threshold between them, updated live.

import * as api from "./api.js";
import { add, age, clear, errorBox, h, pretty, shortId, when } from "./dom.js";
import { redrivePanel } from "./redrive.js";
import { settingsCard } from "./settings.js";
import { reasonParts } from "./reasons.js";
import { distinguish, summarize } from "./summary.js";

const WINDOW = 50;   // cells drawn per strip; the rest is summarised
const TITLE_BODY = 2000;   // characters of a body in a cell's tooltip

// Every colour of the picture, each drawn with the very classes the picture uses, so the
// legend cannot drift from what it explains.
const LEGEND = [
  ["cell", "waiting: free for the next claim"],
  ["cell claimed", "claimed: held by a consumer, with the seconds left on its claim"],
  ["cell dead", "dead letter: in the DLQ, which no consumer takes from"],
  ["cell fresh-mark", "just arrived (the cell flashes once)"],
  ["badge", "times delivered (claim_count)"],
  ["badge hot", "reached maxClaimCount: the next claim moves it to the DLQ"],
  ["strip-mark quarantine", "the DLQ strip: quarantine"],
  ["cell dead patterned", "the failure pattern a dead letter belongs to (its id links to the pattern)"],
];

// One hue per pattern, the same on every page load: a cell's stripe tells patterns apart.
function patternHue(id) {
  let hash = 0;
  for (const ch of id) hash = (hash * 31 + ch.codePointAt(0)) % 360;
  return hash;
}

// Message id -> the stored pattern it belongs to (`message_ids` of each pattern).
function patternOf(patterns) {
  const of = new Map();
  for (const p of patterns) for (const id of p.message_ids || []) of.set(String(id), p);
  return of;
}

function legend() {
  return h("ul", { class: "legend", id: "legend", "aria-label": "legend" },
    LEGEND.map(([classes, text]) => h("li", {},
      h("span", { class: `swatch ${classes}`, "aria-hidden": "true", text: classes.startsWith("badge") ? "2" : "" }),
      h("span", { text }))));
}

// A bounded queue's bounds and what a send past them does (RabbitMQ's x-overflow words).
const OVERFLOW = {
  "drop-head": "the oldest leave for the DLQ (or are dropped, counted)",
  "reject-publish": "sends are refused",
  "reject-publish-dlx": "sends are refused and dead-lettered",
};

function boundText(meta) {
  const bounds = [];
  if (meta._max_messages) bounds.push(`${meta._max_messages} messages`);
  if (meta._max_bytes) bounds.push(`${meta._max_bytes} bytes`);
  if (!bounds.length) return null;
  const overflow = meta._overflow || "drop-head";
  return `bounded: at most ${bounds.join(" and ")}; past that ${OVERFLOW[overflow] || overflow} (${overflow})`;
}

function bodyTitle(body) {
  const text = pretty(body);
  return text.length > TITLE_BODY ? text.slice(0, TITLE_BODY - 1) + "…" : text;
}

export async function queuePicture(el, name, params) {
  const meta = await api.queue(name);
  const dlq = meta._dead_letter_queue || null;
  let maxClaims = meta._max_claim_count || null;
  const srcs = dlq ? [] : await api.sources(name);
  const isDlq = srcs.length > 0;

  const problems = h("div");
  const mainStrip = h("div", { class: "strip", id: "main-strip" });
  const mainDepth = h("span", { class: "depth", id: "main-depth" });
  const mainMore = h("span", { class: "more", id: "main-more" });
  const dlqStrip = h("div", { class: "strip quarantine", id: "dlq-strip" });
  const dlqDepth = h("span", { class: "depth", id: "dlq-depth" });
  const dlqMore = h("span", { class: "more", id: "dlq-more" });
  // When the DLQ's oldest dead letter expires (its stats' oldest), as `dlq list` says it.
  const dlqExpiry = h("span", { class: "muted", id: "dlq-expiry" });
  const counts = h("span", { class: "muted", id: "main-legend" });
  // What left this queue, and why (its stats' dead_letter counts): beside the strip whose
  // depth they explain.
  const left = h("span", { class: "reasons", id: "main-reasons" });
  const consumerCount = h("span", { class: "depth", id: "consumer-count" });
  const consumerList = h("div", { class: "consumer-list", id: "consumer-list" });
  const consumerNote = h("p", { class: "muted small-note", id: "consumer-note" });
  const detail = h("section", { class: "card detail", id: "cell-detail" },
    h("p", { class: "muted", text: "Point at a cell or focus it (Tab) to see its whole message here." }));
  let seen = new Set();
  let claimsLeft = new Map();   // claim id -> seconds left when last read
  let readAt = Date.now();
  let inspected = null;         // id of the message shown in the detail card
  let patterns = new Map();     // dead letter id -> its stored failure pattern

  // Redrive sits with the DLQ it moves from, its form under the picture.
  const panel = dlq && api.session.canChange
    ? redrivePanel(dlq, { defaults: { source: name }, label: "redrive DLQ", detached: true, onDone: () => refresh() })
    : null;

  add(el,
    h("p", { class: "crumbs" }, h("a", { href: "#/", text: "Queues" }), " / ", name),
    h("h1", {}, name, isDlq ? h("span", { class: "tag dlq", text: "DLQ" }) : null),
    problems,
    h("section", { class: "picture" },
      legend(),
      h("div", { class: "lane" },
        h("div", { class: "lane-head" },
          h("strong", { text: isDlq ? "DEAD-LETTER QUEUE" : "MAIN QUEUE" }), " ", mainDepth, " ", counts,
          " ", left,
          boundText(meta) ? h("span", { class: "muted", id: "bound", text: " · " + boundText(meta) }) : null),
        h("div", { class: "row main-row" },
          h("span", { class: "end-label", text: "head →" }), mainStrip, mainMore,
          h("aside", { class: "consumers", id: "consumers", "aria-label": "consumers" },
            h("div", { class: "lane-head", title: "one row per claim: the API names claims, not the client that made them" },
              h("strong", { text: "→ CONSUMERS" }), " ", consumerCount),
            consumerList, consumerNote))),
      dlq ? h("div", { class: "threshold", id: "threshold" },
        h("span", { class: "arrow", "aria-hidden": "true", text: "↓" }),
        h("span", { id: "threshold-count", text: `maxClaimCount = ${maxClaims}` }),
        h("span", { class: "muted", text: " — the next claim after this many deliveries moves the message down" }))
        : null,
      dlq ? h("div", { class: "lane" },
        h("div", { class: "lane-head" },
          h("strong", { text: "DLQ" }), " ",
          h("a", { href: `#/dlq/${encodeURIComponent(dlq)}`, text: dlq }), " ",
          h("span", { class: "muted", text: "quarantine — no workers attached" }), " ", dlqDepth,
          " ", dlqExpiry, panel ? [" ", panel.button] : null),
        h("div", { class: "row" }, dlqStrip, dlqMore))
        : null,
      !dlq && !isDlq ? h("p", { class: "muted", text: "No dead-letter policy: messages are never moved." }) : null),
    panel ? panel.element : null,
    detail,
    settingsCard(name, meta, (fresh) => {
      maxClaims = fresh._max_claim_count || null;
      const shown = el.querySelector("#threshold-count");
      if (shown) shown.textContent = `maxClaimCount = ${maxClaims}`;
      refresh().catch(show);
    }),
    isDlq ? h("p", {}, h("a", { href: `#/dlq/${encodeURIComponent(name)}`, text: "Browse these dead letters" }),
      " · sources: ", srcs.map((s) => s.name).join(", ")) : null);


  function secondsLeft(claimId) {
    const left = claimsLeft.get(claimId);
    return left === undefined ? null : Math.max(0, Math.ceil(left - (Date.now() - readAt) / 1000));
  }

  function timerText(timer) {
    const left = secondsLeft(timer.dataset.claim);
    if (timer.classList.contains("left")) return left === null ? "" : `${left}s left`;
    return left === null ? "claimed" : `claim ${left}s`;
  }

  function timer(claimId, cls) {
    const t = h("span", { class: cls, "data-claim": claimId });
    t.textContent = timerText(t);
    return t;
  }

  function inspect(m, where) {
    inspected = m.id;
    const p = m.provenance;
    const facts = [
      `${where} · delivered ${m.claim_count}× · age ${age(m.age)}`,
      m.claim_id ? `claimed (claim ${m.claim_id})` : null,
      m.visible_at ? `hidden until ${when(m.visible_at)}` : null,
      p ? `from ${p.source_queue} (${p.reason})${p.error ? ": " + p.error : ""}` : null,
      patterns.has(m.id) ? `pattern ${patterns.get(m.id).id}` : null,
    ].filter(Boolean).join(" · ");
    detail.replaceChildren(
      h("h2", {}, "Message ", h("code", { id: "cell-detail-id", text: m.id })),
      h("p", { class: "muted", text: facts }),
      h("pre", { id: "cell-detail-body", class: "body", text: pretty(m.body) }));
  }

  function cell(m, { claimsLimit, inDlq, context, pattern }) {
    const classes = ["cell"];
    if (m.claim_id) classes.push("claimed");
    if (inDlq) classes.push("dead");
    if (pattern) classes.push("patterned");
    if (!seen.has(m.id)) classes.push("fresh");
    const hot = claimsLimit && m.claim_count >= claimsLimit;
    const link = inDlq ? `#/dlq/${encodeURIComponent(dlq || name)}/messages/${encodeURIComponent(m.id)}` : null;
    const summary = summarize(m.body, context);
    const label = h(link ? "a" : "span", { class: "cell-label", href: link, text: summary });
    const where = inDlq ? `in ${dlq}` : `in ${name}`;
    const box = h("div", {
      class: classes.join(" "), "data-id": m.id, "data-claims": m.claim_count,
      // The DLQ cell's link takes the focus; a main cell takes it itself.
      tabindex: link ? null : "0",
      "data-pattern": pattern ? pattern.id : null,
      "aria-label": `message …${shortId(m.id)}: ${summary}` + (pattern ? ` (pattern ${pattern.id})` : ""),
      title: `${m.id}\nage ${age(m.age)}, delivered ${m.claim_count}×` +
        (m.provenance ? `\nfrom ${m.provenance.source_queue} (${m.provenance.reason})` : "") +
        (pattern ? `\npattern ${pattern.id}: ${pattern.template || ""}` : "") +
        `\n\n${bodyTitle(m.body)}`,
    },
    h("span", { class: hot ? "badge hot" : "badge", text: m.claim_count }),
    label,
    h("span", { class: "cell-id", text: `…${shortId(m.id)}` }),
    m.claim_id ? timer(m.claim_id, "timer") : null,
    pattern ? h("a", {
      class: "cell-pattern", title: `pattern ${pattern.id}: ${pattern.template || ""}`,
      href: `#/dlq/${encodeURIComponent(dlq || name)}/patterns?pattern=${encodeURIComponent(pattern.id)}`,
      text: pattern.id.length > 8 ? pattern.id.slice(0, 7) + "…" : pattern.id,
    }) : null);
    if (pattern) box.style.setProperty("--pattern-hue", String(patternHue(pattern.id)));
    box.addEventListener("mouseenter", () => inspect(m, where));
    box.addEventListener("focusin", () => inspect(m, where));
    return box;
  }

  // One consumer per claim: the public API names claims (id, ttl, age, messages), not the
  // client that made them.
  function consumers(claims, claimedTotal, context) {
    const held = claims.reduce((n, c) => n + c.messages.length, 0);
    consumerCount.textContent = `${claims.length} ${claims.length === 1 ? "claim" : "claims"}`;
    clear(consumerList).append(...claims.map((c) => h("div", { class: "consumer", "data-claim": c.id },
      h("div", { class: "consumer-head" },
        h("span", { class: "claim-id", title: c.id, text: `claim …${shortId(c.id)}` }), " ",
        timer(c.id, "left"), " ",
        h("span", { class: "muted", text: `holds ${c.messages.length}` })),
      h("ul", { class: "held-list" }, c.messages.map((m) => h("li", {
        class: "held", "data-id": m.id, title: `${m.id}\n\n${bodyTitle(m.body)}`,
      }, h("span", { class: "cell-id", text: `…${shortId(m.id)}` }), " ", summarize(m.body, context)))))));
    if (!claims.length) consumerList.append(h("p", { class: "empty", text: "no message is claimed" }));
    // The panel is as tall as what it holds: the note only when it has something to add.
    const beyond = claimedTotal - held;
    consumerNote.textContent = beyond > 0 ? `+${beyond} claimed by claims that hold none of the first ${WINDOW} cells` : "";
    consumerNote.hidden = beyond <= 0;
  }

  function focusedCell() {
    const active = document.activeElement;
    const box = active && active.closest ? active.closest(".cell") : null;
    return box && el.contains(box) ? box.dataset.id : null;
  }

  async function refresh() {
    const [stats, window, dlqStats, dlqWindow, stored] = await Promise.all([
      api.stats(name),
      api.headWindow(name, WINDOW),
      dlq ? api.stats(dlq) : null,
      dlq ? api.deadLetters(dlq, {}, null, WINDOW) : null,
      dlq ? api.patterns(dlq).catch(() => []) : [],
    ]);
    patterns = patternOf(stored);
    const claimIds = [...new Set(window.map((m) => m.claim_id).filter(Boolean))];
    const read = await Promise.all(claimIds.map((id) => api.claim(name, id).catch(() => null)));
    // A claim that ended between the two reads is simply not shown.
    const claims = claimIds.map((id, i) => (read[i] ? { id, ...read[i] } : null)).filter(Boolean);
    claimsLeft = new Map(claims.map((c) => [c.id, c.ttl - c.age]));
    readAt = Date.now();
    const focused = focusedCell();
    const cells = dlq ? dlqWindow.messages : [];

    const m = stats.messages || {};
    mainDepth.textContent = `depth = ${m.total ?? 0}`;
    counts.textContent = `free ${m.free ?? 0} · in flight ${m.claimed ?? 0} · delayed ${m.delayed ?? 0}`;
    const gone = reasonParts(stats.dead_letter || {});
    left.replaceChildren(...(gone.length ? ["· left: ", ...gone] : []));
    const mainContext = distinguish(window.map((x) => x.body));
    clear(mainStrip).append(...window.map((msg) => cell(msg, { claimsLimit: maxClaims, context: mainContext })));
    if (!window.length) mainStrip.append(h("span", { class: "empty", text: "empty" }));
    const rest = (m.total ?? 0) - window.length;
    mainMore.textContent = rest > 0 ? `+${rest} more` : "";
    consumers(claims, m.claimed ?? 0, mainContext);

    if (dlq) {
      const d = dlqStats.messages || {};
      dlqDepth.textContent = `depth = ${d.total ?? 0}`;
      dlqExpiry.textContent = d.oldest?.expires ? `· oldest expires ${d.oldest.expires}` : "";
      const context = distinguish(cells.map((x) => x.body));
      clear(dlqStrip).append(...cells.map((msg) => cell(msg, { inDlq: true, context, pattern: patterns.get(msg.id) })));
      if (!cells.length) dlqStrip.append(h("span", { class: "empty", text: "empty" }));
      const restDlq = (d.total ?? 0) - cells.length;
      dlqMore.textContent = restDlq > 0 ? `+${restDlq} more` : "";
    }
    seen = new Set([...window, ...cells].map((x) => x.id));
    const shown = window.find((x) => x.id === inspected);
    const shownDead = cells.find((x) => x.id === inspected);
    if (shown) inspect(shown, `in ${name}`);
    else if (shownDead) inspect(shownDead, `in ${dlq}`);
    // Redrawing must not take the keyboard focus away from the cell being read.
    if (focused) {
      const again = el.querySelector(`.cell[data-id="${CSS.escape(focused)}"]`);
      const target = again && (again.querySelector("a") || again);
      if (target) target.focus({ preventScroll: true });
    }
    problems.replaceChildren();
  }

  function tick() {
    for (const t of el.querySelectorAll("[data-claim].timer, [data-claim].left")) t.textContent = timerText(t);
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

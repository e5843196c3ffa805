// Page 1: the project's queues, a page at a time, with their counts and dead-letter policy.

import * as api from "./api.js";
import { add, clear, errorBox, h } from "./dom.js";
import { reasonParts } from "./reasons.js";

const ROWS = 20;             // rows shown per page
const SCAN_PAGES = 25;       // queue-list pages read at most while looking for filter matches

// The reasons cell of a queue's row: "—" when nothing left it.
function reasons(dl) {
  const parts = reasonParts(dl);
  return parts.length ? parts : "—";
}

export async function overview(el, params) {
  const filter = params.get("filter") || "";
  let markers = [null];            // the marker each page starts after; back pops one
  const input = h("input", { id: "queue-filter", type: "search", placeholder: "filter by name", value: filter });
  const body = h("tbody", { id: "queues" });
  const note = h("p", { class: "muted", id: "overview-note" });
  const prev = h("button", { type: "button", text: "← Previous" });
  const next = h("button", { type: "button", text: "Next →" });
  const problems = h("div");
  add(el, 
    h("h1", { text: "Queues" }),
    h("div", { class: "toolbar" }, input),
    problems,
    h("div", { class: "table-wrap" }, h("table", { class: "grid" },
      h("thead", {}, h("tr", {}, ["queue", "depth", "free", "in flight", "delayed",
        "dead-lettered by reason", "DLQ", "max claims"].map((t) => h("th", { text: t })))),
      body)),
    h("div", { class: "pager" }, prev, next, note));

  input.addEventListener("change", () => {
    location.hash = input.value ? `#/?filter=${encodeURIComponent(input.value)}` : "#/";
  });

  let nextMarker = null;
  let rowsShown = [];

  async function load() {
    const start = markers[markers.length - 1];
    const found = [];
    let marker = start;
    let scanned = 0;
    let more = null;
    for (let i = 0; i < SCAN_PAGES && found.length < ROWS; i++) {
      const page = await api.queuesPage(marker);
      scanned += page.queues.length;
      for (const queue of page.queues) {
        if (found.length === ROWS) { more = found[found.length - 1].name; break; }
        if (!filter || queue.name.includes(filter)) found.push(queue);
      }
      if (more) break;
      marker = page.next;
      more = page.next;
      if (!page.next) break;
    }
    nextMarker = more;
    rowsShown = await Promise.all(found.map(async (queue) => {
      const meta = queue.metadata || {};
      const [s, srcs] = await Promise.all([
        api.stats(queue.name),
        meta._dead_letter_queue ? Promise.resolve([]) : api.sources(queue.name),
      ]);
      return { queue, meta, stats: s, isDlq: srcs.length > 0 };
    }));
    note.textContent = filter
      ? `${found.length} matching “${filter}” among ${scanned} queues read`
      : `${found.length} queues`;
    draw();
  }

  function draw() {
    clear(body);
    for (const { queue, meta, stats, isDlq } of rowsShown) {
      const m = stats.messages || {};
      const dl = stats.dead_letter || {};
      const name = encodeURIComponent(queue.name);
      const held = Object.values(dl.by_source || {}).reduce((a, b) => a + b, 0);
      body.append(h("tr", { "data-queue": queue.name, class: isDlq ? "dlq-row" : "" },
        h("td", {},
          h("a", { href: `#/queues/${name}`, text: queue.name }),
          isDlq ? h("span", { class: "tag dlq", text: "DLQ" }) : null,
          isDlq ? h("a", { class: "small", href: `#/dlq/${name}`, text: ` browse ${held}` }) : null,
          isDlq ? h("a", { class: "small", href: `#/dlq/${name}/patterns`, text: " patterns" }) : null),
        h("td", { class: "num depth", text: m.total ?? 0 }),
        h("td", { class: "num", text: m.free ?? 0 }),
        h("td", { class: "num", text: m.claimed ?? 0 }),
        h("td", { class: "num", text: m.delayed ?? 0 }),
        h("td", { class: "reasons" }, reasons(dl)),
        h("td", {}, meta._dead_letter_queue
          ? h("a", { href: `#/dlq/${encodeURIComponent(meta._dead_letter_queue)}`, text: meta._dead_letter_queue })
          : "—"),
        h("td", { class: "num", text: meta._max_claim_count ?? "—" })));
    }
    if (!rowsShown.length) body.append(h("tr", {}, h("td", { colspan: 8, class: "muted", text: "No queues." })));
    prev.disabled = markers.length === 1;
    next.disabled = !nextMarker;
  }

  prev.addEventListener("click", () => { markers.pop(); load().catch(show); });
  next.addEventListener("click", () => { markers.push(nextMarker); load().catch(show); });

  function show(err) {
    problems.replaceChildren(errorBox(err));
  }

  await load();
  const timer = setInterval(() => load().catch(show), 10000);
  return {
    queues: [],
    refresh: () => load().then(() => problems.replaceChildren()).catch(show),
    dispose: () => clearInterval(timer),
  };
}

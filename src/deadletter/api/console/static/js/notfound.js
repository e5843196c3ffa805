// The page for a link to a queue that does not exist: what is missing, where it was looked
// for, the nearest name the project has (as the CLI's "did you mean"), and the way back.

import * as api from "./api.js";
import { h } from "./dom.js";

// The CLI's cut-off (difflib's 0.6): a name at most this far from the one asked for.
const NEAR = 0.6;

function distance(a, b) {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

export function nearest(name, names) {
  let best = null;
  let score = NEAR;
  for (const candidate of names) {
    const s = 1 - distance(name, candidate) / Math.max(name.length, candidate.length, 1);
    if (s >= score && candidate !== name) { best = candidate; score = s; }
  }
  return best;
}

// `parts`: the route's path, its queue name at index 1; the suggestion keeps the rest.
export async function notFound(el, parts) {
  const name = parts[1];
  const where = api.session.project ? `project ${api.session.project}` : "the server's default project";
  const names = await api.queueNames().catch(() => []);
  const near = nearest(name, names);
  const route = (queue) => "#/" + parts.map((p, i) => encodeURIComponent(i === 1 ? queue : p)).join("/");
  el.append(h("section", { id: "not-found", class: "card not-found", role: "alert" },
    h("h1", { text: `Queue ${name} not found` }),
    h("p", { text: `There is no queue named “${name}” in ${where}: it was never made, was deleted, or the link is mistyped.` }),
    near ? h("p", { id: "did-you-mean" }, "Did you mean ", h("a", { href: route(near), text: near }), "?") : null,
    h("p", {}, h("a", { href: "#/", text: "← All queues" }))));
}

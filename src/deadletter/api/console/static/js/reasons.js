// What left a queue, and why, from its stats' `dead_letter` counts: shown on the overview's
// rows and on a queue's picture, the same words in both.

import { h } from "./dom.js";

function byReason(counts) {
  return Object.entries(counts || {}).filter(([, n]) => n > 0).map(([r, n]) => `${r} ${n}`).join(" · ");
}

// What left the queue for its DLQ; what a full (reject-publish) DLQ refused: those messages
// are still in this queue, which is why its depth does not fall; and what left it for no DLQ
// (dropped past its limit, not eligible; expired with no dead-lettering), as `queue show`
// says it: nothing leaves unseen. An empty list when nothing did.
export function reasonParts(dl) {
  const moved = byReason(dl.dead_lettered);
  const kept = byReason(dl.dlq_full);
  const dropped = byReason(dl.dropped);
  const parts = [];
  if (moved) parts.push(moved);
  if (kept) parts.push(h("span", {
    class: "dlq-full", title: "due for the DLQ, refused because it is full: still in this queue",
    text: `kept, DLQ full: ${kept}`,
  }));
  if (dropped) parts.push(h("span", {
    class: "dropped", title: "past its limit and not eligible for the DLQ: deleted",
    text: `dropped: ${dropped}`,
  }));
  if (dl.expired_dropped > 0) parts.push(h("span", {
    class: "dropped", title: "expired in this queue without being dead-lettered: deleted",
    text: `expired and dropped ${dl.expired_dropped}`,
  }));
  if (dl.dead_letters_expired > 0) parts.push(h("span", {
    class: "dropped", title: "dead letters that expired in this DLQ: deleted, counted and logged",
    text: `dead letters expired ${dl.dead_letters_expired}`,
  }));
  return parts.flatMap((part, i) => (i ? [" · ", part] : [part]));
}

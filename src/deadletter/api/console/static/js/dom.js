// DOM building without innerHTML: message bodies and error texts are untrusted.

// The characters the command line shows escaped (deadletter/terminal.py, NOT_SHOWN; a test
// holds the two the same): the C0 controls but the line break, DEL, the C1 controls, and the
// marks that reorder or hide text. On a page the controls are unseen, and a sender's U+202E in
// a body or an error turns what the operator reads around ("Trojan Source"); each is shown as
// its \uXXXX escape instead, in every text and tooltip built here.
const NOT_SHOWN = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function shown(text) {
  return String(text).replace(NOT_SHOWN, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = shown(value);
    else if (key === "title") el.title = shown(value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "value") el.value = value;
    else if (key === "checked") el.checked = Boolean(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(shown(child)));
  }
}

// Element.append writes null as the text "null"; this skips absent parts instead.
export function add(el, ...children) {
  append(el, children);
  return el;
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  for (const child of children) el.append(child);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export function age(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

export function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

export function shortId(id) {
  return id.length > 8 ? id.slice(-6) : id;
}

// Message, claim and task ids are UUIDv7: their start is the time they share with their
// neighbours, their end what tells them apart.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ID_CHARS = 14;   // a pattern id (p- and 12 hex digits) is shown whole

// An id as every list shows it: on one line, a UUID as `…` and its last six characters
// (the cells' own short form), any other id past 14 characters cut at its end; the whole id
// in the tooltip, and in the clipboard when the short text is copied.
export function idText(id) {
  const s = String(id);
  if (UUID.test(s)) return `…${s.slice(-6)}`;
  return s.length > ID_CHARS ? s.slice(0, ID_CHARS - 1) + "…" : s;
}

export function idLabel(id, { href, title } = {}) {
  const full = String(id);
  const el = h(href ? "a" : "code", { class: "id", href, "data-id": full,
    title: title ? `${full}\n${title}` : full, text: idText(full) });
  el.addEventListener("copy", (event) => {
    // Only a selection within the id: one across rows copies what it shows.
    const sel = document.getSelection();
    if (!event.clipboardData || !sel || !el.contains(sel.anchorNode) || !el.contains(sel.focusNode)) return;
    event.clipboardData.setData("text/plain", full);
    event.preventDefault();
  });
  return el;
}

export function errorBox(err) {
  const title = err && err.title ? err.title : "Error";
  const description = err && err.description ? err.description : String(err && err.message || err);
  return h("div", { class: "error", role: "alert" }, h("strong", { text: title + ": " }), description);
}

// At most one `fn` running, and at most one start per `ms`; calls meanwhile fold into one
// more run afterwards. Under a steady stream of events a page refreshes a few times a second,
// never starves (as a debounce would) and never overlaps its own requests.
export function throttle(fn, ms) {
  let running = false;
  let pending = false;
  async function run() {
    running = true;
    pending = false;
    try { await fn(); } catch { /* the view shows its own errors */ }
    setTimeout(() => { running = false; if (pending) run(); }, ms);
  }
  return () => { if (running) pending = true; else run(); };
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// The page's own confirmation dialog: a native confirm() would block the event loop and the feed.
export function confirmAction(text) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = shown(text);
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

// A <datetime-local> value (local time) as ISO 8601 UTC, or "" when empty.
export function localToIso(value) {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

export function isoToLocal(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

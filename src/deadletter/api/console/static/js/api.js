// The console's only way to the server: the public native API (Zaqar v2 + dead-letter routes).

const KEYS = { project: "deadletter.project", token: "deadletter.token", role: "deadletter.role",
  keyId: "deadletter.keyId", client: "deadletter.clientId" };

export const PAGE = 20;          // the largest page the queue and message lists give
export const BROWSE_PAGE = 50;   // dead letters per page in the browser

export class ApiError extends Error {
  constructor(status, title, description) {
    super(`${status} ${title}: ${description}`);
    this.status = status;
    this.title = title;
    this.description = description;
  }
}

function uuid4() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const session = {
  get project() { return sessionStorage.getItem(KEYS.project) || ""; },
  set project(value) { setOrRemove(KEYS.project, value); },
  get token() { return sessionStorage.getItem(KEYS.token) || ""; },
  get role() { return sessionStorage.getItem(KEYS.role) || ""; },
  get keyId() { return sessionStorage.getItem(KEYS.keyId) || ""; },
  get clientId() {
    let id = sessionStorage.getItem(KEYS.client);
    if (!id) { id = uuid4(); sessionStorage.setItem(KEYS.client, id); }
    return id;
  },
  signIn(token, role, keyId) {
    setOrRemove(KEYS.token, token);
    setOrRemove(KEYS.role, role);
    setOrRemove(KEYS.keyId, keyId);
  },
  signOut() { this.signIn("", "", ""); },
  // A reader may look but not redrive, purge or delete.
  get canChange() { return this.role !== "reader"; },
};

function setOrRemove(key, value) {
  if (value) sessionStorage.setItem(key, value); else sessionStorage.removeItem(key);
}

let unauthorized = () => {};
export function onUnauthorized(handler) { unauthorized = handler; }

export function headers(extra = {}) {
  const out = { "Client-ID": session.clientId, "X-Deadletter-Format": "extended", Accept: "application/json" };
  if (session.project) out["X-Project-ID"] = session.project;
  if (session.token) out["X-Auth-Token"] = session.token;
  return { ...out, ...extra };
}

export function url(path, query = {}) {
  const u = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === "") continue;
    for (const v of Array.isArray(value) ? value : [value]) u.searchParams.append(key, String(v));
  }
  return u;
}

export async function call(method, path, { query = {}, body, extraHeaders = {}, signingIn = false, contentType = "application/json" } = {}) {
  const init = { method, headers: headers(extraHeaders), cache: "no-store" };
  if (body !== undefined) {
    init.headers["Content-Type"] = contentType;
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url(path, query), init);
  if (response.status === 401 && !signingIn) {
    session.signOut();
    unauthorized();
  }
  const text = await response.text();
  let doc = null;
  if (text) {
    try { doc = JSON.parse(text); } catch { doc = text; }
  }
  if (!response.ok) {
    const title = (doc && doc.title) || response.statusText || "Error";
    const description = (doc && (doc.description || doc.message)) || (typeof doc === "string" ? doc : "");
    throw new ApiError(response.status, title, description);
  }
  return { status: response.status, doc, response };
}

const get = async (path, query) => (await call("GET", path, { query })).doc;
const q = (name) => `/v2/queues/${encodeURIComponent(name)}`;

function nextMarker(doc) {
  const next = (doc.links || []).find((l) => l.rel === "next");
  return next ? new URL(next.href, location.origin).searchParams.get("marker") : null;
}

// One page of queues (with metadata) after `marker`; `next` is null on the last page.
export async function queuesPage(marker, limit = PAGE) {
  const doc = await get("/v2/queues", { marker, limit, detailed: true });
  const queues = doc.queues || [];
  return { queues, next: queues.length === limit ? nextMarker(doc) : null };
}

// The answer for a queue that does not exist (as opposed to a message or a task).
export function isQueueMissing(err) {
  return err instanceof ApiError && err.status === 404 && err.title === "Queue not found";
}

// The project's queue names, up to `pages` pages: what a "did you mean" chooses among.
export async function queueNames(pages = 5) {
  const names = [];
  let marker = null;
  for (let i = 0; i < pages; i++) {
    const page = await queuesPage(marker);
    names.push(...page.queues.map((x) => x.name));
    marker = page.next;
    if (!marker) break;
  }
  return names;
}

export const queue = (name) => get(q(name));
export const stats = (name) => get(q(name) + "/stats");
// Zaqar's metadata change: a JSON patch of `/metadata/<key>` operations.
export const patchQueue = (name, operations) => call("PATCH", q(name), {
  body: operations, contentType: "application/openstack-messaging-v2.0-json-patch",
});
export const sources = async (dlq) => (await get(q(dlq) + "/dead_letter_sources")).sources || [];
export const claim = (name, claimId) => get(`${q(name)}/claims/${encodeURIComponent(claimId)}`);
export const message = (name, id) => get(`${q(name)}/messages/${encodeURIComponent(id)}`);

// The first `count` messages of a queue from its head, claimed and delayed ones included,
// fetched in pages of PAGE: never more rows than the window shows.
export async function headWindow(name, count) {
  const out = [];
  let marker = null;
  while (out.length < count) {
    const limit = Math.min(PAGE, count - out.length);
    const doc = await get(q(name) + "/messages", {
      marker, limit, echo: true, include_claimed: true, include_delayed: true });
    const page = doc.messages || [];
    out.push(...page);
    marker = nextMarker(doc);
    if (page.length < limit || !marker) break;
  }
  return out;
}

// Messages by id (a pattern's), PAGE per request; ids no longer there are simply absent.
export async function messagesByIds(name, ids) {
  const out = [];
  for (let i = 0; i < ids.length; i += PAGE) {
    try {
      const doc = await get(q(name) + "/messages", { ids: ids.slice(i, i + PAGE).join(",") });
      out.push(...(doc.messages || []));
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
    }
  }
  return out;
}

// One page of a DLQ's dead letters (oldest first) that `where` selects: the filter language's
// names and values (filterbar.js), as the count and the purge of a selection take them.
export async function deadLetters(dlq, where, marker, limit = BROWSE_PAGE) {
  const doc = await get(q(dlq) + "/dead_letters", { ...where, marker, limit });
  return { messages: doc.messages || [], next: nextMarker(doc) };
}
export const countDeadLetters = async (dlq, where) => (await get(q(dlq) + "/dead_letters/count", where)).count;
export const purgeDeadLetters = async (dlq, where) => (await call("DELETE", q(dlq) + "/dead_letters", { query: where })).doc.purged;
// A dead letter's edit (a merge patch, or with `json` a JSON Patch), then with `redrive` its redrive.
export const editDeadLetter = async (dlq, id, patch, { json = false, redrive = false } = {}) => (await call(
  "PATCH", `${q(dlq)}/dead_letters/${encodeURIComponent(id)}`, { query: { redrive: redrive ? "true" : "" }, body: patch,
    contentType: json ? "application/json-patch+json" : "application/merge-patch+json" })).doc;

// The DLQ's saved filters (by name), one saved under `name` (replacing one), one deleted.
export const savedFilters = async (dlq) => (await get(q(dlq) + "/dead_letters/filters")).filters || [];
const filterPath = (dlq, name) => `${q(dlq)}/dead_letters/filters/${encodeURIComponent(name)}`;
export const saveFilter = async (dlq, name, where) => (await call("PUT", filterPath(dlq, name), { body: where })).doc;
export const deleteFilter = (dlq, name) => call("DELETE", filterPath(dlq, name));
export const patterns = async (dlq) => (await get(q(dlq) + "/patterns")).patterns || [];
export const redrives = async (dlq) => (await get(q(dlq) + "/redrives")).redrives || [];
export const redrive = (dlq, id) => get(`${q(dlq)}/redrives/${encodeURIComponent(id)}`);
export const startRedrive = async (dlq, body) => (await call("POST", q(dlq) + "/redrives", { body })).doc;
export const cancelRedrive = (dlq, id) => call("DELETE", `${q(dlq)}/redrives/${encodeURIComponent(id)}`);
export const resumeRedrive = async (dlq, id) => (await call("POST", `${q(dlq)}/redrives/${encodeURIComponent(id)}/resume`)).doc;
// The console asks before it purges: that confirmation is the force a DLQ in use wants.
export const purge = (name) => call("POST", q(name) + "/purge", {
  query: { force: true }, body: { resource_types: ["messages"] } });

export async function deleteMessages(name, ids) {
  for (let i = 0; i < ids.length; i += PAGE) {
    await call("DELETE", q(name) + "/messages", { query: { ids: ids.slice(i, i + PAGE).join(",") } });
  }
}

// Exchanges a key id and secret for a token. The answer's shape is read loosely: the token from
// `token` (or the X-Subject-Token header), the role and project when the server says them.
export async function signIn(keyId, secret) {
  const { doc, response } = await call("POST", "/v2/auth/tokens", {
    body: { key_id: keyId, secret }, signingIn: true });
  const body = doc && typeof doc === "object" ? doc : {};
  const inner = body.token && typeof body.token === "object" ? body.token : body;
  const token = (typeof body.token === "string" && body.token) || inner.id || inner.token
    || response.headers.get("X-Subject-Token") || "";
  if (!token) throw new ApiError(response.status, "Sign-in", "The server answered without a token.");
  return { token, role: inner.role || body.role || "", project: inner.project || body.project || "" };
}

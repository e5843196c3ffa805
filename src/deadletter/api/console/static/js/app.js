// The console's shell: routes (#/...), the project and sign-in state, and the live feed.

import { isQueueMissing, onUnauthorized, session } from "./api.js";
import { clear, errorBox, throttle } from "./dom.js";
import { follow } from "./live.js";
import { overview } from "./overview.js";
import { queuePicture } from "./queue.js";
import { deadLetterBrowser, deadLetterMessage } from "./deadletters.js";
import { patternsPage } from "./patterns.js";
import { archivePage } from "./groups.js";
import { notFound } from "./notfound.js";
import { signInForm } from "./signin.js";

const view = document.getElementById("view");
const live = document.getElementById("live");
let current = null;   // { refresh, dispose, queues }
let unfollow = null;

function parseRoute() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, search = ""] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(search) };
}

function pick({ parts }) {
  if (parts[0] === "queues" && parts[1]) return (el, p) => queuePicture(el, parts[1], p);
  if (parts[0] === "dlq" && parts[1] && parts[2] === "messages" && parts[3]) {
    return (el) => deadLetterMessage(el, parts[1], parts[3]);
  }
  if (parts[0] === "dlq" && parts[1] && parts[2] === "patterns") return (el) => patternsPage(el, parts[1]);
  if (parts[0] === "dlq" && parts[1] && parts[2] === "archive") return (el) => archivePage(el, parts[1]);
  if (parts[0] === "dlq" && parts[1]) return (el, p) => deadLetterBrowser(el, parts[1], p);
  return (el, p) => overview(el, p);
}

function setLive(status) {
  live.textContent = status;
  live.dataset.status = status;
}

let generation = 0;

export async function render() {
  if (current && current.dispose) current.dispose();
  if (unfollow) unfollow();
  current = null;
  unfollow = null;
  const mine = ++generation;
  const route = parseRoute();
  // Each render draws in its own box: one overtaken by a newer route (a quick second click)
  // goes on drawing in a box no longer on the page.
  const box = document.createElement("div");
  box.className = "page";
  clear(view).append(box);
  let shown;
  try {
    shown = (await pick(route)(box, route.params)) || {};
  } catch (err) {
    if (mine !== generation || (err && err.status === 401)) return;
    // A page that cannot open says why in place of itself, and follows no feed.
    clear(box);
    if (isQueueMissing(err) && route.parts[1]) await notFound(box, route.parts);
    else box.append(errorBox(err));
    if (mine !== generation) return;
    setLive("not live");
    showWho();
    return;
  }
  if (mine !== generation) {
    if (shown.dispose) shown.dispose();
    return;
  }
  current = shown;
  if (current.refresh) {
    const refresh = throttle(() => (current === shown ? shown.refresh() : undefined), 250);
    unfollow = follow(current.queues || [], (event) => {
      if (event.type !== "poll") live.dataset.events = String(Number(live.dataset.events || 0) + 1);
      if (current && current.onEvent) current.onEvent(event);
      refresh();
    }, setLive);
  } else {
    // A page without a refresh does not follow the feed; the badge must not say it does.
    setLive("not live");
  }
  showWho();
}

function showWho() {
  const who = document.getElementById("who");
  const out = document.getElementById("sign-out");
  who.textContent = session.token ? `${session.keyId || "signed in"}${session.role ? " · " + session.role : ""}` : "";
  out.hidden = !session.token;
}

onUnauthorized(() => {
  if (current && current.dispose) current.dispose();
  if (unfollow) unfollow();
  current = null;
  unfollow = null;
  setLive("signed out");
  showWho();
  signInForm(clear(view), () => render());
});

const project = document.getElementById("project");
project.value = session.project;
project.addEventListener("change", () => {
  session.project = project.value.trim();
  render();
});
document.getElementById("sign-out").addEventListener("click", () => {
  session.signOut();
  render();
});
window.addEventListener("hashchange", render);
render();

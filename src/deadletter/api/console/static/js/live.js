// The live feed: server-sent events read with fetch (so the token travels as a header, which
// EventSource cannot send); when the stream fails the page polls instead, then tries again.

import { headers, url } from "./api.js";

const POLL_MS = 2000;
const POLLS_BEFORE_RETRY = 5;

export function follow(queues, onEvent, onStatus) {
  let stopped = false;
  let controller = null;
  // Once stopped, the next page owns the badge.
  const status = (s) => { if (!stopped) onStatus(s); };

  async function stream() {
    controller = new AbortController();
    const response = await fetch(url("/console/events", { queue: queues }), {
      headers: headers({ Accept: "text/event-stream" }), signal: controller.signal, cache: "no-store" });
    if (!response.ok || !response.body) throw new Error(`live feed: ${response.status}`);
    status("live");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        dispatch(block);
      }
    }
  }

  function dispatch(block) {
    let type = "message";
    let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) type = line.slice(6).trim();
      else if (line.startsWith("data:")) data += line.slice(5).trim();
    }
    if (type === "hello" || !data) return;
    let event = {};
    try { event = JSON.parse(data); } catch { return; }
    onEvent({ ...event, type });
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  (async () => {
    while (!stopped) {
      try {
        await stream();  // ends when the server closes the stream; reconnect at once
      } catch {
        if (stopped) return;
        status("polling");
        for (let i = 0; i < POLLS_BEFORE_RETRY && !stopped; i++) {
          onEvent({ type: "poll" });
          await sleep(POLL_MS);
        }
      }
    }
  })();

  return () => {
    stopped = true;
    if (controller) controller.abort();
  };
}

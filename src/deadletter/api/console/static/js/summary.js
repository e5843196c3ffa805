// Short labels for message bodies that tell the messages of one window apart: the start of a
// body is often the same for every message ({"type":"order.created",...), so a label shows
// first what differs between the bodies shown together.

const MAX = 60;   // characters kept; the cell cuts the rest with an ellipsis

function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function scalar(value) {
  if (value === null) return "null";
  if (typeof value === "object") return Array.isArray(value) ? `[${value.length}]` : "{…}";
  return String(value);
}

function commonPrefix(texts) {
  if (!texts.length) return 0;
  let n = 0;
  const first = texts[0];
  while (n < first.length && texts.every((t) => t[n] === first[n])) n++;
  return n;
}

// The keys that tell the bodies of one window apart (ranked), and the prefix their strings share.
export function distinguish(bodies) {
  const objects = bodies.filter(isPlainObject);
  const seen = new Map();   // key -> set of values
  for (const body of objects) {
    for (const [k, v] of Object.entries(body)) {
      if (!seen.has(k)) seen.set(k, new Set());
      seen.get(k).add(JSON.stringify(v));
    }
  }
  // A key some bodies lack also tells them apart; the key with most values leads.
  const varying = new Map([...seen]
    .filter(([k, values]) => values.size > 1 || objects.some((b) => !(k in b)))
    .sort((a, b) => b[1].size - a[1].size)
    .map(([k], rank) => [k, rank]));
  const strings = bodies.filter((b) => typeof b === "string");
  const prefix = strings.length > 1 ? commonPrefix(strings) : 0;
  return { varying, prefix };
}

// `key=value` pairs, the keys that vary in the window first (most values first); a string
// without the prefix the window's strings share.
export function summarize(body, context = { varying: new Map(), prefix: 0 }) {
  let text;
  if (isPlainObject(body)) {
    const entries = Object.entries(body);
    const first = entries.filter(([k]) => context.varying.has(k))
      .sort(([a], [b]) => context.varying.get(a) - context.varying.get(b));
    const rest = entries.filter(([k]) => !context.varying.has(k));
    text = [...first, ...rest].map(([k, v]) => `${k}=${scalar(v)}`).join(" ") || "{}";
  } else if (typeof body === "string") {
    // Keep a few shared characters so the label still reads as a cut, not a new word.
    text = context.prefix > 6 ? "…" + body.slice(context.prefix - 3) : body;
  } else {
    text = JSON.stringify(body);
  }
  return text.length > MAX ? text.slice(0, MAX - 1) + "…" : text;
}

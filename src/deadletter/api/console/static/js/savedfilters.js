// The DLQ's saved filters on its filter bar (filterbar.js): the fields saved under a name
// ("Save as…", PUT .../dead_letters/filters/NAME), and the chosen one deleted. The bar's
// "saved filter" field lists them to apply.

import * as api from "./api.js";
import { confirmAction, h } from "./dom.js";

// `held()`: the filter the bar's fields hold; `chosen()`: the saved filter the bar names.
export function savedFilters(dlq, { saved, held, chosen, onApply }) {
  if (!api.session.canChange) return { element: null };
  const note = h("span", { id: "saved-note", class: "muted", role: "status" });
  const say = (text) => { note.textContent = text; };

  async function saveAs() {
    const where = held();
    if (where.filter) { say("A saved filter cannot name another: choose none as the saved filter, then save the fields."); return; }
    if (!Object.keys(where).length) { say("Fill some fields first: a saved filter selects something."); return; }
    const name = (window.prompt("Save the filter's fields as (letters, digits, _ and -):", "") || "").trim();
    if (!name) return;
    if (saved.some((s) => s.name === name) && !(await confirmAction(`Replace the saved filter ${name} of ${dlq}?`))) return;
    try {
      await api.saveFilter(dlq, name, where);
      onApply({ filter: name });
    } catch (err) { say(err.description || String(err)); }
  }

  async function remove() {
    const name = chosen();
    if (!name) { say("Choose a saved filter to delete."); return; }
    if (!(await confirmAction(`Delete the saved filter ${name} of ${dlq}? The dead letters it selects stay.`))) return;
    try {
      await api.deleteFilter(dlq, name);
      const { filter, ...rest } = held();
      onApply(rest);
    } catch (err) { say(err.description || String(err)); }
  }

  const element = h("span", { class: "saved-filters" },
    h("button", { type: "button", id: "filter-save-as", text: "Save as…", onclick: saveAs }),
    h("button", { type: "button", id: "filter-saved-delete", text: "Delete saved", onclick: remove }),
    note);
  return { element };
}

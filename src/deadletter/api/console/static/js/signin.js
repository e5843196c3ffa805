// The sign-in form shown when the server answers 401: key id + secret for a token.

import { session, signIn } from "./api.js";
import { add, errorBox, h } from "./dom.js";

export function signInForm(el, done) {
  const keyId = h("input", { id: "key-id", name: "key_id", autocomplete: "username", required: true });
  const secret = h("input", { id: "secret", name: "secret", type: "password", autocomplete: "current-password", required: true });
  const status = h("div");
  const form = h("form", { id: "sign-in", class: "card narrow" },
    h("h1", { text: "Sign in" }),
    h("p", { class: "muted", text: "The server asks for a credential. The token it gives is kept for this tab only." }),
    h("label", {}, "Key id", keyId),
    h("label", {}, "Secret", secret),
    h("button", { type: "submit", class: "primary", text: "Sign in" }),
    status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.replaceChildren();
    try {
      const got = await signIn(keyId.value.trim(), secret.value);
      session.signIn(got.token, got.role, keyId.value.trim());
      if (got.project && !session.project) {
        session.project = got.project;
        document.getElementById("project").value = got.project;
      }
      secret.value = "";
      done();
    } catch (err) {
      status.append(errorBox(err));
    }
  });
  add(el, form);
  keyId.focus();
}

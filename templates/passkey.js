// The passkey buttons of Tessera's sign-in and account pages (served same-origin: the pages' CSP
// allows no inline script). A button `data-passkey="authenticate|register"` inside a form fetches
// the ceremony's options from `data-options` (posting the form's own fields: CSRF token, pending
// sign-in), runs the ceremony through @simplewebauthn/browser, puts `challenge_id` and the
// credential JSON into the form, and submits it: the server verifies and answers with a page.
// A button with `data-conditional` also offers the passkeys in the browser's autofill of the
// username field (WebAuthn conditional mediation, `autocomplete="username webauthn"`) where the
// browser supports it; the button stays as the fallback. The status texts come from the page, in
// its language (`data-waiting`, `data-checking`, `data-cancelled`, `data-failed`).
(() => {
  const browser = window.SimpleWebAuthnBrowser;
  if (!browser || !browser.browserSupportsWebAuthn()) return;
  for (const button of document.querySelectorAll("button[data-passkey]")) {
    const form = button.form;
    const status = form.querySelector("[role=status]");
    const say = (name) => {
      if (status) status.textContent = (status.dataset && status.dataset[name]) || "";
    };
    const options = async () => {
      const answer = await fetch(button.dataset.options, {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        credentials: "same-origin",
      });
      if (!answer.ok) throw new Error("options");
      return answer.json();
    };
    const submit = (challengeId, credential) => {
      form.elements.challenge_id.value = challengeId;
      form.elements.credential.value = JSON.stringify(credential);
      say("checking");
      form.submit();
    };
    button.hidden = false;
    button.addEventListener("click", async () => {
      button.disabled = true;
      say("waiting");
      try {
        const { challenge_id, options: optionsJSON } = await options();
        const credential =
          button.dataset.passkey === "register"
            ? await browser.startRegistration({ optionsJSON })
            : await browser.startAuthentication({ optionsJSON });
        submit(challenge_id, credential);
      } catch (e) {
        say(e && e.name === "NotAllowedError" ? "cancelled" : "failed");
        button.disabled = false;
      }
    });
    if (button.dataset.conditional && browser.browserSupportsWebAuthnAutofill) {
      // Conditional mediation: the passkeys show in the username field's autofill; choosing one signs in.
      browser.browserSupportsWebAuthnAutofill().then(async (supported) => {
        if (!supported) return;
        try {
          const { challenge_id, options: optionsJSON } = await options();
          const credential = await browser.startAuthentication({ optionsJSON, useBrowserAutofill: true });
          submit(challenge_id, credential);
        } catch {
          // Cancelled, or replaced by the button's own ceremony: the button remains.
        }
      });
    }
  }
})();

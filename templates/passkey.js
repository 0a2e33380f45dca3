// The passkey buttons of Tessera's sign-in and account pages (served same-origin: the pages' CSP
// allows no inline script). A button `data-passkey="authenticate|register"` inside a form fetches
// the ceremony's options from `data-options` (posting the form's own fields: CSRF token, pending
// sign-in), runs the ceremony through @simplewebauthn/browser, puts `challenge_id` and the
// credential JSON into the form, and submits it: the server verifies and answers with a page.
(() => {
  const browser = window.SimpleWebAuthnBrowser;
  if (!browser || !browser.browserSupportsWebAuthn()) return;
  for (const button of document.querySelectorAll("button[data-passkey]")) {
    const form = button.form;
    const status = form.querySelector("[role=status]");
    const say = (text) => {
      if (status) status.textContent = text;
    };
    button.hidden = false;
    button.addEventListener("click", async () => {
      button.disabled = true;
      say("Waiting for your passkey…");
      try {
        const answer = await fetch(button.dataset.options, {
          method: "POST",
          body: new URLSearchParams(new FormData(form)),
          credentials: "same-origin",
        });
        if (!answer.ok) throw new Error("options");
        const { challenge_id, options } = await answer.json();
        const credential =
          button.dataset.passkey === "register"
            ? await browser.startRegistration({ optionsJSON: options })
            : await browser.startAuthentication({ optionsJSON: options });
        form.elements.challenge_id.value = challenge_id;
        form.elements.credential.value = JSON.stringify(credential);
        say("Checking…");
        form.submit();
      } catch (e) {
        say(
          e && e.name === "NotAllowedError"
            ? "The passkey request was cancelled or timed out. Try again."
            : "The passkey could not be used. Try again, or use another way.",
        );
        button.disabled = false;
      }
    });
  }
})();

/**
 * Forms whose POST must go out once (`data-once="<label while it runs>"`): the key reveal shows the
 * key a single time and its answer can take seconds (it waits for the first call). A second click
 * sent a second POST whose answer ("already shown once") replaced the one carrying the key, which is
 * then lost (only its hash is kept). On submit the button is disabled and says what is happening.
 * Without JavaScript the form still works; it is only unguarded.
 */
export function guardOnceForms(root: ParentNode) {
  const forms = [...root.querySelectorAll<HTMLFormElement>("form[data-once]")];
  for (const form of forms) {
    const button = form.querySelector<HTMLButtonElement>("button[type=submit]");
    const label = button?.textContent ?? "";
    form.addEventListener("submit", (event) => {
      if (form.dataset.sent) {
        event.preventDefault();
        return;
      }
      form.dataset.sent = "true";
      form.setAttribute("aria-busy", "true");
      if (button) {
        // Disabled after the submission began: it still goes out, and nothing can follow it.
        button.disabled = true;
        button.textContent = form.dataset.once || "Working…";
      }
    });
    // Back to this page from the answer (kept in the back/forward cache): usable again; the server
    // decides what a second POST gets.
    window.addEventListener("pageshow", (event) => {
      if (!event.persisted) return;
      delete form.dataset.sent;
      form.removeAttribute("aria-busy");
      if (button) {
        button.disabled = false;
        button.textContent = label;
      }
    });
  }
}

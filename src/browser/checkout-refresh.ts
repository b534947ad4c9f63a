/**
 * The checkout success page while it is not final (the payment on its way, the first call
 * running): it checks again every few seconds, as the server's `data-refresh` says, by fetching
 * this same GET page, and replaces the heading and #checkout-state only when they changed. A
 * reload every 3 s (the Refresh header it replaces) sent a screen reader back to the top and lost
 * the keyboard's place, for up to 30 minutes of a bank debit (WCAG 2.2.1, failure F41).
 *
 * Only the GET page is fetched, which never carries the key (only the Reveal POST's answer does):
 * an update shows what a reload would have shown. It stops where the reloads stopped, when the page
 * it fetched no longer asks to be checked again; the status line says what changed, and its button
 * stops and resumes the checking. Focus moves only to the buyer's next action when it appears
 * (Reveal my key, Run it now), or to the heading when what held it was replaced.
 */
import { guardOnceForms } from "./once-form";

/** Checks in a row that got no page after which checking stops (a minute at 3 s). */
const MAX_FAILURES = 20;
/** What the buyer does next, once the page offers it. */
const NEXT_ACTION = "#reveal, #rerun";

const words = (el: Element | null | undefined) => (el?.textContent ?? "").replace(/\s+/g, " ").trim();

export function checkForUpdates(doc: Document) {
  const state = doc.getElementById("checkout-state");
  const heading = doc.getElementById("checkout-heading");
  const bar = doc.getElementById("refresh-bar");
  const status = doc.getElementById("refresh-status");
  const toggle = doc.getElementById("refresh-stop") as HTMLButtonElement | null;
  if (!state?.dataset.refresh || !heading || !bar || !status || !toggle) return;
  wire(doc, state, heading, status, toggle);
  bar.hidden = false;
}

function wire(
  doc: Document,
  state: HTMLElement,
  heading: HTMLElement,
  status: HTMLElement,
  toggle: HTMLButtonElement,
) {
  const seconds = () => Math.max(1, Number(state.dataset.refresh) || 3);
  /** The last page's state as served: a check that fetches the same markup changes nothing. */
  let shown = state.innerHTML;
  let timer: number | undefined;
  let failures = 0;
  /** Which run of checks is current: a stop, or a stop and a resume, ends the checks on their way. */
  let run = 0;
  let checking = false;

  // Set only when it differs: some screen readers announce a status line set to the same words.
  const say = (text: string) => {
    if (status.textContent !== text) status.textContent = text;
  };
  const checkingLine = () => `Checking for updates every ${seconds()} seconds.`;
  const schedule = (current: number) => {
    timer = window.setTimeout(() => void check(current), seconds() * 1000);
  };
  function start() {
    checking = true;
    run++;
    failures = 0;
    toggle.textContent = "Stop checking";
    say(checkingLine());
    schedule(run);
  }
  function stop(text: string, final: boolean) {
    checking = false;
    run++;
    window.clearTimeout(timer);
    say(text);
    if (!final) {
      toggle.textContent = "Resume checking";
      return;
    }
    // Nothing left to stop: the button goes, and a keyboard on it is put back at the top.
    const focused = doc.activeElement === toggle;
    toggle.hidden = true;
    if (focused) focusHeading();
  }
  function focusHeading() {
    heading.tabIndex = -1;
    heading.focus();
  }

  function update(next: Document, nextState: HTMLElement, nextHeading: HTMLElement) {
    const focusWasIn = state.contains(doc.activeElement);
    const hadAction = Boolean(state.querySelector(NEXT_ACTION));
    heading.textContent = nextHeading.textContent;
    if (next.title) doc.title = next.title;
    shown = nextState.innerHTML;
    state.replaceChildren(...Array.from(nextState.childNodes));
    guardOnceForms(state);
    const action = state.querySelector<HTMLElement>(NEXT_ACTION);
    if (action && !hadAction) {
      action.focus();
    } else if (focusWasIn) {
      focusHeading();
    }
    say(`Updated: ${[words(heading), words(state.querySelector("#first-call"))].filter(Boolean).join(". ")}`);
  }

  async function check(current: number) {
    let next: Document | undefined;
    let why = "";
    try {
      const res = await fetch(window.location.href, { cache: "no-store", headers: { accept: "text/html" } });
      if (res.ok) next = new DOMParser().parseFromString(await res.text(), "text/html");
      else why = `HTTP ${res.status}`;
    } catch (e) {
      why = e instanceof Error ? e.message : String(e);
    }
    if (current !== run) return;
    const nextState = next?.getElementById("checkout-state");
    const nextHeading = next?.getElementById("checkout-heading");
    if (!next || !nextState || !nextHeading) {
      if (++failures >= MAX_FAILURES) {
        stop(
          `Stopped checking: the page could not be read (${why || "not this page"}). Reload it to try again.`,
          false,
        );
        return;
      }
      say(`Could not check just now (${why || "not this page"}); trying again.`);
      schedule(current);
      return;
    }
    // The line said a check failed: it says it is checking again.
    const recovered = failures > 0;
    failures = 0;
    const changed = nextState.innerHTML !== shown || words(nextHeading) !== words(heading);
    if (changed) update(next, nextState, nextHeading);
    const again = nextState.dataset.refresh;
    if (again) {
      state.dataset.refresh = again;
      if (recovered && !changed) say(checkingLine());
      schedule(current);
    } else {
      delete state.dataset.refresh;
      // Final (the server stopped asking, as its Refresh header stopped): what changed stays said.
      stop(
        changed ? (status.textContent ?? "") : "No longer checking by itself: reload the page later.",
        true,
      );
    }
  }

  toggle.addEventListener("click", () => {
    if (checking) stop("Stopped checking: reload the page to see the latest, or resume.", false);
    else start();
  });
  // A form sent from the page (Reveal my key, Run it now) leaves it: nothing may replace it meanwhile.
  state.addEventListener("submit", () => {
    if (checking) stop(status.textContent ?? "", true);
  });
  start();
}

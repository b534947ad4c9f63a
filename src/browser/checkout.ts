/**
 * "Buy N calls for $X": creates a Stripe Checkout session with POST /api/cardpay/checkout and sends
 * the browser to Stripe's page. The pack (N and $X) is the server's rule; the button shows the
 * numbers the server rendered, and the checkout answer is the authority.
 */
import { noAnswer } from "./http-status";

interface CheckoutCreated {
  checkout_url: string;
  calls: number;
  amount_usd: number;
}

/**
 * The checkout's body. The first-call payload is the JSON text of an object, as the buyer typed it,
 * put in unparsed: a parse and JSON.stringify rounded integers past 2^53, wrote 1.50 as 1.5 and 1e400
 * as null, and the server keeps the payload's numbers as written (its exact-integer reading) to run
 * the first call with them.
 */
function checkoutBody(skillId: string, payloadText?: string): string {
  const id = JSON.stringify(skillId);
  return payloadText === undefined ? `{"skill_id":${id}}` : `{"skill_id":${id},"payload":${payloadText}}`;
}

/** Starts a checkout; `payloadText` must be the JSON text of an object (json-check.ts checks it). */
export async function startCheckout(skillId: string, payloadText?: string): Promise<string> {
  let res: Response;
  try {
    res = await fetch("/api/cardpay/checkout", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: checkoutBody(skillId, payloadText),
    });
  } catch (e) {
    throw new Error(`Checkout could not start: ${noAnswer(e)}`);
  }
  const body = (await res.json().catch(() => ({}))) as Partial<CheckoutCreated> & { detail?: unknown };
  if (!res.ok || !body.checkout_url)
    throw new Error(`Checkout could not start: ${refusal(res.status, body.detail)}`);
  return body.checkout_url;
}

/**
 * Why a checkout was refused, in words: its `detail` string, or for a 422's list of items (FastAPI's
 * shape: a first-call payload the skill's schema refuses is answered so, before Stripe) the first
 * item's field and message, `payload.text: Input should be a valid string`; else the status.
 */
export function refusal(status: number, detail: unknown): string {
  if (typeof detail === "string") return detail;
  const first = Array.isArray(detail)
    ? (detail[0] as { loc?: unknown; msg?: unknown } | undefined)
    : undefined;
  if (typeof first?.msg !== "string") return `HTTP ${status}`;
  const loc = Array.isArray(first.loc) ? first.loc.map(String) : [];
  const field = (loc[0] === "body" ? loc.slice(1) : loc).join(".");
  return field ? `${field}: ${first.msg}` : first.msg;
}

/** Wires a buy button: `data-skill-id` names the skill; errors go to `status`. */
export function wireBuyButton(
  button: HTMLButtonElement,
  status: HTMLElement,
  payload: () => string | undefined = () => undefined,
) {
  button.addEventListener("click", async () => {
    const skillId = button.dataset.skillId;
    if (!skillId) return;
    button.disabled = true;
    status.className = "muted";
    status.textContent = "Opening the card checkout…";
    try {
      window.location.assign(await startCheckout(skillId, payload()));
    } catch (e) {
      status.className = "status-err";
      status.textContent = e instanceof Error ? e.message : String(e);
      button.disabled = false;
    }
  });
}

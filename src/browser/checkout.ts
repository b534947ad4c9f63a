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

export async function startCheckout(skillId: string, payload?: Record<string, unknown>): Promise<string> {
  let res: Response;
  try {
    res = await fetch("/api/cardpay/checkout", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(payload ? { skill_id: skillId, payload } : { skill_id: skillId }),
    });
  } catch (e) {
    throw new Error(`Checkout could not start: ${noAnswer(e)}`);
  }
  const body = (await res.json().catch(() => ({}))) as Partial<CheckoutCreated> & { detail?: unknown };
  if (!res.ok || !body.checkout_url) {
    const why = typeof body.detail === "string" ? body.detail : `HTTP ${res.status}`;
    throw new Error(`Checkout could not start: ${why}`);
  }
  return body.checkout_url;
}

/** Wires a buy button: `data-skill-id` names the skill; errors go to `status`. */
export function wireBuyButton(
  button: HTMLButtonElement,
  status: HTMLElement,
  payload: () => Record<string, unknown> | undefined = () => undefined,
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

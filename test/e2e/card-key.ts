/**
 * A card-credit key for `skill` bought as a buyer buys one on the local stack: Stripe Checkout
 * (the emulator's hosted page is a form: submitting it pays, fires the webhook and redirects),
 * then the success page's "Reveal my key" form (a POST with its token). `calls`: what it bought;
 * `payload`: the pack's first call, run once it is paid.
 */
export async function buyCardKey(
  baseUrl: string,
  skill: string,
  payload?: Record<string, unknown>,
): Promise<{ key: string; calls: number }> {
  const created = await fetch(`${baseUrl}/api/cardpay/checkout`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ skill_id: skill, ...(payload ? { payload } : {}) }),
  });
  if (created.status !== 200) throw new Error(`checkout: HTTP ${created.status}`);
  const checkout = (await created.json()) as { checkout_url: string; calls: number };
  const paid = await fetch(checkout.checkout_url, { method: "POST", redirect: "manual" });
  if (paid.status !== 303) throw new Error(`hosted checkout page: HTTP ${paid.status}`);
  const successUrl = paid.headers.get("location") ?? "";
  const page = await (await fetch(successUrl)).text();
  const token = /name="token" value="([^"]+)"/.exec(page)?.[1] ?? "";
  const revealed = await fetch(successUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: new URL(successUrl).origin },
    body: new URLSearchParams({ token }).toString(),
  });
  const key = /id="api-key"[^>]*>\s*(mk_[A-Za-z0-9_-]+)/.exec(await revealed.text())?.[1];
  if (!key) throw new Error("the success page revealed no key");
  return { key, calls: checkout.calls };
}

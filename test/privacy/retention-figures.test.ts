import { describe, expect, it } from "vitest";
import privacy from "../../docs/PRIVACY.md?raw";
import {
  CHECKOUT_COMPLETABLE_MS,
  PENDING_PAYMENT_MS,
  STRIPE_KEY_KEPT_S,
  UNPAID_SESSION_RETENTION_DAYS,
} from "../../src/payments/checkout-sessions";
import { CARD_SPEND_KEPT_MS, CARD_SPEND_UNRETURNED_KEPT_DAYS } from "../../src/payments/credits";
import { IDEMPOTENCY_WINDOW_MS } from "../../src/payments/idempotent-results";
import { KEPT_SECONDS } from "../../src/payments/refund-journal";
import { WEBHOOK_EVENT_RETENTION_DAYS } from "../../src/payments/webhook-events";
import { SESSION_SECONDS } from "../../src/routes/admin-dashboard";
import { RETENTION_DAYS } from "../../src/stats/record";

// docs/PRIVACY.md names each retention with the constant that sets it: the figure must be the code's.
// Unchecked: NETWORK_CACHE_TTL_SECONDS's 1 hour default and 7-day cap (net/config.ts, inline
// numbers), the "24 h" and "4 days" repeated in the deletion steps, and Stripe's and Cloudflare's
// own retentions.
const DAY_MS = 86_400_000;
describe("the retention figures docs/PRIVACY.md gives are the code's", () => {
  const figures: [string, string][] = [
    [`**${UNPAID_SESSION_RETENTION_DAYS} days** from creation`, "UNPAID_SESSION_RETENTION_DAYS"],
    [`**${CARD_SPEND_KEPT_MS / 3_600_000} hour**`, "CARD_SPEND_KEPT_MS"],
    [`**${CARD_SPEND_UNRETURNED_KEPT_DAYS} days**`, "CARD_SPEND_UNRETURNED_KEPT_DAYS"],
    [`**${IDEMPOTENCY_WINDOW_MS / 3_600_000} hours**`, "IDEMPOTENCY_WINDOW_MS"],
    [`**${RETENTION_DAYS} days**`, "RETENTION_DAYS"],
    [`**${WEBHOOK_EVENT_RETENTION_DAYS} days**`, "WEBHOOK_EVENT_RETENTION_DAYS"],
    [`**${CHECKOUT_COMPLETABLE_MS / DAY_MS} days**`, "CHECKOUT_COMPLETABLE_MS"],
    [`**${PENDING_PAYMENT_MS / DAY_MS} days**`, "PENDING_PAYMENT_MS"],
    [`**${STRIPE_KEY_KEPT_S / 3600} hours**`, "STRIPE_KEY_KEPT_S"],
    [`**${KEPT_SECONDS / 86_400} days**`, "KEPT_SECONDS"],
    [`**${SESSION_SECONDS / 3600} hour**`, "SESSION_SECONDS"],
  ];
  it.each(figures)("%s (%s)", (figure, constant) => {
    const line = privacy.split("\n").find((l: string) => l.includes(`\`${constant}\``));
    expect(line, `no line names ${constant}`).toBeDefined();
    expect(line).toContain(figure);
  });
});

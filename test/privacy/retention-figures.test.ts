import { describe, expect, it } from "vitest";
import privacy from "../../docs/PRIVACY.md?raw";
import { UNPAID_SESSION_RETENTION_DAYS } from "../../src/payments/checkout-sessions";
import { CARD_SPEND_KEPT_MS, CARD_SPEND_UNRETURNED_KEPT_DAYS } from "../../src/payments/credits";
import { IDEMPOTENCY_WINDOW_MS } from "../../src/payments/idempotent-results";
import { WEBHOOK_EVENT_RETENTION_DAYS } from "../../src/payments/webhook-events";
import { RETENTION_DAYS } from "../../src/stats/record";

// docs/PRIVACY.md names each retention with the constant that sets it: the figure must be the code's.
describe("the retention figures docs/PRIVACY.md gives are the code's", () => {
  const figures: [string, string][] = [
    [`**${UNPAID_SESSION_RETENTION_DAYS} days** from creation`, "UNPAID_SESSION_RETENTION_DAYS"],
    [`**${CARD_SPEND_KEPT_MS / 3_600_000} hour**`, "CARD_SPEND_KEPT_MS"],
    [`**${CARD_SPEND_UNRETURNED_KEPT_DAYS} days**`, "CARD_SPEND_UNRETURNED_KEPT_DAYS"],
    [`**${IDEMPOTENCY_WINDOW_MS / 3_600_000} hours**`, "IDEMPOTENCY_WINDOW_MS"],
    [`**${RETENTION_DAYS} days**`, "RETENTION_DAYS"],
    [`**${WEBHOOK_EVENT_RETENTION_DAYS} days**`, "WEBHOOK_EVENT_RETENTION_DAYS"],
  ];
  it.each(figures)("%s (%s)", (figure, constant) => {
    const line = privacy.split("\n").find((l: string) => l.includes(`\`${constant}\``));
    expect(line, `no line names ${constant}`).toBeDefined();
    expect(line).toContain(figure);
  });
});

import { describe, expect, it } from "vitest";
import { MIN_CHARGE_MICROS, packSize } from "../../src/payments/credits";

// Card-credit rules the suite did not pin down (found by mutating credits.ts).
describe("packSize never sells a pack below Stripe's minimum", () => {
  it("a price that does not divide $0.50 rounds the pack up, even where rounding down gives whole cents", () => {
    // At $0.03 a call, 16 calls are $0.48: whole cents, but under the $0.50 Stripe charges at
    // least. A mutant that rounded the minimum down survived, as no catalog price shows it today.
    expect(packSize(30_000n)).toBe(17);
    for (const micros of [3_000n, 7_000n, 30_000n, 70_000n, 130_000n, 333_333n]) {
      const total = BigInt(packSize(micros)) * micros;
      expect(total >= MIN_CHARGE_MICROS, `${micros}`).toBe(true);
      expect(total % 10_000n, `${micros}`).toBe(0n);
    }
  });
});

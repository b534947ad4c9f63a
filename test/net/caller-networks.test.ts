import { describe, expect, it } from "vitest";
import { callerNetwork, callerNetworks } from "../../src/net/ip-ranges";

describe("callerNetworks: the networks per-IP budgets are counted in (payments/quotas.ts)", () => {
  it("an IPv6 address is counted in its /64, its /56 and its /48, narrowest first", () => {
    expect(callerNetworks("2001:470:1f0b:12ab:a:b:c:d")).toEqual([
      "2001:470:1f0b:12ab::/64",
      "2001:470:1f0b:1200::/56",
      "2001:470:1f0b::/48",
    ]);
    // The /64 stays the Idempotency-Key scope of a checkout, as written before.
    expect(callerNetwork("2001:470:1f0b:12ab:a:b:c:d")).toBe("2001:470:1f0b:12ab::/64");
    expect(callerNetworks("[2a01:4f8::1]")).toEqual([
      "2a01:4f8:0:0::/64",
      "2a01:4f8:0:0::/56",
      "2a01:4f8:0::/48",
    ]);
  });

  it("an IPv4 address, written plainly or IPv4-mapped, is one network of its own", () => {
    expect(callerNetworks("203.0.113.9")).toEqual(["203.0.113.9"]);
    expect(callerNetworks("::ffff:203.0.113.9")).toEqual(["203.0.113.9"]);
    expect(callerNetworks("::ffff:cb00:7109")).toEqual(["203.0.113.9"]);
    expect(callerNetworks(undefined)).toEqual(["unknown"]);
  });
});

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { netConfig } from "../../src/net/config";

describe("netConfig reads its numbers as written, or not at all", () => {
  it.each([
    // A unit after the number: the default, not the number before it (8 ms, raised to the 100 ms floor).
    [{ FETCH_TIMEOUT_MS: "8s" }, "timeoutMs", 8000],
    [{ FETCH_TIMEOUT_MS: "8000ms" }, "timeoutMs", 8000],
    [{ FETCH_TIMEOUT_MS: " 5000 " }, "timeoutMs", 5000],
    [{ FETCH_TIMEOUT_MS: "1e4" }, "timeoutMs", 8000],
    [{ FETCH_TIMEOUT_MS: "50" }, "timeoutMs", 100],
    [{ NETWORK_CACHE_TTL_SECONDS: "1h" }, "cacheTtlSeconds", 3600],
    [{ NETWORK_CACHE_TTL_SECONDS: "0" }, "cacheTtlSeconds", 0],
    // KV refuses an expirationTtl under 60 (test/skills/cache-rules.test.ts): raised to it, or nothing would be cached.
    [{ NETWORK_CACHE_TTL_SECONDS: "30" }, "cacheTtlSeconds", 60],
    [{ NETWORK_CACHE_TTL_SECONDS: "1" }, "cacheTtlSeconds", 60],
    [{ NETWORK_CACHE_TTL_SECONDS: "999999" }, "cacheTtlSeconds", 7 * 24 * 3600],
  ] as const)("%j", (vars, field, expected) => {
    expect(netConfig({ ...env, ...vars })[field]).toBe(expected);
  });

  it("reads an unquoted number in [vars] (a JSON binding: a number, not a string) as written", () => {
    const vars = { FETCH_TIMEOUT_MS: 5000, NETWORK_CACHE_TTL_SECONDS: 120 } as unknown as Record<
      string,
      string
    >;
    const cfg = netConfig({ ...env, ...vars });
    expect([cfg.timeoutMs, cfg.cacheTtlSeconds]).toEqual([5000, 120]);
  });
});

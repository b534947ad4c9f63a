import { env } from "cloudflare:test";
import { generatePrivateKey } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { operatingBalance } from "../../src/partners/operating-balance";

afterEach(() => vi.restoreAllMocks());

describe("the operating wallet's balance with an RPC_URL that is no http(s) URL", () => {
  it.each(["rpc.example/v2/SECRETKEY123", "wss://rpc.example/v2/SECRETKEY123"])(
    "%s: not read (as a failed read: the wallet without micros), the log naming the var, not its value",
    async (rpc) => {
      const errors = vi.spyOn(console, "error").mockImplementation(() => {});
      const e = { ...env, RPC_URL: rpc, PARTNER_PAYER_KEY: generatePrivateKey() };
      const balance = await operatingBalance(e, env.USDC_ADDRESS);
      expect(balance?.wallet).toMatch(/^0x[0-9a-fA-F]{40}$/);
      expect(balance?.micros).toBeUndefined();
      const lines = errors.mock.calls.map((c) => JSON.parse(String(c[0])));
      expect(lines).toEqual([
        {
          level: "warn",
          msg: "operating wallet balance unreadable",
          error: "Error: RPC_URL is not an absolute http(s) URL (its value is not shown)",
        },
      ]);
    },
  );
});

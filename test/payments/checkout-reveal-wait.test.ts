import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { call } from "../helpers";
import {
  cardEnv,
  firstCallResult,
  keyIn,
  keysFor,
  revealTokenFromPage,
  seedSession,
} from "./checkout-helpers";

/** The first call's search request (its query carries MARK) answers after SLOW_MS. */
const MARK = "reveal waits";
const SLOW_MS = 7_000;

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the Reveal POST that grants (webhook late) waits at most 5 s for the first call", () => {
  it("a first call slower than that runs on after the answer: the key page shows the key and the call running", async () => {
    // Paid on Stripe, no webhook yet: on real Stripe the redirect does not wait for it.
    const id = await seedSession("research", 34, { query: MARK });
    const token = (await revealTokenFromPage(id)) as string;
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const url = decodeURIComponent(new Request(input, init).url).replaceAll("+", " ");
      if (url.includes(MARK)) await new Promise((r) => setTimeout(r, SLOW_MS));
      return real(input, init);
    });
    const ctx = createExecutionContext();
    const started = Date.now();
    const res = await worker.fetch(
      new Request(`https://skills.test/checkout/success?session_id=${id}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token }).toString(),
      }),
      // The fetcher's own timeout must not cut the slow request short. Payments on: the run's
      // answer and its credit are written together (in free beta it takes none).
      { ...cardEnv, FETCH_TIMEOUT_MS: "20000" },
      ctx,
    );
    const answeredIn = Date.now() - started;
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(keyIn(html)).toBeTruthy();
    expect(html).toContain("Running…");
    expect(answeredIn).toBeGreaterThanOrEqual(4_900);
    expect(answeredIn).toBeLessThan(SLOW_MS - 500);
    // The run goes on after the answer and stores its result once.
    await waitOnExecutionContext(ctx);
    const result = await firstCallResult(id);
    const left = (await keysFor(id)).results[0]?.calls_left;
    expect(left).toBe(result.status === 200 ? 33 : 34);
    const page = await (await call(`/checkout/success?session_id=${id}`)).text();
    expect(page).not.toContain("Running…");
  }, 40_000);
});

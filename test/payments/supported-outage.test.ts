import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { FAILED_READ_BACKOFF_MS } from "../../src/payments/x402-gate";

// A facilitator whose /supported fails before the gate's first good read (an outage). Each unpaid
// request started a read of its own (a failed read was not kept), and each read wrote @x402/core's
// plain-text warning: N requests, N fetches and N lines, none JSON, none ours.

afterEach(() => {
  vi.restoreAllMocks();
});

/** A facilitator whose /supported answers 404 until `up`; counts its reads. */
function stubFacilitator(origin: string) {
  const state = { reads: 0, up: false };
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).origin !== origin) return realFetch(input, init);
    if (!new URL(req.url).pathname.endsWith("/supported")) return new Response("unexpected", { status: 500 });
    state.reads++;
    if (!state.up) return new Response("Not Found", { status: 404 });
    return Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network: env.X402_NETWORK }] });
  });
  return state;
}

const unpaid = async (facilitator: string) => {
  const res = await createApp().fetch(
    new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
    { ...env, FREE_BETA: "false", FACILITATOR_URL: facilitator },
  );
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.text() };
};

/** The console's lines of one kind, each the text it was called with. */
const lines = (spy: { mock: { calls: unknown[][] } }) =>
  spy.mock.calls.map((args) => args.map(String).join(" "));

describe("a facilitator whose /supported fails before the first good read", () => {
  it("N unpaid requests within the back-off: one fetch, one JSON error line, one library warning, the same 503", async () => {
    const origin = "https://facilitator-outage.test";
    const facilitator = stubFacilitator(origin);
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await unpaid(origin));
    expect(facilitator.reads).toBe(1);
    const ours = lines(error).filter((l) => l.includes("facilitator /supported failed"));
    expect(ours).toHaveLength(1);
    const line = JSON.parse(ours[0] as string);
    expect(line).toMatchObject({ level: "error", msg: "facilitator /supported failed" });
    // The facilitator's own answer, which the library keeps in the error's cause.
    expect(line.error).toMatch(/404/);
    expect(lines(warn).filter((l) => l.includes("Failed to fetch supported kinds"))).toHaveLength(1);
    for (const a of answers) {
      expect(a.status).toBe(503);
      expect(JSON.parse(a.body).detail).toMatch(/^x402 payments are unavailable: facilitator: /);
      expect(Number(a.retryAfter)).toBeGreaterThan(0);
      expect(Number(a.retryAfter)).toBeLessThanOrEqual(FAILED_READ_BACKOFF_MS / 1000);
    }
    expect(answers[1]?.body).toBe(answers[0]?.body);
  });

  it("after the back-off the next request reads again, and a facilitator that is back is used", async () => {
    const origin = "https://facilitator-outage-recovers.test";
    const facilitator = stubFacilitator(origin);
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    expect((await unpaid(origin)).status).toBe(503);
    const now = Date.now();
    const clock = vi.spyOn(Date, "now").mockReturnValue(now + FAILED_READ_BACKOFF_MS - 1000);
    const late = await unpaid(origin);
    expect(late.status).toBe(503);
    expect(late.retryAfter).toBe("1");
    expect(facilitator.reads).toBe(1);
    // Past the back-off, still down: one more read, one more line.
    clock.mockReturnValue(now + FAILED_READ_BACKOFF_MS + 1);
    expect((await unpaid(origin)).status).toBe(503);
    expect(facilitator.reads).toBe(2);
    expect(lines(error).filter((l) => l.includes("facilitator /supported failed"))).toHaveLength(2);
    // Back up, after the second read's back-off: the 402 offer.
    facilitator.up = true;
    clock.mockReturnValue(now + 2 * FAILED_READ_BACKOFF_MS + 2);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(3);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(3);
  });
});

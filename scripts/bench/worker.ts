// Benchmark-only Worker: the real app plus a no-op route and an in-isolate timer for skill runs.
// Never deployed; scripts/bench.mjs serves it with wrangler dev.
import { createApp } from "../../src/app";
import { skillBySlug } from "../../src/skills/registry";

const app = createApp();

app.get("/__bench/noop", (c) => c.text("ok"));

app.post("/__bench/time/:slug", async (c) => {
  const skill = skillBySlug(c.req.param("slug"));
  if (!skill) return c.json({ detail: "unknown skill" }, 404);
  const { body, iterations } = await c.req.json<{ body: unknown; iterations: number }>();
  const input = skill.input.parse(body);
  const ctx = { env: c.env, requestId: "bench" };
  const first = performance.now();
  await skill.run(input, ctx);
  const firstMs = performance.now() - first;
  // Local workerd timers tick in whole milliseconds: time batches long enough to resolve, per call.
  let batch = 1;
  for (;;) {
    const t = performance.now();
    for (let i = 0; i < batch; i++) await skill.run(input, ctx);
    if (performance.now() - t >= 25 || batch >= 4096) break;
    batch *= 4;
  }
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t = performance.now();
    for (let j = 0; j < batch; j++) await skill.run(input, ctx);
    times.push((performance.now() - t) / batch);
  }
  times.sort((a, b) => a - b);
  return c.json({
    first_ms: firstMs,
    median_ms: times[Math.floor(times.length / 2)],
    batch,
    n: iterations * batch,
  });
});

// Receipt signing and idempotency lookup per paid call (scripts/bench/paid-overhead.ts).
// Loaded on its route: a static import would evaluate @x402/core/http at start-up, which the
// production Worker no longer does (the throughput bench measures start-up with this bundle).
app.post("/__bench/paid-overhead", async (c) => {
  const { paidOverhead } = await import("./paid-overhead");
  return c.json(await paidOverhead(c.env, 200, c.executionCtx));
});

/**
 * The floor of a 1 KB sha256 call in this same isolate: read, parse, digest, JSON, with no Hono and
 * none of our middleware. A route's gap to it is what the app costs per call.
 */
async function floor(request: Request): Promise<Response> {
  const { text } = JSON.parse(await request.text()) as { text: string };
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
  return Response.json({
    algo: "sha256",
    encoding: "utf-8",
    bytes: text.length,
    hex,
    hex_prefix: hex.slice(0, 16),
  });
}

/**
 * The same 1 KB sha256 work as `floor`, as a route of the app: the app's outermost middleware and
 * router with none of a skill's steps (statistics, quota, idempotency, payment, validation). What a
 * skill call could cost at best with this app; a skill route's gap to it is its own chain.
 */
app.post("/__bench/app-floor", async (c) => {
  const { text } = JSON.parse(await c.req.text()) as { text: string };
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
  return c.json({ algo: "sha256", encoding: "utf-8", bytes: text.length, hex, hex_prefix: hex.slice(0, 16) });
});

/**
 * The unpaid 402 at best: the exact answer slugify's gate sends (status, headers, body, read once
 * from the real route), sent by a route of the app with none of a skill's steps. Served by the
 * bench's second process, the one with payments on.
 */
let offer: { body: string; headers: Record<string, string> } | undefined;
app.post("/__bench/offer-floor", async (c) => {
  // Read once, then nothing per request but sending it (the floor must carry no bench work).
  offer ??= await readOffer(c.req.url, c.env, c.executionCtx);
  return c.body(offer.body, 402, offer.headers);
});

/**
 * The 402's app floor with its body as bytes (stop 40): encoded once (`bytes`), or encoded with
 * TextEncoder on every request (`encode`). A string body is encoded by the runtime for each
 * Response (V8's WriteUtf8); these tell what that costs against a copy, and against TextEncoder.
 */
let offerBytes: Uint8Array<ArrayBuffer> | undefined;
const encoder = new TextEncoder();
app.post("/__bench/offer-floor/bytes", async (c) => {
  offer ??= await readOffer(c.req.url, c.env, c.executionCtx);
  offerBytes ??= encoder.encode(offer.body) as Uint8Array<ArrayBuffer>;
  return c.body(offerBytes, 402, offer.headers);
});
// The bytes and the two headers from one Headers object built once, as a Response of its own
// (Hono's c.body builds a Headers and sets each header of the record on every answer).
let offerHeaders: Headers | undefined;
app.post("/__bench/offer-floor/headers", async (c) => {
  offer ??= await readOffer(c.req.url, c.env, c.executionCtx);
  offerBytes ??= encoder.encode(offer.body) as Uint8Array<ArrayBuffer>;
  offerHeaders ??= new Headers(offer.headers);
  return new Response(offerBytes, { status: 402, headers: offerHeaders });
});
app.post("/__bench/offer-floor/encode", async (c) => {
  offer ??= await readOffer(c.req.url, c.env, c.executionCtx);
  return c.body(encoder.encode(offer.body) as Uint8Array<ArrayBuffer>, 402, offer.headers);
});

async function readOffer(url: string, env: Env, ctx: Parameters<typeof app.fetch>[2]) {
  const r = await app.fetch(
    new Request(new URL("/api/skills/slugify", url), { method: "POST", body: "{}" }),
    env,
    ctx,
  );
  // Only the real offer is kept: a failed first read (facilitator not up yet) is read again.
  if (r.status !== 402) throw new Error(`slugify answered ${r.status}, not its 402 offer`);
  const all = [...r.headers].filter(([k]) => k !== "content-length");
  const headers = all.filter(([k]) => /^(payment-required|content-type)$/i.test(k));
  return { body: await r.text(), headers: Object.fromEntries(headers), all: new Headers(all) };
}

/**
 * The unpaid 402 with no app at all: slugify's exact answer, every header included (the offer,
 * the security and CORS headers, the request id), sent by the Worker's fetch handler with no Hono
 * and no middleware. What any Worker sending this answer pays; no route of the app can be cheaper.
 */
let wireOffer: Awaited<ReturnType<typeof readOffer>> | undefined;
async function offerWireFloor(request: Request, env: Env, ctx: ExecutionContext) {
  wireOffer ??= await readOffer(request.url, env, ctx);
  return new Response(wireOffer.body, { status: 402, headers: wireOffer.all });
}

// The same app with payments on, mounted under /paid, for the payment-path latency figures.
const paid = createApp();

const handler: ExportedHandler<Env> = {
  fetch(request, env, ctx) {
    // No URL parse unless a bench route is hit: the throughput figures must not carry its cost.
    if (!request.url.includes("/__bench/floor") && !request.url.includes("/paid/"))
      return app.fetch(request, env, ctx);
    if (request.url.endsWith("/__bench/floor")) return floor(request);
    if (request.url.endsWith("/__bench/floor/offer")) return offerWireFloor(request, env, ctx);
    const url = new URL(request.url);
    if (url.pathname.startsWith("/paid/")) {
      url.pathname = url.pathname.slice("/paid".length);
      return paid.fetch(new Request(url, request), { ...env, FREE_BETA: "false" }, ctx);
    }
    return app.fetch(request, env, ctx);
  },
};
export default handler;

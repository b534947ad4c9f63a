#!/usr/bin/env node
// `node scripts/bench/answers-diff.mjs <dirA> <dirB>`: serves two bench Worker bundles (built as
// for ab-402.mjs) with payments on and sends both the same requests to a priced route (unpaid v2,
// v1 X-PAYMENT, a bad PAYMENT-SIGNATURE, a browser, HEAD/GET on the POST route, an invalid body,
// Idempotency-Key and card-key headers, a preflight), then compares status, headers (in order)
// and body byte for byte. Only what differs between any two answers of the same build is masked:
// the request id, the origin's port, and inside PAYMENT-REQUIRED and the body the signed offers' signatures and times.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { benchInputs } from "./inputs.mjs";
import { withPaymentsOn } from "./paid-bundles.mjs";
import { serve } from "./workerd-config.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dirs = process.argv.slice(2).map((d) => path.resolve(d));
const body = JSON.stringify(benchInputs().find(([s, l]) => s === "slugify" && l === "1 KB")[2]);
const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64");
const v1 = b64({ x402Version: 1, scheme: "exact", network: "base", payload: { signature: "0x00" } });
const POST = "/api/skills/slugify";
const cases = [
  ["unpaid v2", "POST", POST, {}, body],
  ["unpaid, empty body", "POST", POST, {}, ""],
  ["unpaid, invalid JSON", "POST", POST, {}, "{"],
  ["unpaid, wrong field", "POST", POST, {}, '{"nope":1}'],
  ["browser", "POST", POST, { accept: "text/html", "user-agent": "Mozilla/5.0" }, body],
  ["browser Accept only", "POST", POST, { accept: "text/html" }, body],
  ["v1 client, bad X-PAYMENT", "POST", POST, { "x-payment": v1 }, body],
  ["v1 client, garbage X-PAYMENT", "POST", POST, { "x-payment": "not base64!" }, body],
  ["v2, garbage PAYMENT-SIGNATURE", "POST", POST, { "payment-signature": "xyz" }, body],
  ["v2, v1 payload in PAYMENT-SIGNATURE", "POST", POST, { "payment-signature": v1 }, body],
  ["HEAD on the POST route", "HEAD", POST, {}, undefined],
  ["GET on the POST route", "GET", POST, {}, undefined],
  ["Idempotency-Key alone", "POST", POST, { "idempotency-key": "abc-123" }, body],
  ["card key (unknown)", "POST", POST, { authorization: `Bearer mk_${"a".repeat(32)}` }, body],
  [
    "card key + Idempotency-Key",
    "POST",
    POST,
    { authorization: `Bearer mk_${"a".repeat(32)}`, "idempotency-key": "abc-123" },
    body,
  ],
  ["malformed card key", "POST", POST, { authorization: "Bearer mk_x" }, body],
  ["X-API-Key card key", "POST", POST, { "x-api-key": `mk_${"b".repeat(32)}` }, body],
  ["other Authorization", "POST", POST, { authorization: "Basic Zm9vOmJhcg==" }, body],
  ["IPv6 caller", "POST", POST, { "cf-connecting-ip": "2001:db8::1" }, body],
  [
    "preflight",
    "OPTIONS",
    POST,
    { origin: "https://x.example", "access-control-request-method": "POST" },
    undefined,
  ],
  ["unpaid v2, sha256", "POST", "/api/skills/sha256", {}, '{"text":"a"}'],
];

const mask = (s) =>
  s
    .replace(/http:\/\/127\.0\.0\.1:\d+/g, "<origin>")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
    .replace(/"(signature|issuedAt|validUntil|iat|exp|expiresAt|nonce)":("[^"]*"|\d+)/g, '"$1":<masked>')
    .replace(/eyJ[\w-]+\.[\w-]+\.[\w-]+/g, "<jws>");
const decodeHeader = (k, v) => {
  if (k !== "payment-required") return mask(v);
  try {
    return mask(Buffer.from(v, "base64").toString("utf8"));
  } catch {
    return v;
  }
};

async function answer(port, [, method, p, headers, payload]) {
  const r = await fetch(`http://127.0.0.1:${port}${p}`, {
    method,
    headers: { ...(payload !== undefined ? { "content-type": "application/json" } : {}), ...headers },
    body: payload,
  });
  const text = await r.text();
  return JSON.stringify(
    { status: r.status, headers: [...r.headers].map(([k, v]) => [k, decodeHeader(k, v)]), body: mask(text) },
    null,
    1,
  );
}

let differ = 0;
await withPaymentsOn(root, async (paidConfig) => {
  const servers = [];
  try {
    for (const [i, dir] of dirs.entries()) {
      const { cfg, port } = await paidConfig(dir, `diff${i}`);
      servers.push({ port, proc: await serve(root, cfg, { port, probePath: "/__bench/noop" }) });
    }
    // Twice each: the first answer of an isolate builds the cached offer, the second is served from it.
    for (const round of [1, 2])
      for (const c of cases) {
        const [a, b] = await Promise.all(servers.map((s) => answer(s.port, c)));
        const same = a === b;
        if (!same) differ++;
        console.log(`${same ? "same" : "DIFFERENT"}\tround ${round}\t${c[0]}\t${JSON.parse(a).status}`);
        if (!same) console.log(`--- A\n${a}\n--- B\n${b}`);
      }
  } finally {
    for (const s of servers) await s.proc.stop();
  }
});
console.log(differ ? `${differ} answers differ` : "all answers identical");
process.exit(differ ? 1 : 0);

#!/usr/bin/env node
// `npm run verify-receipt -- <receipt> [--body <file>] [--base-url <url> | --key <jwk>]`
// Verifies a marketplace receipt (docs/receipts-and-retries.md). <receipt> is a file holding the
// receipt (the JWS, an X-Payment-Receipt header line, a saved header dump, or a PAYMENT-RESPONSE value),
// or that text itself. The key is the one published at <base-url>/.well-known/did.json, or at the
// did:web the receipt's kid names, or a public JWK given with --key (JSON or a file). A did:web key
// counts only for receipts whose resourceUrl is on that did's host (with --base-url: under it).
// Exit code 0: valid (and the body matches); 1: not valid; 2: usage.
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { findReceipt, resolveKey, verifyReceipt } from "./lib/receipt-verify.mjs";

const usage =
  "usage: npm run verify-receipt -- <receipt file or text> [--body <saved body file>] [--base-url <https://…> | --key <public JWK json or file>]";
let args;
try {
  args = parseArgs({
    allowPositionals: true,
    options: { body: { type: "string" }, "base-url": { type: "string" }, key: { type: "string" } },
  });
} catch (e) {
  console.error(`${e.message}\n${usage}`);
  process.exit(2);
}
const [input] = args.positionals;
if (!input || args.positionals.length > 1) {
  console.error(usage);
  process.exit(2);
}
const textOf = (v) => (existsSync(v) ? readFileSync(v, "utf8") : v);

try {
  const jws = findReceipt(textOf(input));
  const baseUrl = args.values["base-url"];
  // A key found through a did:web must be the one of the receipt's resourceUrl (receipt-verify.mjs
  // checkIssuer); a key given with --key is the caller's to trust.
  const { jwk, kid, did, url } = args.values.key
    ? { jwk: JSON.parse(textOf(args.values.key)), kid: "(given key)", did: undefined, url: "--key" }
    : await resolveKey(jws, { baseUrl });
  const body = args.values.body === undefined ? undefined : new Uint8Array(readFileSync(args.values.body));
  const claims = await verifyReceipt(jws, { jwk, body, did, baseUrl });
  console.log(
    JSON.stringify(
      { valid: true, key: kid, key_source: url, body_checked: body !== undefined, receipt: claims },
      null,
      2,
    ),
  );
  if (body === undefined) console.error("note: no --body given; only the signature was checked.");
} catch (e) {
  console.log(JSON.stringify({ valid: false, reason: e instanceof Error ? e.message : String(e) }, null, 2));
  process.exit(1);
}

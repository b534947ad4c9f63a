#!/usr/bin/env node
// Prints the raw and gzip size of the modules `wrangler deploy --dry-run --outdir dist` wrote (the
// entry and the chunks of scripts/build-worker.mjs; `npm run build` empties dist first).
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";

const dir = "dist";
let raw = 0;
let gz = 0;
for (const name of readdirSync(dir)) {
  const file = path.join(dir, name);
  if (!statSync(file).isFile() || name.endsWith(".map")) continue;
  const bytes = readFileSync(file);
  raw += bytes.length;
  gz += gzipSync(bytes, { level: 9 }).length;
}
const mb = (n) => `${(n / 1024 / 1024).toFixed(2)} MiB`;
console.log(`bundle: ${mb(raw)} raw, ${mb(gz)} gzip (limits: 3 MiB gzip free plan, 10 MiB paid)`);

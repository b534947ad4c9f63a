#!/usr/bin/env node
// `node scripts/bench/startup-instructions.mjs [--rounds N] [--new-registry] <dir>...`: start-up in
// instructions, which the shared machine's load does not move (±1 % between identical runs): each
// built bundle (`wrangler deploy --dry-run --minify --outdir <dir>`) is served by plain workerd under
// valgrind's callgrind with instrumentation on from the spawn, until the first answer of an unrouted
// path; printed minus an empty Worker's count of the same round, as scripts/startup-ab.mjs does in
// ms. `--new-registry`: the bundles with workerd's experimental `new_module_registry` flag (modules
// compiled when first resolved instead of all at load; not deployable to Cloudflare today).
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, takeOption } from "../lib/proc.mjs";
import { median } from "./startup.mjs";
import { entryOf, stopGroup, writeConfig } from "./workerd-config.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const argv = process.argv.slice(2);
const rounds = Number(takeOption(argv, "--rounds", "3"));
const newRegistry = argv.includes("--new-registry");
const dirs = argv.filter((a) => a !== "--new-registry").map((d) => path.resolve(d));
if (!dirs.length) throw new Error("usage: startup-instructions.mjs [--rounds N] [--new-registry] <dir>...");
const workerd = path.join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const emptyDir = path.join(os.tmpdir(), "startup-instructions-empty");
mkdirSync(emptyDir, { recursive: true });
writeFileSync(
  path.join(emptyDir, "worker.js"),
  "export default { fetch() { return new Response('ok'); } };\n",
);
const modulesOf = (dir) =>
  readdirSync(dir).filter(
    (f) =>
      statSync(path.join(dir, f)).isFile() && !/\.(map|md|json|capnp)$/.test(f) && !f.startsWith("callgrind"),
  );

/** Instructions from spawn to the first answer (any status) of `dir`'s bundle, or the empty Worker's. */
async function once(dir, empty) {
  const port = await freePort();
  const files = empty ? ["worker.js"] : modulesOf(dir);
  const cfg = empty
    ? writeConfig(dir, { name: "instr-empty", files, main: "worker.js", port })
    : writeConfig(dir, {
        name: "instr-startup",
        files,
        main: entryOf(files),
        port,
        bindings: { FREE_BETA: "false", X402_ENABLED: "true", CARDPAY_ENABLED: "true" },
        assets: path.join(root, "static"),
      });
  if (newRegistry && !empty)
    writeFileSync(
      cfg,
      readFileSync(cfg, "utf8").replace(
        'compatibilityFlags = ["nodejs_compat"]',
        'compatibilityFlags = ["nodejs_compat", "new_module_registry"]',
      ),
    );
  const out = path.join(dir, "callgrind.out");
  const child = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      "--smc-check=all-non-file",
      `--callgrind-out-file=${out}.%p`,
      workerd,
      "serve",
      cfg,
      "--experimental",
    ],
    { cwd: dir, stdio: ["ignore", "ignore", "ignore"], detached: true },
  );
  try {
    let status;
    for (let t = 0; status === undefined; t++) {
      if (child.exitCode !== null || t > 6000)
        throw new Error(`workerd under valgrind did not answer (${dir})`);
      try {
        const r = await fetch(`http://127.0.0.1:${port}/__startup_probe`);
        await r.arrayBuffer();
        status = r.status;
      } catch {
        await sleep(50);
      }
    }
    execFileSync("callgrind_control", ["-d", "first", String(child.pid)], { stdio: "ignore" });
    for (let t = 0; t < 300; t++) {
      await sleep(200);
      for (const f of readdirSync(dir).filter((f) => f.startsWith(`callgrind.out.${child.pid}.`))) {
        const dump = readFileSync(path.join(dir, f), "utf8");
        if (dump.includes("desc: Trigger: dump first\n")) return Number(dump.match(/^totals:\s*(\d+)/m)?.[1]);
      }
    }
    throw new Error(`no callgrind dump (${dir})`);
  } finally {
    await stopGroup(child);
    for (const f of readdirSync(dir).filter((f) => f.startsWith(`callgrind.out.${child.pid}`)))
      rmSync(path.join(dir, f));
  }
}

const M = (n) => (n / 1e6).toFixed(1);
const extra = new Map(dirs.map((d) => [d, []]));
for (let round = 0; round < rounds; round++) {
  const empty = await once(emptyDir, true);
  for (const dir of dirs) {
    const total = await once(dir, false);
    extra.get(dir).push(total - empty);
    console.log(
      `round ${round + 1} ${path.basename(dir)}: ${M(total)}M - empty ${M(empty)}M = ${M(total - empty)}M`,
    );
  }
}
for (const [dir, xs] of extra)
  console.log(
    `${path.basename(dir)}: median ${M(median(xs))}M instructions to the first answer (min ${M(Math.min(...xs))}M, max ${M(Math.max(...xs))}M, n ${xs.length})${newRegistry ? ", new_module_registry" : ""}`,
  );

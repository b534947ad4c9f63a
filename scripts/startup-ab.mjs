// Start-up A/B: `node scripts/startup-ab.mjs [--rounds N] [--path P] <bundle-dir>...` serves each
// built bundle (`wrangler deploy --dry-run --outdir <dir>`) under plain `workerd serve`, in turn with
// an empty Worker, N rounds, and prints per bundle the median spawn-to-first-answer minus the empty
// Worker's of the same round. Alternating runs spread the load of this shared machine over all
// bundles alike; compare medians, not single runs. Any HTTP answer ends a start (the default probe
// path is unrouted), so no route's own work is counted.
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeConfig } from "./bench/throughput.mjs";
import { freePort } from "./lib/proc.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const [v] = args.splice(i, 2).slice(1);
  return v;
};
const rounds = Number(opt("--rounds", "7"));
const probePath = opt("--path", "/__startup_probe");
const dirs = args.map((d) => path.resolve(d));
if (dirs.length === 0) throw new Error("usage: startup-ab.mjs [--rounds N] [--path P] <bundle-dir>...");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function startOnce(configFile, port) {
  const started = performance.now();
  const child = spawn(path.join(root, "node_modules/.bin/workerd"), ["serve", configFile, "--experimental"], {
    cwd: path.dirname(configFile),
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  let status;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`workerd exited: ${stderr}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}${probePath}`);
      await r.arrayBuffer();
      status = r.status;
      break;
    } catch {}
    if (performance.now() - started > 30_000) throw new Error(`no answer within 30 s: ${stderr}`);
    await sleep(2);
  }
  const ms = performance.now() - started;
  await new Promise((resolve) => {
    child.once("exit", resolve);
    process.kill(-child.pid, "SIGTERM");
  });
  return { ms, status };
}

const emptyDir = path.join(os.tmpdir(), "startup-ab-empty");
mkdirSync(emptyDir, { recursive: true });
writeFileSync(
  path.join(emptyDir, "worker.js"),
  "export default { fetch() { return new Response('ok'); } };\n",
);
const bindings = { FREE_BETA: "false", X402_ENABLED: "true", CARDPAY_ENABLED: "true" };
const modulesOf = (dir) =>
  readdirSync(dir).filter((f) => statSync(path.join(dir, f)).isFile() && !/\.(map|md|json|capnp)$/.test(f));

const extra = new Map(dirs.map((d) => [d, []]));
const load = [os.loadavg()[0]];
for (let round = 0; round < rounds; round++) {
  for (const dir of dirs) {
    const files = modulesOf(dir);
    const main = files.find((f) => /^(index|worker)\.js$/.test(f));
    const emptyPort = await freePort();
    const emptyCfg = writeConfig(emptyDir, {
      name: "empty",
      files: ["worker.js"],
      main: "worker.js",
      port: emptyPort,
    });
    const port = await freePort();
    const cfg = writeConfig(dir, {
      name: "ab",
      files,
      main,
      port,
      bindings,
      assets: path.join(root, "static"),
    });
    const empty = await startOnce(emptyCfg, emptyPort);
    const app = await startOnce(cfg, port);
    extra.get(dir).push(app.ms - empty.ms);
    console.log(
      `round ${round + 1} ${path.basename(dir)}: ${app.ms.toFixed(0)} - ${empty.ms.toFixed(0)} = ${(app.ms - empty.ms).toFixed(0)} ms (HTTP ${app.status})`,
    );
  }
}
load.push(os.loadavg()[0]);
for (const [dir, xs] of extra) {
  console.log(
    `${path.basename(dir)}: median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)}, n ${xs.length}); load ${load.map((l) => l.toFixed(1)).join(" -> ")}`,
  );
}

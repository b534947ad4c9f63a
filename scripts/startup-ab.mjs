// Start-up A/B: `node scripts/startup-ab.mjs [--rounds N] [--path P] <bundle-dir>...` serves each
// built bundle (`wrangler deploy --dry-run --outdir <dir>`) under plain `workerd serve`, in turn with
// an empty Worker, N rounds, and prints per bundle the median spawn-to-first-answer minus the empty
// Worker's of the same round (scripts/bench/startup.mjs). Compare medians, not single runs.
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { median, startupRounds } from "./bench/startup.mjs";
import { freePort, takeOption } from "./lib/proc.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const opt = (name, fallback) => takeOption(args, name, fallback);
const rounds = Number(opt("--rounds", "7"));
const probePath = opt("--path", "/__startup_probe");
const dirs = args.map((d) => path.resolve(d));
if (dirs.length === 0) throw new Error("usage: startup-ab.mjs [--rounds N] [--path P] <bundle-dir>...");

const load = [os.loadavg()[0]];
const extra = await startupRounds(root, dirs, { rounds, freePort, probePath, log: console.log });
load.push(os.loadavg()[0]);
for (const [dir, xs] of extra) {
  console.log(
    `${path.basename(dir)}: median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)}, n ${xs.length}); load ${load.map((l) => l.toFixed(1)).join(" -> ")}`,
  );
}

// Start-up of built bundles under plain `workerd serve`: spawn to the first HTTP answer of an
// unrouted path (so no route's own work is counted), minus an empty Worker's start in the same
// round. Bundles and the empty Worker start in turn, so the shared machine's load falls on all alike.
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { entryOf, serve, writeConfig } from "./workerd-config.mjs";

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function startOnce(root, configFile, port, probePath) {
  const started = await serve(root, configFile, { port, probePath, anyStatus: true });
  await started.stop();
  return { ms: started.startupMs, status: started.status };
}

const modulesOf = (dir) =>
  readdirSync(dir).filter((f) => statSync(path.join(dir, f)).isFile() && !/\.(map|md|json|capnp)$/.test(f));

/**
 * `rounds` alternating starts of each bundle directory (`wrangler deploy --dry-run --outdir`);
 * returns, per directory, the starts minus the empty Worker's of the same round (ms).
 */
export async function startupRounds(root, dirs, { rounds, freePort, probePath = "/__startup_probe", log }) {
  const emptyDir = path.join(os.tmpdir(), "startup-empty");
  mkdirSync(emptyDir, { recursive: true });
  writeFileSync(
    path.join(emptyDir, "worker.js"),
    "export default { fetch() { return new Response('ok'); } };\n",
  );
  const bindings = { FREE_BETA: "false", X402_ENABLED: "true", CARDPAY_ENABLED: "true" };
  const extra = new Map(dirs.map((d) => [d, []]));
  for (let round = 0; round < rounds; round++) {
    for (const dir of dirs) {
      const files = modulesOf(dir);
      const main = entryOf(files);
      const emptyPort = await freePort();
      const emptyCfg = writeConfig(emptyDir, {
        name: "empty",
        files: ["worker.js"],
        main: "worker.js",
        port: emptyPort,
      });
      const port = await freePort();
      const cfg = writeConfig(dir, {
        name: "startup",
        files,
        main,
        port,
        bindings,
        assets: path.join(root, "static"),
      });
      const empty = await startOnce(root, emptyCfg, emptyPort, probePath);
      const app = await startOnce(root, cfg, port, probePath);
      extra.get(dir).push(app.ms - empty.ms);
      log?.(
        `round ${round + 1} ${path.basename(dir)}: ${app.ms.toFixed(0)} - ${empty.ms.toFixed(0)} = ${(app.ms - empty.ms).toFixed(0)} ms (HTTP ${app.status})`,
      );
    }
  }
  return extra;
}

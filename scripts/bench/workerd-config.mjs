// Plain `workerd serve` for a built bundle: its capnp config and the process (bench and start-up
// measurements).
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const capnpString = (s) => JSON.stringify(s);

/** The entry module of a `wrangler deploy --dry-run --outdir` listing (named after `main`). */
export const entryOf = (files) => files.find((f) => /^(index|worker)\.js$/.test(f));

/**
 * The KV stub: every operation fails (503), as a KV namespace that is down. It reads the request
 * body first, as KV does: answered unread, workerd's `KV.put` never settled (seo's first call,
 * which caches its result, hung after its page fetch).
 */
const KV_STUB = `export default {
  async fetch(request) {
    await request.arrayBuffer();
    return new Response("stub", { status: 503 });
  },
};`;

/**
 * D1's wire protocol as workerd's D1 binding speaks it (POST /query or /execute, one statement or
 * a batch as JSON): one success per statement, no rows.
 */
const D1_STUB = `export default {
  async fetch(request) {
    const body = await request.json();
    const one = { success: true, results: [], meta: { changes: 0, duration: 0, rows_read: 0, rows_written: 0 } };
    return Response.json((Array.isArray(body) ? body : [body]).map(() => one));
  },
};`;

/**
 * A workerd config serving the bundle in `dir` on `port`: text bindings from the bench wrangler
 * config's [vars], KV bound to a stub service answering 503 (the throughput routes never touch
 * it; the network skills' cache, src/skills/lib/cache.ts, goes on without it), D1 to a stub
 * that acknowledges every statement as D1 does (the call statistics' batched write, the only D1
 * write of the measured routes, then takes its production path, not an error path), ASSETS
 * bound to a read-only disk service of `assets` (what Workers Static Assets serve from wrangler's
 * [assets] directory; token_count reads its BPE tables there), and outbound fetches allowed to
 * loopback (the local facilitator).
 */
export function writeConfig(dir, { name, files, main, port, bindings, assets, inspector }) {
  const modules = files.map((f) => {
    const kind = f.endsWith(".wasm")
      ? "wasm"
      : /\.(m?js)$/.test(f)
        ? "esModule"
        : f.endsWith(".txt")
          ? "text"
          : "data";
    return `(name = ${capnpString(f)}, ${kind} = embed ${capnpString(f)})`;
  });
  // The main module first: workerd runs the first module listed.
  modules.sort((a, b) => (a.includes(`"${main}"`) ? -1 : b.includes(`"${main}"`) ? 1 : 0));
  const textBindings = Object.entries(bindings ?? {}).map(
    ([k, v]) => `(name = ${capnpString(k)}, text = ${capnpString(v)})`,
  );
  const storage = bindings
    ? [
        `(name = "KV", kvNamespace = "stub")`,
        `(name = "DB", wrapped = (moduleName = "cloudflare-internal:d1-api", innerBindings = [(name = "fetcher", service = "d1")]))`,
        ...(assets ? [`(name = "ASSETS", service = "assets")`] : []),
      ]
    : [];
  const assetsService = assets
    ? `\n    (name = "assets", disk = (path = ${capnpString(assets)}, writable = false)),`
    : "";
  const file = path.join(dir, `${name}.capnp`);
  writeFileSync(
    file,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .main),
    (name = "stub", worker = (modules = [(name = "stub.js", esModule = ${capnpString(KV_STUB)})], compatibilityDate = "2026-11-01")),
    (name = "d1", worker = (modules = [(name = "d1.js", esModule = ${capnpString(D1_STUB)})], compatibilityDate = "2026-11-01")),
    (name = "net", network = (allow = ["public", "private", "local"])),${assetsService}
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const main :Workerd.Worker = (
  modules = [${modules.join(", ")}],
  compatibilityDate = "2026-11-01",
  compatibilityFlags = ["nodejs_compat"],
  bindings = [${[...textBindings, ...storage].join(", ")}],
  globalOutbound = "net",
);
`,
  );
  void inspector;
  return file;
}

/**
 * Spawns `workerd serve`; resolves once `probePath` answers (with a 2xx, or with any status when
 * `anyStatus`), with the time from spawn and the answer's status.
 */
export async function serve(root, configFile, { port, probePath, inspectorPort, anyStatus = false }) {
  const args = ["serve", configFile, "--experimental"];
  if (inspectorPort) args.push(`--inspector-addr=127.0.0.1:${inspectorPort}`);
  const started = performance.now();
  const child = spawn(path.join(root, "node_modules/.bin/workerd"), args, {
    cwd: path.dirname(configFile),
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  const deadline = started + 30_000;
  let status;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`workerd exited: ${stderr}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}${probePath}`);
      await r.arrayBuffer();
      status = r.status;
      if (r.ok || anyStatus) break;
    } catch {}
    if (performance.now() > deadline) {
      await stopGroup(child);
      throw new Error(`workerd did not answer within 30 s: ${stderr}`);
    }
    await sleep(2);
  }
  const startupMs = performance.now() - started;
  return {
    startupMs,
    status,
    pid: child.pid,
    stop: () => stopGroup(child),
  };
}

/**
 * Ends a detached child's process group; resolves once the child has exited. SIGKILL after 2 s:
 * workerd waits on SIGTERM for requests in flight, and one that never settles (a KV put to a stub
 * that does not read the body) kept it running after the test that started it had failed.
 */
export function stopGroup(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = (signal) => {
      try {
        process.kill(-child.pid, signal);
      } catch {
        resolve();
      }
    };
    const late = setTimeout(() => kill("SIGKILL"), 2000);
    child.once("exit", () => {
      clearTimeout(late);
      resolve();
    });
    kill("SIGTERM");
  });
}

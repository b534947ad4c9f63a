// `node scripts/bench.mjs --profile <route name part>`: a CPU profile of one route of the bench
// Worker under plain workerd, taken over the inspector (workerd --inspector-addr) while the
// throughput loop drives it. Prints the functions with the most self time and writes the
// .cpuprofile (open it in Chrome DevTools) to .dev/throughput/.
import { writeFileSync } from "node:fs";
import path from "node:path";

/** Self time per function (name, file:line:col), most first. */
export function selfTimes(profile, n = 30) {
  const byId = new Map(profile.nodes.map((x) => [x.id, x]));
  const self = new Map();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const cf = byId.get(profile.samples[i]).callFrame;
    const d = (profile.timeDeltas[i] ?? 0) / 1000;
    total += d;
    const k = `${cf.functionName || "(anonymous)"} ${cf.url.split("/").pop()}:${cf.lineNumber + 1}:${cf.columnNumber + 1}`;
    self.set(k, (self.get(k) ?? 0) + d);
  }
  return {
    total,
    top: [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, n),
  };
}

/** Connects to workerd's inspector for service `main`; returns a tiny CDP client. */
export async function inspect(port) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/main`);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let id = 0;
  const pending = new Map();
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id && pending.has(msg.id)) {
      pending.get(msg.id)(msg);
      pending.delete(msg.id);
    }
  };
  return {
    send: (method, params = {}) =>
      new Promise((resolve) => {
        const n = ++id;
        pending.set(n, resolve);
        ws.send(JSON.stringify({ id: n, method, params }));
      }),
    close: () => ws.close(),
  };
}

export async function saveProfile(dir, name, profile) {
  const file = path.join(dir, `${name.replace(/[^a-z0-9]+/gi, "-")}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  return file;
}

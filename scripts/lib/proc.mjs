// Child-process helpers shared by the dev stack, the e2e tests and the benchmarks.
import { spawn } from "node:child_process";
import net from "node:net";

/** Starts a long-running child in its own process group so the whole tree can be stopped. */
export function startProcess(name, cmd, args, { env = {}, cwd, quiet = true } = {}) {
  const child = spawn(cmd, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const log = [];
  const keep = (chunk) => {
    log.push(chunk.toString());
    if (log.length > 200) log.shift();
    if (!quiet) process.stderr.write(`[${name}] ${chunk}`);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  child.recentOutput = () => log.join("");
  return child;
}

export function stopProcess(child, signal = "SIGTERM") {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    }, 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    try {
      process.kill(-child.pid, signal);
    } catch {
      clearTimeout(timer);
      resolve();
    }
  });
}

/** Polls until `probe` resolves truthy, or throws after `timeoutMs` with the child's output. */
export async function waitFor(what, probe, { timeoutMs = 60_000, child } = {}) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) {
      throw new Error(
        `${what} exited (${child.exitCode}) before it was ready:\n${child.recentOutput?.() ?? ""}`,
      );
    }
    try {
      if (await probe()) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} was not ready within ${timeoutMs} ms:\n${child?.recentOutput?.() ?? ""}`);
}

export function portIsFree(port, host = "127.0.0.1") {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Takes `--name value` out of `argv` (the rest stays positional); `fallback` when absent. */
export function takeOption(argv, name, fallback) {
  const i = argv.indexOf(name);
  if (i < 0) return fallback;
  const [v] = argv.splice(i, 2).slice(1);
  return v;
}

/** Takes every `--name value` out of `argv` (a repeatable option), in the order given. */
export function takeOptions(argv, name) {
  const out = [];
  for (let i = argv.indexOf(name); i >= 0; i = argv.indexOf(name)) out.push(...argv.splice(i, 2).slice(1));
  return out;
}

// workerd under valgrind's callgrind, for instruction counts that the machine's load does not move
// (bpe-first.mjs, instructions-402.mjs). Instrumentation is off from the start and turned on only
// around the work measured; the counts cover every workerd thread.
import { execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { stopGroup } from "./workerd-config.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Serves `cfg` with `workerd` under callgrind in `dir` and resolves once `probeUrl` answers 2xx.
 * `instrument(true)` zeroes the counters and turns them on; `instrument(false, tag)` turns them off,
 * dumps under `tag` and resolves with the dump's total instructions (undefined if none came).
 */
export async function underCallgrind({ workerd, cfg, dir, probeUrl }) {
  const out = path.join(dir, "callgrind.out");
  const args = ["--tool=callgrind", "--instr-atstart=no", "--smc-check=all-non-file"];
  const child = spawn(
    "valgrind",
    [...args, `--callgrind-out-file=${out}.%p`, workerd, "serve", cfg, "--experimental"],
    {
      cwd: dir,
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
    },
  );
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr = (stderr + d).slice(-3000);
  });
  try {
    for (let t = 0; ; t++) {
      try {
        const r = await fetch(probeUrl);
        await r.arrayBuffer();
        if (r.ok) break;
      } catch {}
      if (child.exitCode !== null || t > 1500)
        throw new Error(`workerd under valgrind did not answer: ${stderr}`);
      await sleep(200);
    }
  } catch (e) {
    await stopGroup(child);
    throw e;
  }
  const ctl = (...a) =>
    execFileSync("callgrind_control", [...a, String(child.pid)], { stdio: ["ignore", "pipe", "pipe"] });
  return {
    pid: child.pid,
    async instrument(on, tag) {
      if (on) {
        ctl("-z");
        ctl("-i", "on");
        return undefined;
      }
      ctl("-i", "off");
      ctl("-d", tag);
      for (let t = 0; t < 300; t++) {
        await sleep(200);
        for (const f of readdirSync(dir).filter((f) => f.startsWith(`callgrind.out.${child.pid}.`))) {
          const dump = readFileSync(path.join(dir, f), "utf8");
          if (dump.includes(`desc: Trigger: dump ${tag}\n`))
            return Number(dump.match(/^totals:\s*(\d+)/m)?.[1]);
        }
      }
      return undefined;
    },
    stop: () => stopGroup(child),
  };
}

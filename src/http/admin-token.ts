import { adminTokenProblem } from "../config";
import type { Bindings } from "../env";
import { logOncePerValue } from "./log-once";

/**
 * Why /api/admin/* and /admin stay closed (503), if they do. An unset ADMIN_TOKEN is a supported
 * set-up (no admin); one that is set but too short is a mistake to fix, logged once per isolate
 * and value (never the token itself).
 */
export function adminTokenRefused(env: Bindings): string | undefined {
  const problem = adminTokenProblem(env);
  if (problem && env.ADMIN_TOKEN)
    logOncePerValue("ADMIN_TOKEN", env.ADMIN_TOKEN, {
      level: "error",
      msg: "admin token refused",
      error: problem,
    });
  return problem;
}

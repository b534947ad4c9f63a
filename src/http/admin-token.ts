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
  const token: unknown = env.ADMIN_TOKEN;
  // Keyed on the value (compared, never logged); one that is not text by its JSON.
  if (problem && token)
    logOncePerValue("ADMIN_TOKEN", typeof token === "string" ? token : JSON.stringify(token), {
      level: "error",
      msg: "admin token refused",
      error: problem,
    });
  return problem;
}

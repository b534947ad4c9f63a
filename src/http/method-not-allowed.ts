import type { Hono } from "hono";
import type { AppEnv } from "../env";

/**
 * Hono answers an unmatched method with notFound; a client that sent GET to a POST route deserves
 * a 405 with an Allow header. The route table is compiled once into (pattern, methods) pairs.
 * A GET route allows HEAD (Hono answers it with the GET handler), except the `headRefused` paths,
 * whose HEAD is a 405 of its own: their Allow must not name it either.
 */
export function allowedMethodsFinder(app: Hono<AppEnv>, headRefused: ReadonlySet<string> = new Set()) {
  let table: { pattern: RegExp; methods: Set<string> }[] | undefined;
  return (path: string): string[] => {
    if (!table) {
      const byPath = new Map<string, Set<string>>();
      for (const r of app.routes) {
        if (r.method === "ALL") continue;
        const set = byPath.get(r.path) ?? new Set<string>();
        set.add(r.method);
        if (r.method === "GET" && !headRefused.has(r.path)) set.add("HEAD");
        byPath.set(r.path, set);
      }
      table = [...byPath].map(([p, methods]) => ({
        pattern: new RegExp(
          `^${p
            .split("/")
            .map((seg) =>
              seg.startsWith(":") ? "[^/]+" : seg === "*" ? ".*" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"),
            )
            .join("/")}$`,
        ),
        methods,
      }));
    }
    const allowed = new Set<string>();
    for (const row of table) if (row.pattern.test(path)) for (const m of row.methods) allowed.add(m);
    return [...allowed].sort();
  };
}

import type { Context } from "hono";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { wantsHtml } from "../http/wants-html";
import { PageNotFound } from "../pages/not-found";
import { REFINERY_SKILL_PATH } from "../partners/refinery-skill";
import { skills } from "../skills/registry";

/** Every paid POST endpoint under /api/skills/ (the 15 skills and the refinery recipes skill). */
const SKILL_PATHS = new Set([...skills.map((s) => s.endpoint), REFINERY_SKILL_PATH]);

/** `Token_Count`, `token_count/` → `token-count`: the forms an agent guesses from the skill id. */
export const canonicalSlug = (slug: string) => slug.toLowerCase().replaceAll("_", "-").replace(/\/+$/, "");

/**
 * The canonical skill URL for a near miss (`/api/skills/token_count`, uppercase, trailing slash),
 * or undefined. Aliases answer with a redirect rather than running the skill themselves: the x402
 * price and the signed `resource` are bound to the canonical path, so a second path must never
 * serve paid content.
 */
export function skillAlias(path: string): string | undefined {
  const m = /^\/api\/skills\/([A-Za-z0-9_-]{1,64})\/*$/i.exec(path);
  if (!m?.[1]) return undefined;
  const canonical = `/api/skills/${canonicalSlug(m[1])}`;
  return canonical !== path && SKILL_PATHS.has(canonical) ? canonical : undefined;
}

/**
 * `/docs/`, `/api/catalog/`: a GET or HEAD with trailing slashes whose path without them takes
 * that method goes there (301, query kept, on the origin asked: see the skill aliases below); a
 * HEAD to a partner try route, whose HEAD is refused, is not sent on to a 405. Skill URLs are POST
 * and have their own 308 (skillAlias).
 */
function trailingSlashTarget(c: Context, allowedMethods: (path: string) => string[]): string | undefined {
  if (c.req.method !== "GET" && c.req.method !== "HEAD") return undefined;
  const path = c.req.path.replace(/\/+$/, "");
  if (path === c.req.path || !allowedMethods(path || "/").includes(c.req.method)) return undefined;
  // The path set, not resolved: `//host/` must stay on this origin, not become `//host`.
  const target = new URL(c.req.url);
  target.pathname = path || "/";
  return target.href;
}

/**
 * Unmatched requests: a near-miss skill URL is a 308 to the canonical one (fetch and `curl -L`
 * repeat the POST with its body), with the URL in `did_you_mean` for clients that do not follow;
 * a known path with the wrong method is 405 with Allow; anything else is 404, as the HTML page
 * for a browser and as `{"detail":"Not Found"}` for everyone else.
 */
export function notFound(allowedMethods: (path: string) => string[]) {
  return (c: Context<AppEnv>) => {
    const alias = skillAlias(c.req.path);
    if (alias) {
      // On the origin the request came to: Cloudflare routes only the deployment's own hosts here,
      // and a redirect to BASE_URL from workers.dev would be cross-origin (fetch drops the
      // Authorization of a card-credit key across origins).
      const target = new URL(alias, c.req.url);
      target.search = new URL(c.req.url).search;
      // 308 keeps the method and body.
      return c.json(
        {
          detail: `Skill URLs use the slug (lowercase, hyphens, no trailing slash): use ${alias}`,
          did_you_mean: target.href,
        },
        308,
        { Location: target.href },
      );
    }
    const allowed = allowedMethods(c.req.path);
    if (allowed.length > 0 && !allowed.includes(c.req.method)) {
      c.header("Allow", allowed.join(", "));
      return detail(c, 405, "Method Not Allowed");
    }
    const slashless = trailingSlashTarget(c, allowedMethods);
    // A browser keeps a 301 with no freshness information for ever: an hour, so it can be taken back.
    if (slashless) {
      c.header("Cache-Control", "public, max-age=3600");
      return c.redirect(slashless, 301);
    }
    // The body follows Accept, so a cache must key on it; and a 404 is cacheable by default
    // (RFC 9111 §4.2.2): stored, it outlives the deploy that adds the path, and Vary: Accept
    // splits it per browser. It costs nothing to make again.
    c.header("Vary", "Accept");
    c.header("Cache-Control", "no-store");
    if (wantsHtml(c) && c.req.method !== "POST") return c.html(<PageNotFound path={c.req.path} />, 404);
    return detail(c, 404, "Not Found");
  };
}

import { Hono } from "hono";
import * as z from "zod";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { pathParams } from "../http/validation";
import { AppletPage } from "../pages/applet";
import { DocsIndexPage, SkillDocPage } from "../pages/docs";
import { HomePage } from "../pages/home";
import { McpDocsPage } from "../pages/mcp-docs";
import { NotFoundPage } from "../pages/not-found";
import { listedPartnerPricing } from "../partners/request";
import { skillBySlug } from "../skills/registry";
import { reliabilityLine, reliabilityShort, statsIfAvailable } from "../stats/published";
import { canonicalSlug } from "./not-found";

export const pageRoutes = new Hono<AppEnv>();

const docSlug = z.object({
  slug: z.string().regex(/^[a-z0-9-]{1,64}$/, "slug must be lowercase letters, digits and -"),
});

// Security headers (strict CSP, DENY framing) come from the app-wide middleware, src/http/security-headers.ts.

// The home page quotes partner prices; while the partner configuration is refused it leaves the
// partners out (their routes answer 503), rather than taking the site's front page down.
pageRoutes.get("/", async (c) => {
  const doc = await statsIfAvailable(c);
  return c.html(
    <HomePage
      cfg={publicConfig(c.env, c.req.url)}
      pc={listedPartnerPricing(c)}
      reliability={doc && ((id) => reliabilityShort(doc, id))}
    />,
  );
});
pageRoutes.get("/applet", (c) => c.html(<AppletPage cfg={publicConfig(c.env, c.req.url)} />));
pageRoutes.get("/docs", async (c) => {
  const doc = await statsIfAvailable(c);
  return c.html(<DocsIndexPage reliability={doc && ((id) => reliabilityShort(doc, id))} />);
});
// `/docs/token_count`, `/docs/Token-Count`, `/docs/token-count/`: a person or agent guessed the page
// from the skill id; send them to it rather than to a validation error.
pageRoutes.use("/docs/*", async (c, next) => {
  const asked = c.req.path.slice("/docs/".length);
  const slug = canonicalSlug(asked);
  if (slug !== asked && skillBySlug(slug)) return c.redirect(`/docs/${slug}`, 301);
  return next();
});
// /docs/mcp by name on /docs/:slug, not a static route beside it (see routes/stats.tsx).
pageRoutes.get("/docs/:slug", async (c, next) => {
  if (c.req.param("slug") !== "mcp") return next();
  return c.html(
    <McpDocsPage cfg={publicConfig(c.env, c.req.url)} partners={listedPartnerPricing(c) !== undefined} />,
  );
});
pageRoutes.get("/docs/:slug", pathParams(docSlug), async (c) => {
  const { slug } = c.req.valid("param");
  const skill = skillBySlug(slug);
  if (!skill) return c.html(<NotFoundPage slug={slug} />, 404);
  const doc = await statsIfAvailable(c);
  return c.html(
    <SkillDocPage
      cfg={publicConfig(c.env, c.req.url)}
      skill={skill}
      reliability={doc && reliabilityLine(doc, skill.id)}
    />,
  );
});

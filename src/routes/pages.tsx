import { Hono } from "hono";
import { secureHeaders } from "hono/secure-headers";
import { z } from "zod";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { partnersMisconfigured } from "../http/errors";
import { pathParams } from "../http/validation";
import { AppletPage } from "../pages/applet";
import { DocsIndexPage, NotFoundPage, SkillDocPage } from "../pages/docs";
import { HomePage } from "../pages/home";
import { pricingConfig } from "../partners/listing";
import { skillBySlug } from "../skills/registry";
import { reliabilityLine, reliabilityShort, statsIfAvailable, waitUntilOf } from "../stats/published";

export const pageRoutes = new Hono<AppEnv>();

/** Strict CSP: same-origin scripts, styles and requests only; nothing inline, nothing external. */
export const pageSecurity = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'"],
    connectSrc: ["'self'"],
    formAction: ["'self'"],
    baseUri: ["'none'"],
    frameAncestors: ["'none'"],
  },
  referrerPolicy: "no-referrer",
});

const docSlug = z.object({
  slug: z.string().regex(/^[a-z0-9-]{1,64}$/, "slug must be lowercase letters, digits and -"),
});

pageRoutes.use("/", pageSecurity);
pageRoutes.use("/applet", pageSecurity);
pageRoutes.use("/docs", pageSecurity);
pageRoutes.use("/docs/*", pageSecurity);

pageRoutes.get("/", (c) => {
  // The home page quotes partner prices; a bad multiplier is a 503 here as on /api/partners.
  const pc = pricingConfig(c.env);
  if ("error" in pc) return partnersMisconfigured(c, pc.error);
  return c.html(<HomePage cfg={publicConfig(c.env, c.req.url)} pc={pc} />);
});
pageRoutes.get("/applet", (c) => c.html(<AppletPage cfg={publicConfig(c.env, c.req.url)} />));
pageRoutes.get("/docs", async (c) => {
  const doc = await statsIfAvailable(c.env.DB, c.req.url, waitUntilOf(c));
  return c.html(<DocsIndexPage reliability={doc && ((id) => reliabilityShort(doc, id))} />);
});
pageRoutes.get("/docs/:slug", pathParams(docSlug), async (c) => {
  const { slug } = c.get("params") as z.infer<typeof docSlug>;
  const skill = skillBySlug(slug);
  if (!skill) return c.html(<NotFoundPage slug={slug} />, 404);
  const doc = await statsIfAvailable(c.env.DB, c.req.url, waitUntilOf(c));
  return c.html(
    <SkillDocPage
      cfg={publicConfig(c.env, c.req.url)}
      skill={skill}
      reliability={doc && reliabilityLine(doc, skill.id)}
    />,
  );
});

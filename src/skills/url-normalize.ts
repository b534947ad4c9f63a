import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const urlNormalize = defineSkill({
  id: "url_normalize",
  name: "URL normalize",
  category: "web_utils",
  price_usd: 0.005,
  kind: "utility",
  description:
    "Normalize a URL with WHATWG parsing: force https, lowercase the host, drop the default port and fragment, resolve dot segments, strip tracking parameters (utm_*, gclid, fbclid, ...) and sort the query. Returns the canonical URL and its components. Deterministic and offline.",
  input: z.object({
    url: z.string().min(1).max(8000).meta({ description: "URL to normalize." }),
    options: z.looseObject({}).nullable().default(null).meta({ description: "Free-form; reserved." }),
  }),
  example_request: { url: "HTTP://Example.COM:80/a/../b/?utm_source=x&z=2&a=1#top" },
  example_response: { skill: "url_normalize", ok: true },
  run: () => notImplemented(),
});

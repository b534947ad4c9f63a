import { env } from "cloudflare:test";

/** Origin of the fixture upstreams (test/fixtures/upstreams.mjs). */
export const FIXTURE = new URL(env.WIKIPEDIA_API_BASE).origin;

/** How many requests the fixture upstreams have logged whose decoded path+query contains `match`. */
export async function upstreamRequests(match: string): Promise<number> {
  const res = await fetch(`${FIXTURE}/_requests?match=${encodeURIComponent(match)}`);
  return (await res.json<{ count: number }>()).count;
}

/** A string no other test uses, so cache entries and request counts are this test's own. */
export const unique = (prefix: string) => `${prefix} ${crypto.randomUUID().slice(0, 8)}`;

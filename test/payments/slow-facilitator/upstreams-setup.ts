// @ts-expect-error plain JS fixture shared with local tooling
import { startUpstreams } from "../../fixtures/upstreams.mjs";

/** The fixture upstreams again, on a port of their own: this project's facilitator is their slow page. */
export default async function setup() {
  const upstreams = await startUpstreams({ port: Number(process.env.TEST_SLOW_UPSTREAMS_PORT) });
  return () => upstreams.stop();
}

import type { Bindings } from "../env";
import { baseUrlOf } from "./config";
import {
  fetchOnHost,
  PartnerDeadline,
  parseBody,
  readCapped,
  type TryTarget,
  UpstreamFailure,
  type UpstreamResult,
} from "./upstream";

/**
 * One call to a partner for a try route: its own origin only, one deadline, a capped answer, and
 * (for a partner that asks x402 itself) paid from the operating wallet once the caller has paid.
 */
export async function callPartner(env: Bindings, t: TryTarget, requestId: string): Promise<UpstreamResult> {
  const url = new URL(`${baseUrlOf(t.partner, t.pc)}${t.path}`);
  const headers = new Headers(t.service.test_headers ?? {});
  headers.set("user-agent", "AgentSkillsMarketplace/2.7.1 (partner try proxy)");
  // One 10 s deadline for the partner's part of the call: every redirect hop, the paid retry and
  // the body read; the caller's settlement in between does not count (PartnerDeadline).
  const deadline = new PartnerDeadline();
  const init: RequestInit = { method: t.service.method, headers, signal: deadline.signal };
  if (t.service.method === "POST") {
    // The external partner is only probed with its own sample, never with what the caller sent.
    const body = t.partner.listing_status === "external_x403" ? undefined : t.body;
    headers.set("content-type", "application/json");
    init.body = JSON.stringify(body ?? t.service.test_body ?? {});
  }
  let res = await fetchOnHost(url, init, fetch);
  let upstream: Partial<Pick<UpstreamResult, "paidUpstream" | "handedOverMicros" | "unrecorded">> = {};
  if (res.status === 402 && t.partner.listing_status === "paid") {
    // Loaded when a partner asks to be paid: the offer checks and signing stay out of start-up.
    const { payPartner } = await import("./pay-partner");
    ({ res, ...upstream } = await payPartner(env, t, requestId, url, init, res, deadline));
  }
  let text: string;
  try {
    text = await readCapped(res);
  } catch (e) {
    if (e instanceof UpstreamFailure) {
      e.handedOverMicros = upstream.handedOverMicros;
      e.unrecorded = upstream.unrecorded;
    }
    throw e;
  }
  return { status: res.status, body: parseBody(text, res.headers.get("content-type")), ...upstream };
}

import { publicConfig } from "../config";
import type { Bindings } from "../env";
import { baseUrlOf } from "./config";
import { recentOperatingBalance } from "./operating-balance";
import { servicePrices } from "./pricing";
import {
  fetchOnHost,
  PartnerDeadline,
  parseBody,
  readCapped,
  readCappedIfDecodable,
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
  // The operating wallet's balance, needed only if a paid partner answers 402: read beside that
  // first request, so it adds no round trip (it never rejects); a short one is reused for 15 s.
  const balance =
    t.partner.listing_status === "paid" && t.collect
      ? recentOperatingBalance(
          env,
          publicConfig(env, "http://localhost").usdcAddress,
          servicePrices(t.service, t.pc.multiplierMilli).partnerMicros,
          requestId,
        )
      : Promise.resolve(undefined);
  const res = await fetchOnHost(url, init, fetch);
  if (t.partner.listing_status === "external_x403" && res.status === 403) {
    // Its grant challenge is only reported (upstream_status 403): a body that does not decode is
    // relayed as none (null), it does not turn the probe into the partner's 502.
    const text = await readCappedIfDecodable(res);
    return { status: 403, body: text === null ? null : parseBody(text, res.headers.get("content-type")) };
  }
  if (res.status !== 402 || t.partner.listing_status !== "paid")
    return { status: res.status, body: parseBody(await readCapped(res), res.headers.get("content-type")) };
  // Loaded when a partner asks to be paid: the offer checks and signing stay out of start-up.
  const { payPartner } = await import("./pay-partner");
  const { res: paidRes, ...upstream } = await payPartner(
    env,
    t,
    requestId,
    url,
    init,
    res,
    deadline,
    balance,
  );
  try {
    const text = await readCapped(paidRes);
    return {
      status: paidRes.status,
      body: parseBody(text, paidRes.headers.get("content-type")),
      ...upstream,
    };
  } catch (e) {
    // The caller has paid and the partner may hold our authorization: whatever fails now (the
    // partner's answer, or a bug of ours reading it) carries what was handed over and the record
    // still to write, as payPartner's own failures do. Thrown bare, both were lost: the record's
    // retry never ran and the route could only guess, keeping the listed share in doubt.
    const failure =
      e instanceof UpstreamFailure ? e : new UpstreamFailure(502, "The partner call failed on our side");
    if (failure !== e)
      console.error(
        JSON.stringify({
          level: "error",
          request_id: requestId,
          error: `reading the paid partner's answer: ${e}`,
        }),
      );
    failure.handedOverMicros = upstream.handedOverMicros;
    failure.unrecorded = upstream.unrecorded;
    throw failure;
  }
}

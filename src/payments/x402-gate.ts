import type { PaywallProvider, RouteConfig, RoutesConfig } from "@x402/core/server";
import { x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import {
  FacilitatorResponseError,
  type PaymentPayload,
  type PaymentRequired,
  type PaymentRequirements,
  SettleError,
  type SettleResponse,
  VerifyError,
  type VerifyResponse,
} from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import {
  type BodyDiscoveryExtension,
  bazaarResourceServerExtension,
  declareDiscoveryExtension,
} from "@x402/extensions/bazaar";
import type { Context, MiddlewareHandler, Next } from "hono";
import { type PublicConfig, redactSecrets } from "../config";
import type { AppEnv, Bindings } from "../env";
import { detail } from "../http/errors";
import { logOncePerValue } from "../http/log-once";
import { requestConfig } from "../http/request-config";
import { SharedLoad, within } from "../http/shared-load";
import { microsToUsd, trimDecimal } from "../money";
import { type PricingConfig, pricingConfig } from "../partners/config";
import type { Partner, PartnerService } from "../partners/data";
import { tryInput } from "../partners/discovery";
import { skills } from "../skills/registry";
import { varText } from "../var-text";
import { withInputField } from "./bazaar-input";
import { paidExtensions } from "./paid-extensions";
import { markedByStatus, PendingAwareFacilitatorClient } from "./pending-settle";
import { type Sellable, sellables } from "./sellables";
import { usdcDomain } from "./usdc-domain";
import { x402AddressProblems } from "./x402-address";
import { x402HttpGate } from "./x402-http";
import { explain } from "./x402-offer-body";
import { MAX_TIMEOUT_SECONDS } from "./x402-terms";

/** x402 routes for everything sold per call (sellables.ts), at prices in atomic units. */
function routesFor(
  cfg: PublicConfig,
  items: readonly Sellable[],
  paid: Record<string, unknown>,
): RoutesConfig {
  const routes: Record<string, RouteConfig> = {};
  for (const item of items) {
    const amount = (micros: bigint) => ({
      amount: micros.toString(),
      asset: cfg.usdcAddress,
      extra: usdcDomain(cfg.network, cfg.usdcAddress),
    });
    const priceForBody = item.priceForBody;
    const config: RouteConfig = {
      accepts: {
        scheme: "exact",
        network: cfg.network as `${string}:${string}`,
        payTo: cfg.payTo,
        // Atomic units straight from the registry: no float conversion on the money path.
        price: priceForBody
          ? async (ctx) => amount(priceForBody(await ctx.adapter.getBody?.()) ?? item.priceMicros)
          : amount(item.priceMicros),
        maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      },
      resource: `${cfg.baseUrl}${item.path}`,
      description: item.description,
      mimeType: "application/json",
      serviceName: "Agent Skills Marketplace",
      tags: item.tags,
      unpaidResponseBody: () => ({ contentType: "application/json", body: {} }),
      settlementFailedResponseBody: (_ctx, result) => ({
        contentType: "application/json",
        body: {
          error: `Settlement failed: ${result.errorMessage ?? result.errorReason}. You were not charged.`,
          reason: result.errorReason,
        },
      }),
    };
    // The bazaar discovery extension: what the route takes and returns, for Bazaar crawlers (and,
    // in v1 form, the 402 body's outputSchema: x402-offer-body.ts). Declared here, once per gate;
    // the x402 server adds the request's method to it (bazaarResourceServerExtension), and the
    // paid path checks a payment's echo of it against the same declaration.
    const skillDiscovery = item.example
      ? declareDiscoveryExtension({
          bodyType: "json",
          input: item.example.input,
          inputSchema: item.example.inputSchema,
          output: { example: item.example.output },
        })
      : undefined;
    for (const method of item.methods) {
      const discovery = item.partner
        ? partnerDiscovery(item.partner.partner, item.partner.service, method)
        : skillDiscovery;
      // payment-identifier, offer-receipt (paid-extensions.ts)
      routes[`${method} ${item.path}`] = { ...config, extensions: { ...paid, ...discovery } };
    }
  }
  return routes;
}

/**
 * A partner try route's bazaar declaration for one method, from the listing (partners/discovery.ts):
 * a GET takes the upstream path's values in its query; a POST also a JSON body. The body form has
 * no slot of its own for query parameters, which the bazaar spec allows beside a body: added to
 * its info and schema when the service's path has any.
 */
function partnerDiscovery(partner: Partner, service: PartnerService, method: "GET" | "POST") {
  const { query, body } = tryInput(partner, service, method);
  if (!body) return declareDiscoveryExtension({ input: query.example, inputSchema: query.schema });
  const { bazaar } = declareDiscoveryExtension({
    bodyType: "json",
    input: body.example,
    inputSchema: body.schema,
  }) as { bazaar: BodyDiscoveryExtension };
  if (!Object.keys(query.schema.properties).length) return { bazaar };
  return {
    bazaar: withInputField(bazaar, "queryParams", query.example, { type: "object", ...query.schema }),
  };
}

/**
 * The routes a card-credit key pays for: the skills' own (payments/gate.ts, mounted on every skill
 * route), which checkout sells keys for. Partner try routes and refinery recipes take x402 only.
 */
const CARD_KEY_PATHS: ReadonlySet<string> = new Set(skills.map((s) => s.endpoint));

/**
 * Browsers that POST here get a small page of their own instead of the optional @x402/paywall
 * bundle: the price the 402 offers, and where to read about the call and buy it by card. Written
 * out here, not with pages/layout.tsx (pages and discovery import payments, not the other way
 * round), with the site's stylesheet and no script or inline style (the pages' CSP). The card link
 * only where card payments are on (`cardpay`).
 */
const plainPaywall = (cardpay: boolean): PaywallProvider => ({
  generateHtml: (required: PaymentRequired) => {
    const esc = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
    const offer = required.accepts[0];
    let path = "";
    try {
      path = new URL(required.resource?.url ?? "").pathname;
    } catch {}
    // Card keys buy a skill's own calls; partner routes and refinery recipes take x402 only.
    const skill = skills.find((s) => s.endpoint === path);
    const docs = skill ? `/docs/${skill.slug}` : "/docs";
    const price = offer
      ? `<p>This call costs <strong>$${esc(trimDecimal(microsToUsd(offer.amount)))}</strong> (${esc(offer.amount)} atomic units of USDC on ${esc(offer.network)}), paid with x402: an agent's client reads this answer's <code>PAYMENT-REQUIRED</code> header, signs the payment and sends the request again.</p>`
      : "<p>This call is paid per call with x402.</p>";
    return [
      '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
      "<title>Payment required · Agent Skills Marketplace</title>",
      '<link rel="icon" href="/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/assets/site.css">',
      `</head><body><main id="main"><h1>Payment required</h1>`,
      skill ? `<p class="lead">${esc(skill.name)}: <code>POST ${esc(skill.endpoint)}</code></p>` : "",
      price,
      "<ul>",
      `<li><a href="${docs}">${skill ? `How to call ${esc(skill.name)}` : "The docs"}</a>: the request body, examples and how to pay from code.</li>`,
      skill && cardpay
        ? `<li><a href="${docs}#card-credits">Buy a pack of calls by card</a>: a key for calls of this skill, no wallet needed.</li>`
        : "",
      '<li><a href="/applet">Try it in the browser</a>: see the price and pay with a browser wallet.</li>',
      "</ul></main></body></html>",
    ].join("");
  },
});

export function configProblem(cfg: PublicConfig): string | undefined {
  // PAY_TO ships empty: a deployment must name its own wallet before anything is sold.
  if (!cfg.payTo) return "payments are not configured (PAY_TO is not set)";
  // The deploy check refuses the same (x402AddressProblems), but vars change after it.
  const address = x402AddressProblems(cfg.network, cfg.usdcAddress, cfg.payTo)[0];
  if (address) return address;
  try {
    new URL(cfg.facilitatorUrl);
  } catch {
    return "FACILITATOR_URL is not a URL";
  }
  return undefined;
}

interface Built {
  key: string;
  middleware: MiddlewareHandler;
  /** The first /supported read of this gate, shared by the requests that arrive while it runs. */
  ready: SharedLoad<void>;
  /** When /supported was last read successfully; undefined until the first success. */
  readyAt: number | undefined;
  /**
   * The last first read that failed, answered from for its back-off (ensureReady), and how many
   * first reads have failed in a row (the back-off grows with them: failedReadBackoffMs).
   */
  failed: { at: number; message: string; streak: number } | undefined;
  /**
   * The number of the latest first read started, and when it started. A stale read (replaced by
   * SharedLoad after 10 s) that fails late is remembered unless the read after it may still
   * succeed: one younger than READY_WAIT_MS, which the requests now waiting are joined to. Were
   * every superseded failure ignored, a facilitator whose reads fail after 10-40 s (a gateway's
   * 504) would never be backed off under steady traffic.
   */
  readGeneration: number;
  readStartedAt: number;
  /** The background re-read after the TTL (refreshInBackground). */
  refreshing: SharedLoad<void>;
  httpServer: x402HTTPResourceServer;
}
/**
 * The gates of this isolate, one per configuration. With BASE_URL unset, the origin is part of
 * the configuration (resource URLs name it), so a deployment reached on workers.dev and on its own
 * domain keeps one gate for each; a single slot rebuilt the gate (a /supported read, and every
 * cached 402 dropped) whenever requests alternated between them. Bounded, least recently used out
 * first: clearing them all when full dropped the gates in use with the rest.
 */
const gates = new Map<string, Built>();
const MAX_GATES = 8;
let lastUsed: string | undefined;

/**
 * How long one /supported answer is trusted before it is re-read. The re-read runs in the
 * background on a fresh server (initialize() empties the server's tables while it waits), and the
 * isolate keeps answering from the current one until the new one is ready.
 */
export const SUPPORTED_TTL_MS = 10 * 60_000;

/**
 * How long a request waits for the first /supported read before it answers 503, and how long that
 * read is joined before the next request starts another (shared-load.ts: a read whose request was
 * cancelled never settles). Well under the facilitator client's 45 s: /supported is a small static
 * answer, and a buyer is better told to retry than held for a facilitator that is not answering.
 */
export const READY_WAIT_MS = 10_000;

/**
 * A background re-read still pending after this is taken for dead and started again. waitUntil
 * keeps it at most 30 s past its request's answer; one cut off there never settled, and the
 * isolate never re-read /supported again.
 */
export const REFRESH_STALE_MS = 60_000;

/**
 * How long a failed first /supported read answers for its gate, at most: the requests in that time
 * get the same 503 (Retry-After: what is left of it) without a read of their own. A failed read was
 * not kept, so during an outage every unpaid request made an outbound /supported fetch and wrote
 * the library's warning. The back-off grows with the reads that failed in a row
 * (FIRST_FAILED_READ_BACKOFF_MS, doubled each time, up to this) and starts again after a good read:
 * a single blip (a 502, a reset) costs the gate about a second, where a flat 15 s answered every
 * x402 call of a fresh isolate 503 for 15 s; a facilitator that stays down is read once per 15 s
 * per isolate and configuration, and one that is back is used within the time a buyer told to
 * retry waits anyway.
 */
export const FAILED_READ_BACKOFF_MS = 15_000;
/** The back-off after the first failed read of a streak: 1 s, then 2, 4, 8, 15 (the cap). */
export const FIRST_FAILED_READ_BACKOFF_MS = 1_000;

/** The back-off after `streak` first reads failed in a row. */
export const failedReadBackoffMs = (streak: number) =>
  Math.min(FIRST_FAILED_READ_BACKOFF_MS * 2 ** Math.max(0, streak - 1), FAILED_READ_BACKOFF_MS);

/**
 * What a request's bindings say about payments, checked once per bindings object (an isolate
 * keeps one): the CPU profile of the unpaid 402 showed the address checksums (keccak) and the
 * partner pricing parse on every request otherwise.
 */
const envFacts = new WeakMap<Bindings, { problem: string | undefined; pc: PricingConfig | undefined }>();
function factsOf(env: Bindings, cfg: PublicConfig) {
  let facts = envFacts.get(env);
  if (!facts) {
    // Partner prices need only the multiplier; if it is bad, skills are still sold (partner
    // routes answer 503 themselves).
    const pricing = pricingConfig(env);
    facts = { problem: configProblem(cfg), pc: "error" in pricing ? undefined : pricing };
    envFacts.set(env, facts);
  }
  return facts;
}

/**
 * The key of a configuration: a change rebuilds the gate (and its cached 402 answers). Kept per
 * configuration object (publicConfig makes one per bindings object and origin), so a request
 * does not join the key again.
 */
const configKeys = new WeakMap<PublicConfig, ReturnType<typeof makeConfigKey>>();
function configKey(env: Bindings, cfg: PublicConfig) {
  let k = configKeys.get(cfg);
  if (!k) {
    k = makeConfigKey(env, cfg);
    configKeys.set(cfg, k);
  }
  return k;
}

function makeConfigKey(env: Bindings, cfg: PublicConfig) {
  const { pc } = factsOf(env, cfg);
  // payment-identifier and signed offers (paid-extensions.ts); the receipt key (kid and public half) is in the key.
  const paid = paidExtensions(env, cfg.baseUrl);
  const key = [
    paid.id,
    cfg.network,
    cfg.payTo,
    cfg.usdcAddress,
    cfg.facilitatorUrl,
    // The facilitator client's credentials (cdpAuth): the id names the key; Coinbase issues a new
    // id with a new secret.
    varText(env.CDP_API_KEY_ID) && varText(env.CDP_API_KEY_SECRET)
      ? `cdp:${varText(env.CDP_API_KEY_ID)}`
      : "no-cdp",
    cfg.baseUrl,
    pc?.multiplierMilli ?? "no-partners",
    // The browser's 402 page links the card checkout only where it is on.
    cfg.cardpayEnabled ? "card" : "no-card",
  ].join("|");
  return { key, pc, paid };
}

/**
 * The x402 middleware is built on first use in an isolate (no I/O at start-up) and rebuilt only
 * when the configuration changes. Facilitator sync happens here too, so a facilitator that is
 * down or does not support the network becomes a clear 503 instead of a crash.
 */
function build(env: Bindings, cfg: PublicConfig): Built {
  const config = configKey(env, cfg);
  const known = gates.get(config.key);
  if (known) {
    // Most recently used last (a Map keeps insertion order); the common case is already last.
    if (config.key !== lastUsed) {
      gates.delete(config.key);
      gates.set(config.key, known);
      lastUsed = config.key;
    }
    return known;
  }
  if (gates.size >= MAX_GATES) gates.delete(gates.keys().next().value as string);
  const made = create(env, cfg, config);
  gates.set(config.key, made);
  lastUsed = config.key;
  return made;
}

function create(env: Bindings, cfg: PublicConfig, { key, pc, paid }: ReturnType<typeof configKey>): Built {
  const facilitator = facilitatorClient(env, cfg);
  const server = new x402ResourceServer(facilitator).register(
    cfg.network as `${string}:${string}`,
    new ExactEvmScheme(),
  );
  for (const extension of paid.server) server.registerExtension(extension);
  const httpServer = new x402HTTPResourceServer(
    server,
    routesFor(cfg, sellables(cfg, pc), paid.declarations),
  );
  httpServer.registerPaywallProvider(plainPaywall(cfg.cardpayEnabled));
  // The bazaar extension enriches the discovery info of every 402 (as @x402/hono registered it).
  server.registerExtension(bazaarResourceServerExtension);
  return {
    key,
    httpServer,
    ready: new SharedLoad(READY_WAIT_MS),
    readyAt: undefined,
    failed: undefined,
    readGeneration: 0,
    readStartedAt: 0,
    refreshing: new SharedLoad(REFRESH_STALE_MS),
    middleware: x402HttpGate(httpServer, {
      explainUnpaid: (header, path) => explain(header, undefined, CARD_KEY_PATHS.has(path)),
    }),
  };
}

/**
 * Re-reads /supported on a fresh gate and swaps it in on success; never awaited by a request. One
 * re-read at a time (a request past the TTL joins the one running), kept alive by the starting
 * request's waitUntil, and started again if it is still pending after REFRESH_STALE_MS.
 */
function refreshInBackground(b: Built, env: Bindings, cfg: PublicConfig) {
  void b.refreshing.get(() => {
    const next = create(env, cfg, configKey(env, cfg));
    return next.httpServer.initialize().then(
      () => {
        next.readyAt = Date.now();
        if (gates.get(b.key) === b) gates.set(b.key, next);
      },
      (e) => {
        // Keep serving the answer we have; try again after another TTL. A JSON line, as every
        // other line of ours (this was the one plain-text line).
        console.warn(
          JSON.stringify({
            level: "warn",
            msg: "facilitator /supported re-read failed",
            error: redactSecrets(readFailure(e), env),
          }),
        );
        b.readyAt = Date.now();
        throw e; // not kept: the re-read after the next TTL starts afresh
      },
    );
  });
}

/** The reason a facilitator gives for its own failure while verifying (x402's error codes). */
const UNEXPECTED_VERIFY_ERROR = "unexpected_verify_error";

/**
 * A facilitator client whose /verify without a facilitator's verdict reaches the gate as an outage.
 * @x402/core answers any error thrown while verifying (a dropped connection, a gateway's HTML page,
 * a 5xx) as a 402 carrying the error's text, which the buyer read as its own invalid payment: "send
 * a new payment", when nothing was wrong with it. Only a FacilitatorResponseError passes through
 * the library, so every verify that brought no verdict is thrown as one, and the gate answers it
 * 503 facilitator_unavailable, retry (x402-http.ts). A verdict is an answer carrying `isValid`
 * with a reason sent with any HTTP status but 429; the facilitator's own unexpected_verify_error is
 * none, and neither is a 429 in a verdict's shape (a rate limit says nothing about the payment).
 *
 * Its settle answers sent with a 5xx or a 429 have their reason marked with the status
 * (markedByStatus), so that settlement.ts never reads one as a refusal before sending.
 */
class OutageAwareFacilitatorClient extends PendingAwareFacilitatorClient {
  /** Hides the facilitator URL's key in an error's text (redactSecrets; set by facilitatorClient). */
  redact: (text: string) => string = (text) => text;

  /**
   * A failed /supported read's text, redacted before @x402/core sees it: the library writes it
   * into its own plain-text warning ("Failed to fetch supported kinds from facilitator: …"), and an
   * error page quoting the keyed path asked for ("Cannot GET /v2/<key>/supported") put the key there.
   */
  override async getSupported() {
    try {
      return await super.getSupported();
    } catch (e) {
      throw new Error(this.redact(errorText(e)));
    }
  }

  override async verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    let result: VerifyResponse;
    try {
      result = await super.verify(payload, requirements);
    } catch (e) {
      const verdict =
        e instanceof VerifyError &&
        e.statusCode !== 429 &&
        e.invalidReason &&
        e.invalidReason !== UNEXPECTED_VERIFY_ERROR;
      if (verdict) throw new VerifyError(e.statusCode, this.redactedVerdict({ isValid: false, ...e }));
      if (e instanceof FacilitatorResponseError) throw this.redactedError(e);
      throw new FacilitatorResponseError(this.redact(`/verify failed: ${errorText(e)}`));
    }
    if (!result.isValid && result.invalidReason === UNEXPECTED_VERIFY_ERROR) {
      throw new FacilitatorResponseError(
        this.redact(
          `/verify failed: ${UNEXPECTED_VERIFY_ERROR}${result.invalidMessage ? ` (${result.invalidMessage})` : ""}`,
        ),
      );
    }
    return this.redactedVerdict(result);
  }

  /**
   * Every settle failure's text redacted: @x402/core copies it into the PAYMENT-RESPONSE header, and
   * we into the 502's facilitator_reason, our log line and a refund's row; an error page quoting
   * the keyed path asked for ("Cannot POST /v2/<key>/settle") put the key in all of them. The
   * error keeps its class, status and fields (after markedByStatus), so the library and
   * settlement.ts read it as before.
   */
  override async settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    let result: SettleResponse;
    try {
      result = await super.settle(payload, requirements);
    } catch (e) {
      const marked = markedByStatus(e);
      if (marked instanceof SettleError)
        throw new SettleError(marked.statusCode, this.redactedSettle({ success: false, ...marked }));
      throw this.redactedError(marked);
    }
    return result.success ? result : this.redactedSettle(result);
  }

  /**
   * The same error with its text redacted in place, so that it keeps its class (a
   * FacilitatorTimeoutError stays one) and its cause; its stack quotes the message too.
   */
  private redactedError(e: unknown): Error {
    if (!(e instanceof Error)) return new Error(this.redact(String(e)));
    e.message = this.redact(e.message);
    if (e.stack) e.stack = this.redact(e.stack);
    return e;
  }

  private redactedVerdict<T extends VerifyResponse>(v: T): T {
    return v.invalidMessage ? { ...v, invalidMessage: this.redact(v.invalidMessage) } : v;
  }

  private redactedSettle<T extends SettleResponse>(s: T): T {
    return {
      ...s,
      ...(s.errorReason ? { errorReason: this.redact(s.errorReason) } : {}),
      ...(s.errorMessage ? { errorMessage: this.redact(s.errorMessage) } : {}),
    };
  }
}

/** The configured facilitator (also used to settle refunds from the operating wallet). */
export function facilitatorClient(env: Bindings, cfg: PublicConfig) {
  const client = new OutageAwareFacilitatorClient({
    url: cfg.facilitatorUrl,
    // Longer than a facilitator's own wait for the transaction receipt (Base: ~2 s blocks; the
    // local facilitator gives up at 30 s), so a slow chain comes back as `settlement_pending`
    // with the transaction hash rather than as a bare timeout (both are reported unconfirmed).
    timeoutMs: 45_000,
    ...cdpAuth(env),
  });
  client.redact = (text) => redactSecrets(text, env);
  return client;
}

function cdpAuth(env: Bindings) {
  // Coinbase's hosted facilitator authenticates with a CDP key; the header factory is only
  // loaded when the secrets exist, so self-hosted facilitators cost nothing.
  const id = varText(env.CDP_API_KEY_ID);
  const secret = varText(env.CDP_API_KEY_SECRET);
  if (!id || !secret) return {};
  return {
    createAuthHeaders: async () => {
      const { createCdpAuthHeaders } = await import("@coinbase/x402");
      const create = createCdpAuthHeaders(id, secret);
      if (!create) throw new Error("CDP credentials were not accepted");
      return create();
    },
  };
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * A failed /supported read's text for the log: the library's "no supported payment kinds" hides
 * the facilitator's own answer in its cause.
 */
const readFailure = (e: unknown) =>
  `${errorText(e)}${e instanceof Error && e.cause !== undefined ? `: ${errorText(e.cause)}` : ""}`;

/**
 * The first /supported read of `b`. A failure is remembered on the gate (answered from for its
 * back-off) unless a read started after this one may still succeed (readStartedAt), and logged
 * here, once per read: every request that joined it shares it.
 */
function readSupported(b: Built, env: Bindings): Promise<void> {
  const generation = ++b.readGeneration;
  b.readStartedAt = Date.now();
  return b.httpServer.initialize().then(
    () => {
      b.failed = undefined;
      // Ready even if every request that waited for it gave up (a stale read answering late): a
      // later read would clear the tables this one filled.
      b.readyAt ??= Date.now();
    },
    (e) => {
      if (generation === b.readGeneration || Date.now() - b.readStartedAt >= READY_WAIT_MS) {
        b.failed = { at: Date.now(), message: errorText(e), streak: (b.failed?.streak ?? 0) + 1 };
      }
      console.error(
        JSON.stringify({
          level: "error",
          msg: "facilitator /supported failed",
          error: redactSecrets(readFailure(e), env),
        }),
      );
      throw e;
    },
  );
}

/** A failed first read still within its back-off: why, and the seconds left of it. */
function backingOff(b: Built, now = Date.now()) {
  const left = b.failed ? b.failed.at + failedReadBackoffMs(b.failed.streak) - now : 0;
  return b.failed && left > 0 ? { error: b.failed.message, retryAfterS: Math.ceil(left / 1000) } : undefined;
}

/**
 * The first /supported read, joined or started, waited for at most READY_WAIT_MS; or why not (and
 * when to retry, after a read that failed).
 */
async function ensureReady(
  b: Built,
  env: Bindings,
): Promise<{ error: string; retryAfterS?: number } | undefined> {
  const remembered = backingOff(b);
  if (remembered) return remembered;
  try {
    await within(
      b.ready.get(() => readSupported(b, env)),
      READY_WAIT_MS,
    );
    b.readyAt ??= Date.now();
    return undefined;
  } catch (e) {
    // A read that failed is answered from until its back-off ends; one that has not answered
    // within READY_WAIT_MS is joined by the next request until it is stale (shared-load.ts).
    return backingOff(b) ?? { error: errorText(e) };
  }
}

/**
 * What /health may say of the facilitator without asking it (routes/health.ts): `ok` is false
 * while this isolate's gate for the configuration is backing off from a failed /supported read
 * (1 s after the first failure, up to 15 s): paid calls answer 503 without asking meanwhile. After
 * the back-off the next paid call asks again, so a facilitator that has recovered on a quiet
 * isolate no longer reads as down. Nothing says whether a paid call has run here, and never the
 * error's text (the 503 and the log line carry it): a fixed phrase.
 */
export function facilitatorState(env: Bindings, cfg: PublicConfig): { ok: boolean; error?: string } {
  const b = gates.get(configKey(env, cfg).key);
  if (!b || !backingOff(b)) return { ok: true };
  return {
    ok: false,
    error:
      "the facilitator's /supported could not be read: paid calls answer 503 (log: facilitator /supported failed)",
  };
}

/**
 * x402 v2 payment for one call. Only for routes that are sold (sellables.ts) at this moment. Not
 * async once `/supported` was read: every unpaid call comes here (gate.ts says why).
 */
export const x402Gate: MiddlewareHandler<AppEnv> = (c, next) => {
  const cfg = requestConfig(c);
  const { problem } = factsOf(c.env, cfg);
  if (problem) {
    // Every paid call is refused until the configuration is fixed: said once per isolate and problem.
    const { payTo, network, usdcAddress, facilitatorUrl } = cfg;
    logOncePerValue("x402 configuration", `${payTo}\n${network}\n${usdcAddress}\n${facilitatorUrl}`, {
      level: "error",
      msg: "x402 payments misconfigured",
      error: problem,
    });
    return Promise.resolve(detail(c, 503, `x402 payments are misconfigured: ${problem}`));
  }
  const b = build(c.env, cfg);
  if (b.readyAt === undefined) return readyThenGate(c, next, b);
  if (Date.now() - b.readyAt > SUPPORTED_TTL_MS) refreshInBackground(b, c.env, cfg);
  return gated(c, next, b);
};

async function readyThenGate(c: Context<AppEnv>, next: Next, b: Built) {
  const failed = await ensureReady(b, c.env);
  if (failed) {
    const retry: Record<string, string> = failed.retryAfterS
      ? { "Retry-After": String(failed.retryAfterS) }
      : {};
    return detail(c, 503, `x402 payments are unavailable: facilitator: ${failed.error}`, {}, retry);
  }
  return gated(c, next, b);
}

const gated = (c: Context<AppEnv>, next: Next, b: Built) =>
  b.middleware(c, async () => {
    c.set("x402Verified", true);
    await next();
  });

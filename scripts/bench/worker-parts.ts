// Measurement-only Worker (stop 39): the app (createApp) and /__bench/noop, plus copies of a skill
// route's chain with one part removed or replaced (no /__bench/app-floor: pass --route to --free), each a small app of its own mounted at the real path and chosen by the
// query string (`?v=<variant>`; c.req.path carries no query, so the gate prices the real route).
// Each variant app has the app's outermost middleware (edge headers, the /api/* body limit and
// encoding check) and one route; `?v=full` is the whole chain, the control the others compare to.
// Built with scripts/bench/wrangler.parts.toml; counted with instructions-402.mjs --route.
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { createApp } from "../../src/app";
import type { AppEnv } from "../../src/env";
import { afterAnswerOf } from "../../src/http/after-response";
import { answerError } from "../../src/http/app-error";
import { bindingsPresent } from "../../src/http/bindings";
import { limitBody } from "../../src/http/body-limit";
import { chain } from "../../src/http/chain";
import { identityBodyOnly } from "../../src/http/content-encoding";
import { edgeHeaders } from "../../src/http/edge-headers";
import { detail } from "../../src/http/errors";
import { bodyText, jsonBody, parseJsonText } from "../../src/http/json-text";
import { MAX_BODY_BYTES } from "../../src/http/limits";
import { validate } from "../../src/http/validation";
import { cardCreditSpend, onlyBesideCardKey, paymentGate, x402BesideDryKey } from "../../src/payments/gate";
import { idempotent } from "../../src/payments/idempotency";
import { payerQuota, quota } from "../../src/payments/quotas";
import { signReceipt } from "../../src/payments/receipts";
import { guardAuthorization, recordPayment } from "../../src/payments/settlement";
import { explain402 } from "../../src/payments/x402-explain";
import { serializeOutput } from "../../src/skills/lib/raw-json";
import { skillBySlug } from "../../src/skills/registry";
import { runSkill } from "../../src/skills/run";
import type { Skill } from "../../src/skills/types";
import { recordCall } from "../../src/stats/record";

type Step = MiddlewareHandler<AppEnv>;

// A copy of src/routes/skills.ts's chain, in its order: when that chain changes, change this list,
// or the variants measure a chain the app no longer runs.
function steps(skill: Skill, drop: string): Step[] {
  const named: [string, Step][] = [
    ["bindings", bindingsPresent],
    ["record", recordCall(skill.id, () => Number(skill.price_atomic))],
    ["quota", quota(skill.id, { freeInBeta: true })],
    ["idempotent", idempotent({ cardKeys: true, freeInBeta: true })],
    ["receipt", signReceipt(skill.id)],
    ["explain", explain402],
    ["recordPayment", recordPayment(skill.id)],
    ["gate", paymentGate()],
    ["payerQuota", payerQuota(skill.id)],
    ["jsonBody", jsonBodyVariant(skill, drop)],
    ["cardSpend", cardCreditSpend(skill)],
    ["besideDry", x402BesideDryKey()],
    ["onlyBeside", onlyBesideCardKey(payerQuota(skill.id))],
    ["guard", guardAuthorization(skill.id)],
    ["handler", handlerVariant(skill, drop)],
  ];
  // "noPay": the 11 payment and idempotency steps gone at once; "bodyAndHandler": only the body
  // step and the handler left.
  const payment = ["quota", "idempotent", "receipt", "explain", "recordPayment", "gate", "payerQuota"];
  const gone = (n: string) =>
    n === drop ||
    (drop === "noPay" && [...payment, "cardSpend", "besideDry", "onlyBeside", "guard"].includes(n)) ||
    (drop === "bodyAndHandler" && !["jsonBody", "handler"].includes(n));
  return named.filter(([n]) => !gone(n)).map(([, s]) => s);
}

function jsonBodyVariant(skill: Skill, drop: string): Step {
  const real = jsonBody(() => skill.input, { exactIntegers: skill.exactIntegers });
  let validated: unknown;
  switch (drop) {
    case "bodyText": // Request.text() instead of the bytes and a strict decoder
      return async (c, next) => {
        const parsed = parseJsonText(await c.req.text(), skill.exactIntegers);
        if (!parsed.ok) throw new Error("bench body");
        const r = validate(skill.input, parsed.value, ["body"]);
        if (!r.ok) throw new Error("bench body");
        c.set("body", r.data);
        c.req.addValidatedData("json", r.data as object);
        await next();
      };
    case "scan": // JSON.parse alone, no scanJson
      return async (c, next) => {
        const b = await bodyText(c);
        if (!b.ok) throw new Error("bench body");
        const r = validate(skill.input, JSON.parse(b.text), ["body"]);
        if (!r.ok) throw new Error("bench body");
        c.set("body", r.data);
        c.req.addValidatedData("json", r.data as object);
        await next();
      };
    case "zod": // the body read and parsed, zod's verdict taken from the first call
      return async (c, next) => {
        const b = await bodyText(c);
        if (!b.ok) throw new Error("bench body");
        const parsed = parseJsonText(b.text, skill.exactIntegers);
        if (!parsed.ok) throw new Error("bench body");
        validated ??= skill.input.parse(parsed.value);
        c.set("body", validated);
        c.req.addValidatedData("json", validated as object);
        await next();
      };
    case "wholeBody": // no read at all: the first call's validated body
      return async (c, next) => {
        if (validated === undefined) {
          const b = await bodyText(c);
          if (!b.ok) throw new Error("bench body");
          validated = skill.input.parse(JSON.parse(b.text));
        }
        c.set("body", validated);
        c.req.addValidatedData("json", validated as object);
        await next();
      };
    default:
      return real;
  }
}

function handlerVariant(skill: Skill, drop: string): Step {
  const answer = (c: Context<AppEnv>, text: string) =>
    c.body(text, 200, { "content-type": "application/json" });
  let fixed: string | undefined;
  switch (drop) {
    case "assert": // runSkill without assertOutputSize
      return async (c) => {
        const out = await skill.run(c.get("body") as never, {
          env: c.env,
          requestId: c.get("requestId"),
          waitUntil: afterAnswerOf(c),
        });
        const shaped =
          skill.kind === "utility" ? { skill: skill.id, ok: true, ...out } : { skill: skill.id, ...out };
        return answer(c, serializeOutput(shaped));
      };
    case "serialize": // JSON.stringify instead of serializeOutput
      return async (c) => {
        const out = await runSkill(skill, c.get("body"), c.env, c.get("requestId"), afterAnswerOf(c));
        return answer(c, JSON.stringify(out));
      };
    case "run": // no run, no shaping, no serialization: the first call's answer text
      return async (c) => {
        fixed ??= serializeOutput(
          await runSkill(skill, c.get("body"), c.env, c.get("requestId"), afterAnswerOf(c)),
        );
        return answer(c, fixed);
      };
    default:
      return async (c) => {
        const out = await runSkill(skill, c.get("body"), c.env, c.get("requestId"), afterAnswerOf(c));
        return answer(c, serializeOutput(out));
      };
  }
}

const VARIANTS = [
  "full",
  "bindings",
  "record",
  "quota",
  "idempotent",
  "receipt",
  "explain",
  "recordPayment",
  "gate",
  "payerQuota",
  "cardSpend",
  "besideDry",
  "onlyBeside",
  "guard",
  "noPay",
  "bodyAndHandler",
  "bodyText",
  "scan",
  "zod",
  "wholeBody",
  "assert",
  "serialize",
  "run",
];

function variantApp(drop: string) {
  const v = new Hono<AppEnv>();
  v.use(edgeHeaders);
  v.use(
    "/api/*",
    limitBody(MAX_BODY_BYTES, (c) => detail(c, 413, `Request body larger than ${MAX_BODY_BYTES} bytes`)),
  );
  v.use("/api/*", identityBodyOnly);
  for (const slug of ["sha256", "slugify", "text-diff"]) {
    const skill = skillBySlug(slug) as Skill;
    v.post(skill.endpoint, chain(steps(skill, drop), answerError));
  }
  v.onError(answerError);
  return v;
}

const apps = new Map(VARIANTS.map((d) => [d, variantApp(d)]));
const app = createApp();
app.get("/__bench/noop", (c) => c.text("ok"));

export default {
  fetch(request, env, ctx) {
    const q = request.url.indexOf("?v=");
    const v = q < 0 ? undefined : apps.get(request.url.slice(q + 3));
    return (v ?? app).fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;

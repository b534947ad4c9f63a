import { Hono } from "hono";
import type { AppEnv } from "../env";
import { afterAnswerOf } from "../http/after-response";
import { answerError } from "../http/app-error";
import { bindingsPresent } from "../http/bindings";
import { chain } from "../http/chain";
import { jsonBody } from "../http/json-text";
import { cardCreditSpend, onlyBesideCardKey, paymentGate, x402BesideDryKey } from "../payments/gate";
import { idempotent } from "../payments/idempotency";
import { payerQuota, quota } from "../payments/quotas";
import { signReceipt } from "../payments/receipts";
import { guardAuthorization, recordPayment } from "../payments/settlement";
import { explain402 } from "../payments/x402-explain";
import { serializeOutput } from "../skills/lib/raw-json";
import { skills } from "../skills/registry";
import { runSkill, skillAnswer } from "../skills/run";
import { recordCall } from "../stats/record";

export const skillRoutes = new Hono<AppEnv>();

for (const skill of skills) {
  // Order matters: an unpaid call is priced before its body is read, unless a `Bearer mk_` key is
  // sent (a call with a card key is validated first); a paid call with a bad body is a 422 and is
  // not settled (nor is a card credit spent); the authorization is claimed, and the credit taken,
  // only for a call that will run. x402 paid by itself is verified in paymentGate and limited per
  // payer right after; beside a card key that takes no credit it is verified after the body
  // (x402BesideDryKey) and limited per payer there.
  skillRoutes.post(
    skill.endpoint,
    chain(
      [
        bindingsPresent,
        recordCall(skill.id, () => Number(skill.price_atomic)),
        quota(skill.id, { freeInBeta: true }),
        idempotent({ cardKeys: true, freeInBeta: true }),
        signReceipt(skill.id),
        explain402,
        recordPayment(skill.id),
        paymentGate(),
        payerQuota(skill.id),
        jsonBody(() => skill.input, { exactIntegers: skill.exactIntegers }),
        cardCreditSpend(skill),
        x402BesideDryKey(),
        onlyBesideCardKey(payerQuota(skill.id)),
        guardAuthorization(skill.id),
        async (c) => {
          try {
            const out = await runSkill(skill, c.get("body"), c.env, c.get("requestId"), afterAnswerOf(c));
            return c.body(serializeOutput(out), 200, { "content-type": "application/json" });
          } catch (e) {
            const failed = skillAnswer(e);
            if (!failed) throw e;
            if (failed.targetFault) c.set("targetFault", true);
            return c.json(failed.body, failed.status);
          }
        },
      ],
      answerError,
    ),
  );
}

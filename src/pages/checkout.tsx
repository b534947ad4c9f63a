import { shQuote } from "../discovery/site";
import type { SessionRow } from "../payments/checkout-ledger";
import type { Skill } from "../skills/types";
import { Layout } from "./layout";

interface SuccessProps {
  sessionId: string;
  session: SessionRow | null;
  skill: Skill | undefined;
  apiKey: string | undefined;
  callsLeft: number | undefined;
  baseUrl: string;
}

function Result({ raw }: { raw: string | null }) {
  if (!raw) return null;
  const result = JSON.parse(raw) as { status: number; body: unknown };
  return (
    <section>
      <h2>Your first call</h2>
      <p class={result.status === 200 ? "status-ok" : "status-err"}>
        {result.status === 200
          ? "Ran with the payload you sent (one credit spent)."
          : `It failed with ${result.status}; no credit was spent.`}
      </p>
      <pre>
        <code>{JSON.stringify(result.body, null, 2)}</code>
      </pre>
    </section>
  );
}

export function SuccessPage(p: SuccessProps) {
  if (!p.session) {
    return (
      <Layout title="Checkout not found">
        <h1>We do not know this checkout</h1>
        <p>
          No checkout session <code>{p.sessionId}</code> was created here. If you paid, contact support with
          this id.
        </p>
        <p>
          <a href="/docs">Back to the docs</a>
        </p>
      </Layout>
    );
  }
  const s = p.session;
  const name = p.skill?.name ?? s.skill_id;
  const endpoint = p.skill ? `${p.baseUrl}${p.skill.endpoint}` : `${p.baseUrl}/api/skills/…`;
  const example = p.skill ? JSON.stringify(p.skill.example_request) : "{}";
  const curl = `curl -s -X POST ${endpoint} \\\n  -H 'authorization: Bearer ${p.apiKey ?? "mk_your_key"}' \\\n  -H 'content-type: application/json' \\\n  -d ${shQuote(example)}`;
  return (
    <Layout title={s.status === "complete" ? "Payment received" : "Checkout"}>
      {s.status === "complete" ? (
        <>
          <h1>Payment received</h1>
          <p class="lead">
            {s.calls} calls of {name} for ${(s.amount_cents / 100).toFixed(2)}.
          </p>
          <dl class="facts">
            <dt>Calls left</dt>
            <dd id="calls-left">{p.callsLeft ?? "…"}</dd>
            <dt>Session</dt>
            <dd>
              <code>{s.id}</code>
            </dd>
          </dl>
          {p.apiKey ? (
            <section>
              <h2>Your API key</h2>
              <p>
                <strong>Shown once.</strong> Copy it now; we keep only its hash.
              </p>
              <pre>
                <code id="api-key">{p.apiKey}</code>
              </pre>
            </section>
          ) : (
            <p class="muted">
              The API key for this checkout was already shown once and is not stored in clear.
            </p>
          )}
          <Result raw={s.payload_result} />
          <h2>Use it</h2>
          <pre>
            <code>{curl}</code>
          </pre>
          <p>
            Check the balance with <code>GET /api/credits</code> and the same <code>Authorization</code>{" "}
            header.
          </p>
        </>
      ) : s.status === "expired" ? (
        <>
          <h1>This checkout expired</h1>
          <p>
            Nothing was charged. <a href={`/docs/${p.skill?.slug ?? ""}`}>Start again from the docs</a>.
          </p>
        </>
      ) : (
        <>
          <h1>Waiting for the payment</h1>
          <p>
            Stripe has not confirmed checkout <code>{s.id}</code> yet. Reload this page in a few seconds.
          </p>
        </>
      )}
    </Layout>
  );
}

export function CancelPage({ skill, skillId }: { skill: Skill | undefined; skillId: string }) {
  return (
    <Layout title="Checkout cancelled">
      <h1>Checkout cancelled</h1>
      <p class="lead">Nothing was charged.</p>
      {skill ? (
        <p>
          <a class="button" href={`/docs/${skill.slug}`}>
            Back to {skill.name}
          </a>
        </p>
      ) : (
        <p>
          {skillId ? (
            <>
              We do not sell a skill called <code>{skillId}</code>.{" "}
            </>
          ) : null}
          <a class="button" href="/docs">
            Browse the skills
          </a>
        </p>
      )}
      <p class="muted">You can also pay per call with x402, with no checkout at all.</p>
    </Layout>
  );
}

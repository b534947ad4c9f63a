import type { PublicConfig } from "../config";
import { bodySchema, priceLabel, shQuote, skillUrls, validationExample } from "../discovery/site";
import { MAX_TIMEOUT_SECONDS } from "../payments/x402-gate";
import { skills } from "../skills/registry";
import type { Skill } from "../skills/types";
import { Layout } from "./layout";

/** `reliability` gives each skill's measured figures (src/stats/published.ts), when known. */
export function DocsIndexPage({ reliability }: { reliability?: (skillId: string) => string } = {}) {
  return (
    <Layout title="Docs" description="Documentation of every skill: request, response, price and examples.">
      <h1>Documentation</h1>
      <p>
        Every skill is one <code>POST</code> endpoint with a JSON body. Start with{" "}
        <a href="/AGENTS.md">AGENTS.md</a> for payment and errors, or pick a skill:
      </p>
      <ul class="cards">
        {skills.map((s) => (
          <li>
            <a href={`/docs/${s.slug}`}>
              <strong>{s.name}</strong>
              <span class="price">{priceLabel(s)}</span>
              <span class="muted">{s.category}</span>
              {reliability ? <span class="muted reliability">{reliability(s.id)}</span> : null}
            </a>
          </li>
        ))}
      </ul>
    </Layout>
  );
}

interface Prop {
  type?: string | string[];
  anyOf?: Prop[];
  description?: string;
  default?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  enum?: unknown[];
}
function typeOf(p: Prop): string {
  if (p.anyOf) return p.anyOf.map(typeOf).join(" or ");
  if (Array.isArray(p.type)) return p.type.join(" or ");
  return p.type ?? "any JSON";
}
function bounds(p: Prop): string {
  const parts: string[] = [];
  if (p.minLength !== undefined || p.maxLength !== undefined)
    parts.push(`length ${p.minLength ?? 0}..${p.maxLength ?? "∞"}`);
  if (p.minimum !== undefined || p.maximum !== undefined)
    parts.push(`${p.minimum ?? "-∞"}..${p.maximum ?? "∞"}`);
  if (p.enum) parts.push(`one of ${p.enum.map((v) => JSON.stringify(v)).join(", ")}`);
  if (p.default !== undefined) parts.push(`default ${JSON.stringify(p.default)}`);
  return parts.join("; ");
}

function tsSnippet(url: string, body: string) {
  return `import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

const client = registerExactEvmScheme(new x402Client(), {
  signer: privateKeyToAccount(process.env.AGENT_KEY as \`0x\${string}\`),
});
const pay = wrapFetchWithPayment(fetch, client);
const res = await pay("${url}", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(${body}),
});
console.log(res.status, await res.json());`;
}

export function SkillDocPage({
  cfg,
  skill,
  reliability,
}: {
  cfg: PublicConfig;
  skill: Skill;
  reliability?: string;
}) {
  const schema = bodySchema(skill) as { properties?: Record<string, Prop>; required?: string[] };
  const urls = skillUrls(cfg, skill);
  const body = JSON.stringify(skill.example_request);
  const required = new Set(schema.required ?? []);
  const curl = `curl -s -X POST ${urls.endpoint} \\\n  -H 'content-type: application/json' \\\n  -d ${shQuote(body)}`;
  const credits = `curl -s -X POST ${urls.endpoint} \\\n  -H 'authorization: Bearer mk_your_key' \\\n  -H 'content-type: application/json' \\\n  -d ${shQuote(body)}`;
  const invalid = validationExample(skill);
  return (
    <Layout title={skill.name} description={skill.description}>
      <p class="crumbs">
        <a href="/docs">Docs</a> / {skill.slug}
      </p>
      <h1>{skill.name}</h1>
      <p class="lead">{skill.description}</p>
      <dl class="facts">
        <dt>Endpoint</dt>
        <dd>
          <code>POST {skill.endpoint}</code>
        </dd>
        <dt>Price</dt>
        <dd>
          {priceLabel(skill)} per successful call ({skill.price_atomic.toString()} USDC atomic units on{" "}
          {cfg.network})
        </dd>
        <dt>Category</dt>
        <dd>{skill.category}</dd>
        {reliability ? (
          <>
            <dt>Measured reliability</dt>
            <dd id="reliability">
              {reliability} (<a href="/api/stats">live figures</a>,{" "}
              <a href="/docs/reliability">how they are measured</a>)
            </dd>
          </>
        ) : null}
      </dl>

      <h2>Request body</h2>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Type</th>
              <th scope="col">Required</th>
              <th scope="col">Bounds and default</th>
              <th scope="col">Meaning</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(schema.properties ?? {}).map(([name, p]) => (
              <tr>
                <td>
                  <code>{name}</code>
                </td>
                <td>{typeOf(p)}</td>
                <td>{required.has(name) ? "yes" : "no"}</td>
                <td>{bounds(p)}</td>
                <td>{p.description ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>

      <h2>Example</h2>
      <h3>Request</h3>
      <pre>
        <code>{JSON.stringify(skill.example_request, null, 2)}</code>
      </pre>
      <h3>Response</h3>
      <pre>
        <code>{JSON.stringify(skill.example_response, null, 2)}</code>
      </pre>

      <h2>Call it</h2>
      <h3>curl (answers 402 with the price until you pay)</h3>
      <pre>
        <code>{curl}</code>
      </pre>
      <h3>TypeScript with @x402/fetch (pays automatically)</h3>
      <pre>
        <code>{tsSnippet(urls.endpoint, body)}</code>
      </pre>
      <h3>With card credits</h3>
      <p>
        Buy a pack of calls with <code>POST /api/cardpay/checkout</code> and{" "}
        <code>{`{"skill_id":"${skill.id}"}`}</code>, then:
      </p>
      <pre>
        <code>{credits}</code>
      </pre>

      <h2>Errors</h2>
      <h3>422: the body failed validation</h3>
      <p>
        Sending <code>{JSON.stringify(invalid.body)}</code> answers:
      </p>
      <pre>
        <code>{JSON.stringify({ detail: invalid.detail }, null, 2)}</code>
      </pre>
      <h3>402: payment required or rejected</h3>
      <pre>
        <code>
          {JSON.stringify(
            {
              x402Version: 2,
              error: `Payment required: this call costs ${priceLabel(skill)} …`,
              reason: "payment_required",
              accepts: [
                {
                  scheme: "exact",
                  network: cfg.network,
                  amount: skill.price_atomic.toString(),
                  asset: cfg.usdcAddress,
                  payTo: cfg.payTo,
                  maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
                },
              ],
            },
            null,
            2,
          )}
        </code>
      </pre>
      <p>
        Machine-readable: <a href={`/services/${skill.slug}.json`}>service description</a> ·{" "}
        <a href="/openapi.json">OpenAPI</a> · <a href="/applet">try it</a>
      </p>
    </Layout>
  );
}

export function NotFoundPage({ slug }: { slug: string }) {
  return (
    <Layout title="Not found">
      <h1>No skill called “{slug}”</h1>
      <p>
        See <a href="/docs">all skills</a>.
      </p>
    </Layout>
  );
}

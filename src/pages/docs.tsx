import type { PublicConfig } from "../config";
import { priceLabel, shQuote, skillUrls } from "../discovery/identity";
import { paymentTerms } from "../discovery/payment-terms";
import { MAX_DETAIL_ITEMS } from "../http/validation";
import { MAX_TIMEOUT_SECONDS } from "../payments/x402-terms";
import { skills } from "../skills/registry";
import { bodySchema, validationExample } from "../skills/schema-docs";
import type { Skill } from "../skills/types";
import { Layout } from "./layout";
import { packLabel } from "./pack";
import { CodeBlock, TableBox } from "./scroll-box";
import { ColumnHeads } from "./table";

/** `reliability` gives each skill's measured figures (src/stats/published.ts), when known. */
export function DocsIndexPage({ reliability }: { reliability?: (skillId: string) => string } = {}) {
  return (
    <Layout title="Docs" description="Documentation of every skill: request, response, price and examples.">
      <h1>Documentation</h1>
      <p>
        Every skill is one <code>POST</code> endpoint with a JSON body. Start with{" "}
        <a href="/AGENTS.md">AGENTS.md</a> for payment and errors,{" "}
        <a href="/docs/mcp">connect an MCP client</a>, or pick a skill:
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
  const?: unknown;
  items?: Prop;
  properties?: Record<string, Prop>;
  required?: string[];
}

/** A property and, depth first, the branches of its anyOf: a nullable field's bounds are in a branch. */
const branches = (p: Prop): Prop[] => [p, ...(p.anyOf ?? []).flatMap(branches)];

function typeOf(p: Prop): string {
  if (p.anyOf) return [...new Set(p.anyOf.map(typeOf))].join(" or ");
  // zod writes an integer literal as {"type":"number","const":4}: the value says what it is.
  if (Number.isInteger(p.const)) return "integer";
  if (Array.isArray(p.type)) return p.type.join(" or ");
  if (p.type === "array" && p.items) return `array of ${typeOf(p.items)}`;
  return p.type ?? "any JSON";
}

/** Lengths, ranges, allowed values (enum and const, across the anyOf branches) and the default. */
function bounds(p: Prop): string {
  const parts = new Set<string>();
  const allowed: unknown[] = [];
  for (const b of branches(p)) {
    if (b.minLength !== undefined || b.maxLength !== undefined)
      parts.add(`length ${b.minLength ?? 0}..${b.maxLength ?? "∞"}`);
    if (b.minimum !== undefined || b.maximum !== undefined)
      parts.add(`${b.minimum ?? "-∞"}..${b.maximum ?? "∞"}`);
    allowed.push(...(b.enum ?? []), ...("const" in b ? [b.const] : []));
  }
  if (allowed.length) parts.add(`one of ${[...new Set(allowed.map((v) => JSON.stringify(v)))].join(", ")}`);
  const fallback = branches(p).find((b) => b.default !== undefined);
  if (fallback) parts.add(`default ${JSON.stringify(fallback.default)}`);
  return [...parts].join("; ");
}

/**
 * The body's fields as table rows, an object field's own fields after it as `options.sep` (from the
 * object, or its anyOf branch that is one): a free-form options object's known keys and their
 * defaults are documented there.
 */
function fieldRows(props: Record<string, Prop>, required: readonly string[], prefix = "") {
  const rows: { name: string; p: Prop; required: boolean }[] = [];
  for (const [name, p] of Object.entries(props)) {
    rows.push({ name: `${prefix}${name}`, p, required: required.includes(name) });
    for (const b of branches(p)) {
      if (b.properties) rows.push(...fieldRows(b.properties, b.required ?? [], `${prefix}${name}.`));
    }
  }
  return rows;
}

function tsSnippet(url: string, body: string) {
  return `// npm i @x402/core @x402/evm @x402/fetch viem
// Save as pay.mts; run: AGENT_KEY=0x<private key of a wallet holding USDC on Base> node pay.mts
// (Node 22.18 or later runs TypeScript; or npx tsx pay.mts)
import { x402Client } from "@x402/core/client";
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

/** 422s a valid body can still get, from what the skill reads or would write (never charged). */
function contentRefusals(skill: Skill): string | undefined {
  const page = (kinds: string) =>
    `A URL that is refused (a private or reserved address: url_refused), a page that is not ${kinds} (url_content_type) or one nested deeper than 512 elements (value_error, ctx.max_depth) is also a 422 on url.`;
  if (skill.id === "seo") return page("HTML");
  if (skill.id === "ai_detector")
    return `${page("HTML or plain text")} Of a page, only what its first 8,000 characters need is read (and, when they end inside an ordered list, up to 20,000 more characters of the page, text and markup, to close it).`;
  if (skill.id === "html_clean")
    return "HTML nested deeper than 512 elements is also a 422 (value_error, ctx.max_depth), and so is an answer that would pass 8 MB (output_too_large, found before it is built: the text mode writes quotes and lists nested past 32 levels as plain blocks).";
  return undefined;
}

/** What an analytic skill fetches and how each source fails, for its docs page's 502/504 section. */
function upstreamFailures(skill: Skill): { source: string; bad: string[] } {
  const api = (source: string) => ({
    source,
    bad: [
      "answered an HTTP error status",
      "answered something that is not JSON",
      "reported an error",
      "answered JSON nested deeper than 200 levels or holding more than 500,000 arrays and objects",
      "could not be reached",
    ],
  });
  const page = (source: string) => ({
    source,
    bad: [
      "answered an HTTP error status",
      "was larger than the fetch cap",
      "could not be reached",
      "could not have its address checked (DNS-over-HTTPS lookup failed)",
    ],
  });
  if (skill.id === "osint_graph") return api("Wikidata and Wikipedia");
  if (skill.id === "research") return api("Wikipedia");
  if (skill.id === "ai_detector") return page("the page you name, when you give a URL");
  return page("the page you name");
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
  const curl = `curl -s -X POST ${urls.endpoint} \\\n  -H 'content-type: application/json' \\\n  -d ${shQuote(body)}`;
  const credits = `curl -s -X POST ${urls.endpoint} \\\n  -H 'authorization: Bearer mk_your_key' \\\n  -H 'content-type: application/json' \\\n  -d ${shQuote(body)}`;
  const invalid = validationExample(skill);
  return (
    <Layout title={skill.name} description={skill.description} scripts={["/assets/buy.js"]}>
      <p class="crumbs">
        <a href="/docs">Docs</a> / {skill.slug}
      </p>
      <h1>{skill.name}</h1>
      <p class="lead">{skill.description}</p>
      {cfg.freeBeta ? (
        <p id="free-beta">
          <strong>Free beta:</strong> this skill answers without payment for now (no <code>402</code>); the
          price below applies once the beta ends.
        </p>
      ) : null}
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
      <TableBox label="Request body fields">
        <table>
          <ColumnHeads columns={["Field", "Type", "Required", "Bounds and default", "Meaning"]} />
          <tbody>
            {fieldRows(schema.properties ?? {}, schema.required ?? []).map(({ name, p, required }) => (
              <tr>
                <td>
                  <code>{name}</code>
                </td>
                <td>{typeOf(p)}</td>
                <td>{required ? "yes" : "no"}</td>
                <td>{bounds(p)}</td>
                <td>{p.description ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableBox>

      <h2>Example</h2>
      <h3>Request</h3>
      <CodeBlock>{JSON.stringify(skill.example_request, null, 2)}</CodeBlock>
      <h3>Response</h3>
      <CodeBlock>{JSON.stringify(skill.example_response, null, 2)}</CodeBlock>

      <h2>Call it</h2>
      <h3>curl (answers 402 with the price until you pay)</h3>
      <CodeBlock>{curl}</CodeBlock>
      <h3>TypeScript with @x402/fetch (pays automatically)</h3>
      <CodeBlock>{tsSnippet(urls.endpoint, body)}</CodeBlock>
      <h3 id="card-credits">With card credits</h3>
      {cfg.cardpayEnabled ? (
        <p class="actions">
          <button id="buy" type="button" class="button" data-skill-id={skill.id}>
            {packLabel(skill)}
          </button>{" "}
          <span id="buy-status" role="status" />
        </p>
      ) : null}
      <p>
        A card checkout (Stripe) buys a pack of calls: the smallest number that reaches Stripe's $0.50 minimum
        at exactly the listed price per call. From code: <code>POST /api/cardpay/checkout</code> with{" "}
        <code>{`{"skill_id":"${skill.id}"}`}</code>, open its <code>checkout_url</code>, and read your key
        once on the success page. Then:
      </p>
      <CodeBlock>{credits}</CodeBlock>

      <h2>Errors</h2>
      <h3>422: the body failed validation</h3>
      <p>
        The body is checked once the call is paid (x402 signature or card-credit key): without payment every
        body, <code>{"{}"}</code> included, answers <code>402</code> first. A paid call with a bad body is not
        charged. Sending <code>{JSON.stringify(invalid.body)}</code> with payment answers:
      </p>
      <CodeBlock>{JSON.stringify({ detail: invalid.detail }, null, 2)}</CodeBlock>
      <p>
        At most {MAX_DETAIL_ITEMS} errors are listed, the first ones. Long inputs are echoed cut, keeping
        their JSON type: a string to its first 256 characters and <code>…</code>, a large array or object to
        its first items or keys.
      </p>
      {contentRefusals(skill) ? <p id="content-refusals">{contentRefusals(skill)} Not charged.</p> : null}
      {skill.kind === "analytic" ? (
        <>
          <h3>502 and 504: an upstream source failed (not charged)</h3>
          <p>This skill reads {upstreamFailures(skill).source}. It answers:</p>
          <ul>
            {upstreamFailures(skill).bad.map((b) => (
              <li>
                <code>502</code> when the source {b}
              </li>
            ))}
            <li>
              <code>504</code> when the source did not answer in time.
            </li>
          </ul>
          <p>
            The body is <code>{'{"detail": "…", "charged": false}'}</code>.{" "}
            <strong>Neither is charged</strong>: the x402 payment is not settled and a card credit is given
            back. Retry later.
          </p>
        </>
      ) : null}
      {skill.readsAssets ? (
        <>
          <h3>502 and 504: its data tables did not load (not charged)</h3>
          <p>
            This skill loads its tables from this service's own static assets on first use. When they fail to
            load it answers <code>502</code>, when they do not arrive in time <code>504</code>, each with{" "}
            <code>{'{"detail": "…", "charged": false}'}</code>: not charged, retry (the next call loads them
            again).
          </p>
        </>
      ) : null}
      <h3>402: payment required or rejected</h3>
      <p>
        x402 v2 clients read the <code>PAYMENT-REQUIRED</code> header, the base64 of this{" "}
        <code>PaymentRequired</code> (with <code>resource</code> and the bazaar <code>extensions</code>):
      </p>
      <CodeBlock>
        {JSON.stringify(
          {
            x402Version: 2,
            accepts: [
              {
                scheme: "exact",
                network: cfg.network,
                amount: skill.price_atomic.toString(),
                asset: paymentTerms(cfg)?.asset,
                payTo: paymentTerms(cfg)?.payTo,
                maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
              },
            ],
          },
          null,
          2,
        )}
      </CodeBlock>
      <p>
        The JSON body carries the same offer in x402 <strong>v1</strong> form, for v1 clients (
        <code>x402-fetch</code>, <code>x402-axios</code>): <code>"x402Version": 1</code>, each of{" "}
        <code>accepts</code> with the network's v1 name (<code>base</code> for <code>eip155:8453</code>) and{" "}
        <code>maxAmountRequired</code> where v2 says <code>amount</code>, plus <code>resource</code>,{" "}
        <code>description</code> and <code>mimeType</code>; and an <code>error</code> in words with a
        snake_case <code>reason</code> (<code>payment_required</code>, or why a payment was refused, e.g.{" "}
        <code>invalid_payment_header</code>, <code>invalid_x402_version</code> for a v1 payload in{" "}
        <code>PAYMENT-SIGNATURE</code> (v1 goes in <code>X-PAYMENT</code>), <code>resource_mismatch</code>,
        the facilitator's code). The price here: {priceLabel(skill)} per call.
      </p>
      <p>
        Machine-readable: <a href={`/services/${skill.slug}.json`}>service description</a> ·{" "}
        <a href="/openapi.json">OpenAPI</a> ·{" "}
        <a href={`/applet?skill=${encodeURIComponent(skill.id)}`}>try it</a>
      </p>
    </Layout>
  );
}

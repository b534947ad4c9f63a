import type { PublicConfig } from "../config";
import { priceLabel, SITE_NAME, SITE_SUMMARY } from "../discovery/identity";
import type { PricingConfig } from "../partners/config";
import { PARTNERS } from "../partners/data";
import { partnerPricing } from "../partners/pricing";
import { skills } from "../skills/registry";
import { Layout } from "./layout";
import { TableBox } from "./scroll-box";
import { ColumnHeads } from "./table";

/** `reliability` gives each skill's measured figures (src/stats/published.ts), when known. */
export function HomePage({
  cfg,
  pc,
  reliability,
}: {
  cfg: PublicConfig;
  /** Undefined while the partner configuration is invalid: the partners are left out. */
  pc: PricingConfig | undefined;
  reliability?: (skillId: string) => string;
}) {
  const partner = pc && partnerPricing(pc);
  return (
    <Layout title="Home" description={SITE_SUMMARY}>
      <section class="hero">
        <h1>{SITE_NAME}</h1>
        <p class="lead">{SITE_SUMMARY}</p>
        <p>
          <a class="button" href="/docs">
            Read the docs
          </a>{" "}
          <a class="button secondary" href="/applet">
            Try a call
          </a>
        </p>
      </section>
      <section>
        <h2>Skills</h2>
        <TableBox label="Skills">
          <table>
            <ColumnHeads
              columns={[
                "Skill",
                "Category",
                "Price per call",
                "Endpoint",
                reliability ? "Measured (7 days)" : null,
              ]}
            />
            <tbody>
              {skills.map((s) => (
                <tr>
                  <td>
                    <a href={`/docs/${s.slug}`}>{s.name}</a>
                  </td>
                  <td>{s.category}</td>
                  <td class="num">{priceLabel(s)}</td>
                  <td>
                    <code>POST {s.endpoint}</code>
                  </td>
                  {reliability ? <td class="muted reliability">{reliability(s.id)}</td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
      </section>
      {partner ? (
        <section>
          <h2>Hosted partners</h2>
          <p>
            {`Partner APIs listed at ${partner.multiplier}× the partner's own price ($${partner.tryRoutes.min} to $${partner.tryRoutes.max} per call), `}
            callable through the marketplace with the same x402 payment (
            <a href="/api/partners">/api/partners</a>).
          </p>
          <ul class="cards">
            {PARTNERS.map((p) => (
              <li>
                <a href={`/api/partners/${p.id}`}>
                  <strong>
                    {p.icon} {p.name}
                  </strong>
                  <span class="muted">
                    {p.services.length} service{p.services.length === 1 ? "" : "s"} ·{" "}
                    {p.listing_status === "paid" ? "paid per call" : "external, billed by the partner"}
                  </span>
                </a>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <section class="cols">
        <div>
          <h2>Pay with x402</h2>
          <p>
            Call any skill; the <code>402</code> answer carries the price in a <code>PAYMENT-REQUIRED</code>{" "}
            header. Sign it with a wallet holding USDC on <code>{cfg.network}</code> and retry with{" "}
            <code>PAYMENT-SIGNATURE</code>. <code>@x402/fetch</code> does both steps. You are charged only for
            a successful call.
          </p>
        </div>
        <div>
          <h2>Pay by card</h2>
          <p>
            Buy a pack of calls through Stripe Checkout (<code>POST /api/cardpay/checkout</code>), then send
            the key shown once as <code>Authorization: Bearer mk_…</code>. Failed calls keep their credit.
          </p>
        </div>
      </section>
      <section>
        <h2>For agents</h2>
        <ul class="links">
          <li>
            <a href="/docs/mcp">MCP server</a> at <code>{cfg.baseUrl}/mcp</code>: every skill as a paid tool
            (Streamable HTTP; x402 or card credits)
          </li>
          <li>
            <a href="/llms.txt">llms.txt</a>: the short guide
          </li>
          <li>
            <a href="/AGENTS.md">AGENTS.md</a>: discover, call, pay, read errors
          </li>
          <li>
            <a href="/openapi.json">OpenAPI 3.1</a> with prices (<code>x-payment-info</code>)
          </li>
          <li>
            <a href="/.well-known/x402">/.well-known/x402</a> and{" "}
            <a href="/.well-known/agents.json">agents.json</a>
          </li>
        </ul>
      </section>
    </Layout>
  );
}

import type { callPolicy } from "../stats/published";
import type { StatsDocument } from "../stats/query";
import { Layout } from "./layout";
import { ReliabilityTable } from "./reliability-table";
import { TableBox } from "./scroll-box";

/**
 * Human twin of /api/stats and the policy fields of /.well-known/x402. Without the figures
 * (`unavailable` says why) the policy and how the figures are measured still stand.
 */
export function ReliabilityPage(
  props: { policy: ReturnType<typeof callPolicy> } & (
    | { doc: StatsDocument; unavailable?: undefined }
    | { doc?: undefined; unavailable: string }
  ),
) {
  const { doc, policy } = props;
  return (
    <Layout
      title="Reliability and charging policy"
      description="Measured success rate and server time per skill; what is charged and refunded."
    >
      <p class="crumbs">
        <a href="/docs">Docs</a> / reliability
      </p>
      <h1>Reliability and charging policy</h1>
      <h2>What is charged</h2>
      <ul id="policy">
        <li>{policy.charged}</li>
        <li>Card credits: {policy.refunds.card_credit}</li>
        <li>x402: {policy.refunds.x402}</li>
        <li>Retention: {policy.retention.stored}</li>
        <li>
          Support: <a href={`mailto:${policy.support_contact}`}>{policy.support_contact}</a>
        </li>
      </ul>
      <h2>How the figures are measured</h2>
      <p>
        Every skill call (HTTP and MCP, paid, card, free beta and refused) is recorded after its answer. The
        success rate is {policy.measurement.success_rate}; {policy.measurement.excluded}. Server time is{" "}
        {policy.measurement.server_time}. As published, {policy.measurement.rounding}. The same figures are
        served as JSON at <a href="/api/stats">/api/stats</a> (recomputed every 5 minutes) and summarised in{" "}
        <a href="/.well-known/x402">/.well-known/x402</a> and <a href="/llms.txt">llms.txt</a>.
      </p>
      <h2>Last 7 days</h2>
      {doc ? (
        <>
          <p class="muted">Computed {doc.computed_at}.</p>
          <TableBox label="Reliability per skill, last 7 days">
            <ReliabilityTable id="figures" skills={doc.skills} detail />
          </TableBox>
        </>
      ) : (
        <p id="figures-unavailable" class="status-err" role="status">
          Figures unavailable right now: {props.unavailable} This page and <a href="/api/stats">/api/stats</a>{" "}
          have them again once they are computed (every 5 minutes).
        </p>
      )}
    </Layout>
  );
}

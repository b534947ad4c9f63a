import type { callPolicy } from "../stats/published";
import type { StatsDocument } from "../stats/query";
import { Layout } from "./layout";

const pct = (r: number | null) => (r === null ? "–" : `${(r * 100).toFixed(1)}%`);
const ms = (v: number | null) => (v === null ? "–" : `${v} ms`);

/** Human twin of /api/stats and the policy fields of /.well-known/x402. */
export function ReliabilityPage(props: { doc: StatsDocument; policy: ReturnType<typeof callPolicy> }) {
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
        <li>
          Retention: the call log keeps {policy.retention.call_log_days} days of {policy.retention.stored}.
        </li>
        <li>
          Support: <a href={`mailto:${policy.support_contact}`}>{policy.support_contact}</a>
        </li>
      </ul>
      <h2>How the figures are measured</h2>
      <p>
        Every skill call (HTTP and MCP, paid, card, free beta and refused) is recorded after its answer. The
        success rate is {policy.measurement.success_rate}; {policy.measurement.excluded}. Server time is{" "}
        {policy.measurement.server_time}. The same figures are served as JSON at{" "}
        <a href="/api/stats">/api/stats</a> (recomputed at most once a minute) and summarised in{" "}
        <a href="/.well-known/x402">/.well-known/x402</a> and <a href="/llms.txt">llms.txt</a>.
      </p>
      <h2>Last 7 days</h2>
      <p class="muted">Computed {doc.computed_at}.</p>
      <table class="admin-table" id="figures">
        <thead>
          <tr>
            <th scope="col">Skill</th>
            <th scope="col">Calls</th>
            <th scope="col">Success rate</th>
            <th scope="col">p50</th>
            <th scope="col">p95</th>
            <th scope="col">Upstream errors</th>
            <th scope="col">Last success</th>
          </tr>
        </thead>
        <tbody>
          {doc.skills.map((s) => {
            const w = s.windows["7d"];
            return (
              <tr>
                <th scope="row">{s.skill}</th>
                <td>{w.calls}</td>
                <td>{pct(w.success_rate)}</td>
                <td>{ms(w.p50_ms)}</td>
                <td>{ms(w.p95_ms)}</td>
                <td>{pct(w.upstream_error_rate)}</td>
                <td>{w.last_success_at ?? "–"}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </Layout>
  );
}

import { errorPercent, successPercent } from "../stats/percent";
import type { StatsDocument } from "../stats/query";

export const ms = (v: number | null) => (v === null ? "–" : `${v} ms`);

/**
 * Per-skill reliability over 7 days, as the public policy page (`detail`: upstream errors and last
 * success too) and the maintainer dashboard show it: one table, so the two cannot disagree. Calls
 * count every request (free 402 probes too); the rates are of admitted calls, shown beside them.
 * Unavailable: 503s answered before any payment could be checked, our own outage (an unreadable
 * facilitator answers every call so): out of the success rate, which anyone could sink with free
 * probes, but shown, so an outage does not vanish from the figures.
 */
export function ReliabilityTable(props: { id: string; skills: StatsDocument["skills"]; detail?: boolean }) {
  return (
    <table class="admin-table" id={props.id}>
      <thead>
        <tr>
          <th scope="col">Skill</th>
          <th scope="col">Calls</th>
          <th scope="col">Admitted</th>
          <th scope="col">Success rate</th>
          <th scope="col">p50</th>
          <th scope="col">p95</th>
          <th scope="col">Unavailable (503)</th>
          {props.detail ? <th scope="col">Upstream errors</th> : null}
          {props.detail ? <th scope="col">Last success</th> : null}
        </tr>
      </thead>
      <tbody>
        {props.skills.map((s) => {
          const w = s.windows["7d"];
          return (
            <tr>
              <th scope="row">{s.skill}</th>
              <td>{w.calls}</td>
              <td>{w.admitted}</td>
              <td>{successPercent(w.success_rate)}</td>
              <td>{ms(w.p50_ms)}</td>
              <td>{ms(w.p95_ms)}</td>
              <td>{w.unavailable}</td>
              {props.detail ? <td>{errorPercent(w.upstream_error_rate)}</td> : null}
              {props.detail ? <td>{w.last_success_at ?? "–"}</td> : null}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

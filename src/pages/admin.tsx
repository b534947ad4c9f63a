import { microsToUsd, TX_HASH, trimDecimal } from "../money";
import { sizeReport } from "../ops/database";
import type { OperatingBalance } from "../partners/operating-balance";
import type { owedSummary } from "../partners/payouts";
import type { HeldClaim } from "../payments/reconcile-holds";
import {
  NO_LOG_EVERY_MS,
  NO_LOG_SPACED_AFTER,
  RUNNING_LEFT_TO_REQUEST_MS,
} from "../payments/reconcile-store";
import { HAND_NOTE_MAX, inDoubtUndecided } from "../payments/refund-by-hand";
import { refundSendAdvice } from "../payments/refund-warn";
import type { dashboardFigures, StatsDocument } from "../stats/query";
import { BarChart } from "./charts";
import { Layout } from "./layout";
import { ReliabilityTable } from "./reliability-table";
import { TableBox } from "./scroll-box";
import { RowHeadedTable } from "./table";

/** TX_HASH as an HTML `pattern` (anchored by the browser itself). */
const TX_PATTERN = TX_HASH.source.slice(1, -1);

type Row = Record<string, string | number>;

/** What a hand refund's transfer paid, in micro-USDC, as the API takes it (a whole number). */
const AmountInput = ({ id }: { id: string }) => (
  <input id={id} name="amount_micro" inputmode="numeric" pattern="[0-9]{1,13}" required />
);

/**
 * Beside an overpaid hand refund: correct the amount recorded (a typing slip; its rest follows), or
 * record the overpayment settled (paid back, or written off: the note says which).
 */
function OverpaidForms({ r, i, csrf }: { r: Row; i: number; csrf: string }) {
  const action = `/admin/refunds/${encodeURIComponent(String(r.request_id))}/resolve`;
  return (
    <>
      <form method="post" action={action} class="admin-form">
        <input type="hidden" name="csrf" value={csrf} />
        <input type="hidden" name="outcome" value="amount_corrected" />
        <input type="hidden" name="tx_hash" value={String(r.tx_hash)} />
        <label for={`refund-correct-${i}`}>What tx {String(r.tx_hash)} really paid (micro-USDC)</label>
        <AmountInput id={`refund-correct-${i}`} />
        <label for={`refund-correct-note-${i}`}>Note</label>
        <input id={`refund-correct-note-${i}`} name="note" maxlength={HAND_NOTE_MAX} />
        <button type="submit">Correct amount</button>
      </form>
      <form method="post" action={action} class="admin-form">
        <input type="hidden" name="csrf" value={csrf} />
        <input type="hidden" name="outcome" value="overpayment_settled" />
        <label for={`refund-settle-note-${i}`}>Paid back (tx) or written off (why)</label>
        <input id={`refund-settle-note-${i}`} name="note" maxlength={HAND_NOTE_MAX} required />
        <button type="submit">Record settled</button>
      </form>
    </>
  );
}
/** Why a refund is still owed, as its row says (payments/refunds.ts). */
function stillOwedBecause(r: Row) {
  if (r.hold) return `Held: ${r.hold}`;
  if (r.error) {
    const advice = refundSendAdvice(String(r.error));
    return `Last send: ${r.error}${advice ? `. To do: ${advice}` : ""}`;
  }
  if (r.valid_before)
    return `Sent; may still land until ${new Date(Number(r.valid_before) * 1000).toISOString()}`;
  return "Not sent yet: the next reconciliation run sends it";
}
/**
 * A hand refund recorded for more than its refund owed (a decision lowered it while it was paid, or
 * since: a share's owed_micro follows each decision on its partner authorizations).
 */
const overpaidBy = (r: Row) =>
  `Overpaid by hand: tx ${r.tx_hash} paid ${usd(Number(r.amount_micro))} where ${usd(Number(r.owed_micro))} was owed, ${usd(Number(r.overpaid_micro))} too much: ask the payer for it back, or write it off, and record which; or, if the amount was typed wrong, correct it (${r.resolved_note ?? "no note"})`;
const usd = (micro: number) => `$${microsToUsd(micro).toFixed(micro % 10_000 === 0 ? 2 : 6)}`;

/**
 * When reconciliation reads an unheld claim, as reconcile-store.ts candidates() decides: a running
 * one once its authorization is a minute past valid_before and its request RUNNING_LEFT_TO_REQUEST_MS old; one judged "used, no log" twice only
 * every 2 h (a maintainer's queue resets that).
 */
function reconcileState(u: Record<string, string | number>): string {
  const nowS = Date.now() / 1000;
  if (
    u.status === "running" &&
    (Number(u.valid_before ?? 0) >= nowS - 60 ||
      Number(u.created_at ?? 0) >= Date.now() - RUNNING_LEFT_TO_REQUEST_MS)
  )
    return `running, not yet due: read once its authorization has expired and its request is ${RUNNING_LEFT_TO_REQUEST_MS / 60_000} minutes old`;
  if (Number(u.no_log_runs ?? 0) >= NO_LOG_SPACED_AFTER) {
    const next = new Date(Number(u.checked_at ?? 0) + NO_LOG_EVERY_MS).toISOString();
    return `spent with no log found ${u.no_log_runs} times: read again at ${next}; POST /api/admin/resolve/payment_nonces/${u.nonce} {"outcome":"queue"} to read it on the next run`;
  }
  return u.status === "running"
    ? "running past its validity: reconciliation reads it every run"
    : "reconciliation reads it every run";
}

/**
 * The operating wallet's USDC beside what it must pay: refunds waiting to be sent (owed, not held)
 * wait for a wallet holding less than them, and a partner call whose partner asks x402 is refused
 * (nothing charged) while it holds less than that partner's price. Said here, not only in the log.
 */
function walletLine(w: OperatingBalance | undefined, refunds: Row[], largestPartnerMicros: bigint) {
  if (!w) return "Operating wallet: not read (no RPC_URL or PARTNER_PAYER_KEY).";
  // In code: running text's code breaks anywhere (site.css), so the 42 characters of an address
  // do not widen a phone's page.
  const wallet = <code>{w.wallet}</code>;
  if (w.micros === undefined)
    return <>Operating wallet {wallet}: its USDC cannot be read right now (RPC_URL failed; logged).</>;
  const held = w.micros;
  const toSend = refunds
    .filter((r) => r.status === "owed" && !r.hold && Number(r.amount_micro) > 0)
    .reduce((sum, r) => sum + Number(r.amount_micro), 0);
  const line = (
    <>
      Operating wallet {wallet} holds {usd(Number(held))} USDC
    </>
  );
  const refusing = held < largestPartnerMicros;
  const shortOf = [
    ...(held < BigInt(toSend) ? [`the refunds waiting to be sent (${usd(toSend)})`] : []),
    ...(refusing ? [`the largest partner price (${usd(Number(largestPartnerMicros))})`] : []),
  ];
  if (!shortOf.length && held > 0n)
    return (
      <>
        {line}
        {toSend ? `; refunds waiting to be sent: ${usd(toSend)}` : ""}.
      </>
    );
  const less = shortOf.length ? `, less than ${shortOf.join(" and ")}` : "";
  const refused = refusing
    ? ` Partner calls are being refused meanwhile (nothing charged): every one whose partner asks x402 for more than ${usd(Number(held))}.`
    : "";
  return (
    <>
      {line}
      {less}: send USDC to it.{refused} Refunds wait: none is lost, the next reconciliation runs send each (at
      most once).
    </>
  );
}

/** The database's size against D1's cap, and what to do near it (docs/OPERATIONS.md). */
function databaseLine(bytes: number | undefined) {
  if (bytes === undefined) return "Database size: cannot be read right now.";
  const r = sizeReport(bytes);
  const line = `Database size: ${(bytes / 1e6).toFixed(1)} MB, ${r.percent_of_cap} % of D1's ${r.cap_bytes / 1e9} GB cap`;
  return r.level === "warn"
    ? `${line}: archive the ledgers by hand before it is full (docs/OPERATIONS.md, "Database size").`
    : `${line}.`;
}

export function AdminLoginPage(props: { error?: string }) {
  return (
    <Layout title="Admin sign-in">
      <h1>Admin sign-in</h1>
      {props.error ? (
        <p class="err" role="alert" id="login-error">
          {props.error}
        </p>
      ) : null}
      {/* POST keeps the token out of the URL; the answer is an HttpOnly cookie, never the token. */}
      <form method="post" action="/admin/login" class="admin-form">
        <label for="token">Admin token</label>
        <input id="token" name="token" type="password" autocomplete="current-password" required />
        <button type="submit">Sign in</button>
      </form>
    </Layout>
  );
}

export function AdminDashboardPage(props: {
  csrf: string;
  /** The published figures (the Cron's copy), or undefined when none can be read now. */
  stats: StatsDocument | undefined;
  figures: Awaited<ReturnType<typeof dashboardFigures>>;
  payouts: Awaited<ReturnType<typeof owedSummary>>;
  held: HeldClaim[];
  /** The database's size in bytes (D1's meta.size_after), or undefined when it cannot be read now. */
  databaseBytes: number | undefined;
  /** The operating wallet's USDC (partners/operating-balance.ts); undefined without RPC_URL or key. */
  wallet?: OperatingBalance;
  /** The highest partner price sold per call (partners/operating-balance.ts); 0n when none is. */
  largestPartnerMicros?: bigint;
  notice?: string;
}) {
  const { stats, figures, payouts } = props;
  const measured = (stats?.skills ?? []).filter((s) => s.windows["7d"].calls > 0);
  // The copy is the Cron's (every 5 minutes): its age says how much the call figures lag.
  const ageMinutes = stats
    ? Math.max(0, Math.floor((Date.now() - Date.parse(stats.computed_at)) / 60_000))
    : 0;
  // A skill whose calls were all refused has no server time: no bar of "0 ms" for it.
  const timed = measured.filter((s) => s.windows["7d"].p95_ms !== null);
  return (
    <Layout title="Admin dashboard">
      <h1>Maintainer dashboard</h1>
      <p class="muted" id="figures-age">
        {stats
          ? `Call figures over 7 days as published at ${stats.computed_at} (${ageMinutes} min ago; recomputed every 5 minutes by the Cron)`
          : "Call figures over 7 days: the published figures cannot be read right now"}
        ; revenue over {figures.days} days, read now.
      </p>
      <p class="muted" id="database-size">
        {databaseLine(props.databaseBytes)}
      </p>
      {props.notice ? (
        <p role="status" id="notice">
          {props.notice}
        </p>
      ) : null}
      <form method="post" action="/admin/logout">
        <input type="hidden" name="csrf" value={props.csrf} />
        <button type="submit">Sign out</button>
      </form>

      <BarChart
        id="chart-revenue-day"
        title="Revenue per day by rail (USD)"
        labels={figures.revenue_by_day.map((d) => d.day)}
        series={[
          { name: "x402", cls: "chart-a", values: figures.revenue_by_day.map((d) => d.x402_micro) },
          { name: "card", cls: "chart-b", values: figures.revenue_by_day.map((d) => d.card_micro) },
        ]}
        format={usd}
      />
      <BarChart
        id="chart-revenue-skill"
        categories
        title="Revenue per skill (USD)"
        labels={figures.per_skill.map((s) => s.skill)}
        series={[{ name: "revenue", cls: "chart-a", values: figures.per_skill.map((s) => s.revenue_micro) }]}
        format={usd}
      />
      <BarChart
        id="chart-calls-skill"
        categories
        title="Calls per skill (7 days)"
        labels={measured.map((s) => s.skill)}
        series={[
          { name: "calls", cls: "chart-a", values: measured.map((s) => s.windows["7d"].calls) },
          { name: "succeeded", cls: "chart-b", values: measured.map((s) => s.windows["7d"].succeeded) },
        ]}
        format={(v) => String(v)}
      />
      <BarChart
        id="chart-p95-skill"
        categories
        title="p95 server time per skill (7 days, ms; skills with 20 or more admitted calls)"
        labels={timed.map((s) => s.skill)}
        series={[{ name: "p95 ms", cls: "chart-a", values: timed.map((s) => s.windows["7d"].p95_ms ?? 0) }]}
        format={(v) => `${v} ms`}
      />

      <h2>Reliability per skill (7 days)</h2>
      <TableBox label="Reliability per skill">
        <ReliabilityTable id="reliability" skills={measured} />
      </TableBox>

      <h2>Partner payouts</h2>
      <RowHeadedTable
        id="payouts"
        label="Partner payouts"
        columns={["Partner", "Owed", "Earned", "Mark paid"]}
        rows={(payouts.partners as Row[]).map((p) => [
          String(p.partner_id),
          usd(Number(p.owed_micro)),
          usd(Number(p.earned_micro ?? 0)),
          Number(p.owed_micro) > 0 ? (
            <form method="post" action={`/admin/payouts/${p.partner_id}/settle`} class="admin-form">
              <input type="hidden" name="csrf" value={props.csrf} />
              <input type="hidden" name="through_id" value={String(p.through_id)} />
              {/* The amount shown, read with through_id: a row owed since refuses the batch (409). */}
              <input type="hidden" name="amount_usd" value={trimDecimal(microsToUsd(Number(p.owed_micro)))} />
              <label for={`tx-${p.partner_id}`}>Transaction hash</label>
              <input id={`tx-${p.partner_id}`} name="tx_hash" pattern={TX_PATTERN} required />
              <button type="submit">Mark paid</button>
            </form>
          ) : (
            "nothing owed"
          ),
        ])}
      />
      <h3>Paid batches</h3>
      <RowHeadedTable
        id="batches"
        label="Paid batches"
        columns={["Partner", "Amount", "Transaction"]}
        rows={(payouts.batches as Row[]).map((b) => [
          String(b.partner_id),
          usd(Number(b.amount_micro)),
          // Recorded for an earlier batch too, before one transfer could pay only one (migration 0013).
          b.tx_reused ? `${b.tx_hash} (also an earlier batch's: check it)` : String(b.tx_hash),
        ])}
      />

      <h2>Settlements to reconcile</h2>
      <p class="muted">
        What GET /api/admin/payments lists: claims reconciliation still decides from the chain, and claims and
        upstream authorizations it holds for you (decide them with the POST shown; docs/OPERATIONS.md).
        {Number(figures.unconfirmed[0]?.total ?? 0) > figures.unconfirmed.length
          ? ` Showing ${figures.unconfirmed.length} of the ${Number(figures.unconfirmed[0]?.total)} not held: GET /api/admin/payments lists up to 1,000.`
          : ""}
      </p>
      <RowHeadedTable
        id="unconfirmed"
        label="Settlements to reconcile"
        columns={["Request", "Resource", "Authorization", "State"]}
        rows={[
          // Held for a person (migration 0014): reconciliation no longer reads them.
          ...props.held.map((h): [string, string, string, string] => [
            String(h.request_id),
            h.kind === "payment" ? "x402 claim" : "upstream authorization (partner)",
            h.ref,
            `needs a person: ${h.hold}. Resolve: POST ${h.resolve}`,
          ]),
          ...figures.unconfirmed.map((u): [string, string, string, string] => [
            String(u.request_id),
            String(u.resource),
            String(u.nonce),
            reconcileState(u),
          ]),
        ]}
      />

      <h2>Refunds owed</h2>
      <p class="muted">
        Reconciliation sends each refund again until it lands (at most once); a held one waits for you
        (docs/OPERATIONS.md, "Refunds"). Once you have paid one from your own wallet, record its transaction
        here: it is then refunded and never sent. A refund the operating wallet may still be sending is
        refused until its authorization expired. A partner's share kept back in doubt that the operating
        wallet's transfers show the partner was paid in full is owed to nobody: record that with a note naming
        the transfer (paid in part: refund the rest instead).
      </p>
      <p id="operating-wallet">
        {walletLine(props.wallet, payouts.refunds as Row[], props.largestPartnerMicros ?? 0n)}
      </p>
      <RowHeadedTable
        id="refunds-owed"
        label="Refunds owed"
        columns={["Request", "Payer", "Amount", "Why it is still owed", "Refunded by hand"]}
        rows={(payouts.refunds as Row[])
          .filter((r) => (r.status === "owed" && Number(r.amount_micro) > 0) || Number(r.overpaid_micro) > 0)
          .map((r, i) => [
            String(r.request_id),
            String(r.payer),
            usd(Number(r.amount_micro)),
            r.status === "owed" ? stillOwedBecause(r) : overpaidBy(r),
            r.status !== "owed" ? (
              <OverpaidForms r={r} i={i} csrf={props.csrf} />
            ) : (
              <>
                <form
                  method="post"
                  action={`/admin/refunds/${encodeURIComponent(String(r.request_id))}/resolve`}
                  class="admin-form"
                >
                  <input type="hidden" name="csrf" value={props.csrf} />
                  <label for={`refund-tx-${i}`}>Transaction hash</label>
                  <input id={`refund-tx-${i}`} name="tx_hash" pattern={TX_PATTERN} required />
                  {/* What the transfer paid, typed rather than filled in: a decision may change the amount shown while it is paid. */}
                  <label for={`refund-amount-${i}`}>
                    Amount paid (micro-USDC; {String(r.amount_micro)} owed)
                  </label>
                  <AmountInput id={`refund-amount-${i}`} />
                  {/* What was shown owed: another amount typed is recorded only with the box ticked. */}
                  <input type="hidden" name="owed_shown" value={String(r.amount_micro)} />
                  <label for={`refund-differs-${i}`}>
                    <input id={`refund-differs-${i}`} type="checkbox" name="differs_ok" value="1" /> The
                    amount differs from what is owed
                  </label>
                  <label for={`refund-note-${i}`}>Note</label>
                  <input id={`refund-note-${i}`} name="note" maxlength={HAND_NOTE_MAX} />
                  <button type="submit">Record refund</button>
                </form>
                {/* A share kept back in doubt that the partner turned out to be paid in full: owed to nobody. */}
                {inDoubtUndecided(r) ? (
                  <form
                    method="post"
                    action={`/admin/refunds/${encodeURIComponent(String(r.request_id))}/resolve`}
                    class="admin-form"
                  >
                    <input type="hidden" name="csrf" value={props.csrf} />
                    <input type="hidden" name="outcome" value="nothing_owed" />
                    <label for={`refund-dismiss-note-${i}`}>The partner's transfer of the whole share</label>
                    <input id={`refund-dismiss-note-${i}`} name="note" maxlength={HAND_NOTE_MAX} required />
                    <button type="submit">Record nothing owed</button>
                  </form>
                ) : null}
              </>
            ),
          ])}
      />

      <h2>Card sessions and credits</h2>
      <p id="credits">
        {Number(figures.credits.keys)} keys, {Number(figures.credits.calls_left)} of{" "}
        {Number(figures.credits.calls_total)} calls outstanding.
      </p>
      <RowHeadedTable
        id="sessions"
        label="Card sessions"
        columns={["Status", "Sessions", "Amount"]}
        rows={figures.sessions.map((s) => [
          String(s.status),
          Number(s.sessions),
          `$${(Number(s.amount_cents) / 100).toFixed(2)}`,
        ])}
      />
    </Layout>
  );
}

import { env } from "cloudflare:test";
import { generatePrivateKey } from "viem/accounts";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { reconcile } from "../../src/payments/reconcile";
import type { ChainReader } from "../../src/payments/reconcile-chain";

/**
 * The Cron's reconciliation under a backlog (an RPC or facilitator outage leaves thousands of
 * rows): successive runs must get through it, and no row at the head of a queue may hold the rest
 * back. Each test reconciles a network of its own (ids from 950_001: no other file's), so rows other
 * files leave are not in its way, and its rows are deleted afterwards, so they are in no other's.
 */

const hex = (bytes: number) =>
  `0x${[...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
const nowS = () => Math.floor(Date.now() / 1000);

afterEach(() => {
  vi.restoreAllMocks();
});

const networks: string[] = [];
afterAll(async () => {
  for (const table of ["refunds", "payment_nonces", "upstream_payments"])
    await env.DB.prepare(`DELETE FROM ${table} WHERE network IN (SELECT value FROM json_each(?1))`)
      .bind(JSON.stringify(networks))
      .run();
});

/** A chain of its own where nothing is spent; reads of `poisoned` authorizers throw. */
function chain(db = env.DB) {
  const id = 950_001 + networks.length;
  const network = `eip155:${id}`;
  networks.push(network);
  const poisoned = new Set<string>();
  const reads: string[] = [];
  const reader: ChainReader = {
    chainId: async () => id,
    head: async () => ({ number: 500, timestamp: nowS(), blockSeconds: 2 }),
    blockTime: async (n) => nowS() - (500 - n) * 2,
    authorizationUsed: async (_asset, who, nonce) => {
      reads.push(nonce);
      if (poisoned.has(who)) throw new Error(`RPC refused the read for ${who}`);
      return false;
    },
    findUse: async () => undefined,
  };
  const runEnv = {
    ...env,
    DB: db,
    X402_NETWORK: network,
    RPC_URL: "x",
    PARTNER_PAYER_KEY: generatePrivateKey(),
  };
  return { network, poisoned, reads, reader, run: () => reconcile(runEnv, reader) };
}

/**
 * An owed refund whose last send is still valid (its chain read decides whether it landed), its
 * authorization signed by `from`; `age` ms since it was last looked at (the queue's order).
 */
async function owedRefund(network: string, from: string, age: number) {
  const requestId = `backlog-${crypto.randomUUID()}`;
  const nonce = hex(32);
  await env.DB.prepare(
    `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at,
       auth_nonce, asset, network, auth_from, valid_before)
     VALUES (?1, ?2, 5000, 0, 'test', 'owed', ?3, ?3, ?4, ?5, ?6, ?7, ?8)`,
  )
    .bind(requestId, hex(20), Date.now() - age, nonce, env.USDC_ADDRESS, network, from, nowS() + 3600)
    .run();
  return nonce;
}

describe("owed refunds under a backlog", () => {
  it("a refund whose read throws goes behind the others: a head of such rows does not starve the queue", async () => {
    const c = chain();
    const bad = hex(20);
    c.poisoned.add(bad);
    // A run's whole batch of refunds whose read fails every time, oldest first...
    for (let i = 0; i < 20; i++) await owedRefund(c.network, bad, 3_600_000 + i);
    // ...and one behind them whose read answers.
    const healthy = await owedRefund(c.network, hex(20), 600_000);
    const first = await c.run();
    expect(first.errors).toHaveLength(20);
    // This run or the next (past the minute a row looked at is left alone) reads the one behind.
    vi.spyOn(Date, "now").mockReturnValue(Date.now() + 61_000);
    await c.run();
    expect(c.reads).toContain(healthy);
  });
});

/** `n` failed claims on `network` whose authorization expired an hour ago (or is valid for an hour). */
async function failedClaims(network: string, n: number, expired = true) {
  const validBefore = nowS() + (expired ? -3600 : 3600);
  await env.DB.prepare(
    `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, payer, pay_to, asset,
       network, amount_atomic, auth_nonce, valid_before, x402_version, payout, checked_at)
     SELECT lower(hex(randomblob(32))), lower(hex(randomblob(16))), 'sha256', 'failed', ?1, ?1, ?2, ?3, ?4, ?5,
       3000, '0x' || lower(hex(randomblob(32))), ?6, 2, NULL, NULL FROM json_each(?7)`,
  )
    .bind(
      Date.now() - 7_200_000,
      hex(20),
      env.PAY_TO,
      env.USDC_ADDRESS,
      network,
      validBefore,
      JSON.stringify(Array(n).fill(0)),
    )
    .run();
}

describe("claims under a backlog", () => {
  it("a run takes batch after batch while its budget lasts, and the next run goes on from there", async () => {
    const c = chain();
    await failedClaims(c.network, 300);
    const first = await c.run();
    // More than one batch of 40 (what a run took before, however cheap its rows), never all 300.
    expect(first.released).toBeGreaterThan(40);
    expect(first.released).toBeLessThan(300);
    // One read per row (unused, expired): none read twice within the run.
    expect(new Set(c.reads).size).toBe(c.reads.length);
    const second = await c.run();
    // Each run says its claims' queue has rows left, and that the others have none.
    expect(first.more).toEqual({ claims: true, refunds: false, upstream: false });
    expect(second.released).toBe(first.released);
    const { left } = (await env.DB.prepare(
      "SELECT count(*) AS left FROM payment_nonces WHERE network = ?1 AND status = 'failed'",
    )
      .bind(c.network)
      .first<{ left: number }>()) ?? { left: -1 };
    expect(left).toBe(300 - 2 * first.released);
  });

  it("claims still valid are each read once a run, the whole queue when the budget allows", async () => {
    const c = chain();
    await failedClaims(c.network, 60, false);
    const run = await c.run();
    // Each waits (unused, still valid) and goes behind the rest; a later batch of the same run
    // does not read it again.
    expect(run.waiting).toBe(60);
    expect(c.reads).toHaveLength(60);
    expect(new Set(c.reads).size).toBe(60);
    expect(run.more.claims).toBe(false);
  });

  it("a later batch's query that fails stops the claims only: the run keeps what it did and goes on to the other queues", async () => {
    const c = chain(failingSecondClaimsQuery(env.DB));
    await failedClaims(c.network, 100);
    await owedRefund(c.network, hex(20), 600_000);
    await expiredUpstream(c.network);
    const run = await c.run();
    // The first batch (40) was decided; the second's query failed.
    expect(run.released).toBe(40);
    expect(run.errors).toEqual([expect.stringMatching(/^claims queue: D1_ERROR/)]);
    expect(run.more.claims).toBe(true);
    // The owed refund (still valid, unused: it waits) and the upstream payment were looked at.
    expect(run.waiting).toBe(1);
    expect(run.upstream_not_landed).toBe(1);
  });
});

/** `db`, whose second query of the claims' queue (reconcile-store.ts candidates) fails as D1 does. */
function failingSecondClaimsQuery(db: D1Database): D1Database {
  let queries = 0;
  const prepare = (sql: string) => {
    if (sql.includes("FROM payment_nonces") && sql.includes("PARTITION BY") && ++queries === 2)
      return {
        bind: () => ({
          all: async () => {
            throw new Error("D1_ERROR: Network connection lost.");
          },
        }),
      } as unknown as D1PreparedStatement;
    return db.prepare(sql);
  };
  return new Proxy(db, {
    get: (target, key) => {
      if (key === "prepare") return prepare;
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A partner's upstream authorization on `network`, expired an hour ago and never used. */
async function expiredUpstream(network: string) {
  await env.DB.prepare(
    `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
       payer, pay_to, asset, network, auth_nonce, valid_before)
     VALUES (?1, 'textkit', 'summarize', 20000, 200, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
  )
    .bind(
      crypto.randomUUID(),
      Date.now() - 7_200_000,
      hex(20),
      hex(20),
      env.USDC_ADDRESS,
      network,
      hex(32),
      nowS() - 3600,
    )
    .run();
}

/**
 * The figures of the Rate Limiting bindings (wrangler.toml [[ratelimits]]), with no imports: the
 * Worker's limits (quotas.ts) and deploy-check, which refuses a wrangler.toml that lacks one, read
 * the same ones.
 */

/** Every binding uses a 60 s period; the binding does not say when a window ends, so this is the bound. */
export const PERIOD_SECONDS = 60;

/** The per-client figures, per PERIOD_SECONDS; each binding's per-IP budgets also have wider ones below. */
const PER_CLIENT = { RL_IP: 600, RL_PAYER: 120, RL_PAYER_HEAVY: 30, RL_FREE: 20 } as const;
export type Limiter = keyof typeof PER_CLIENT;

/**
 * How many clients' budgets an IPv6 /56 and /48 get: every per-IP budget counted on binding B is
 * also counted per /56 on B_56 and per /48 on B_48 (net/ip-ranges.ts callerNetworks). A /64 alone
 * let the holder of a routed /48 (free from a tunnel broker, common at hosts) spend 65,536 times a
 * client's budget. 16 for a /48: it costs what 16 IPv4 addresses would, yet leaves room for 16
 * neighbours at a client's full rate where an ISP puts many homes in one /48. 4 for a /56 (what
 * an ISP gives one home): a home's few LANs keep a client's rate each, while one abusive home
 * takes at most a quarter of its /48's budget from the neighbours.
 */
export const NETWORK_MULTIPLES = { 56: 4, 48: 16 } as const;
export const WIDER = [56, 48] as const;
type WideLimiter = `${Limiter}_${(typeof WIDER)[number]}`;

/**
 * The limits wrangler.toml gives each binding, per PERIOD_SECONDS. The binding does not expose
 * them at run time; the published contract states them, and a test holds them to wrangler.toml.
 */
export const LIMITS = Object.fromEntries(
  Object.entries(PER_CLIENT).flatMap(([name, limit]) => [
    [name, limit],
    ...WIDER.map((bits) => [`${name}_${bits}`, limit * NETWORK_MULTIPLES[bits]]),
  ]),
) as Record<Limiter | WideLimiter, number>;

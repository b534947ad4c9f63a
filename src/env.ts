/**
 * Bindings come from `wrangler types` (worker-configuration.d.ts); secrets are optional because a
 * deployment may run without card payments or an admin token, and the code must say so clearly.
 */
export interface Secrets {
  STRIPE_SECRET_KEY?: string;
  STRIPE_WEBHOOK_SECRET?: string;
  /** Stripe API origin; the local stack and tests point it at the emulator. */
  STRIPE_API_BASE?: string;
  ADMIN_TOKEN?: string;
  CDP_API_KEY_ID?: string;
  CDP_API_KEY_SECRET?: string;
}

export type Bindings = Env & Secrets;

export interface Variables {
  requestId: string;
  body: unknown;
  query: unknown;
  params: unknown;
  /** Set when a card-credit key ran dry, so the 402 explains why. */
  creditNote: string | undefined;
}

export interface AppEnv {
  Bindings: Bindings;
  Variables: Variables;
}

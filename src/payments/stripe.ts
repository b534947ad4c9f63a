import Stripe from "stripe";
import type { Bindings } from "../env";

let cached: { key: string; client: Stripe } | undefined;

/**
 * Stripe's official client on the fetch transport and SubtleCrypto (no Node http on Workers),
 * built once per isolate. STRIPE_API_BASE points it at the local emulator in tests and `npm start`.
 */
export function stripeClient(env: Bindings): Stripe | undefined {
  const secret = env.STRIPE_SECRET_KEY;
  if (!secret) return undefined;
  const base = env.STRIPE_API_BASE ? new URL(env.STRIPE_API_BASE) : undefined;
  const key = `${secret}|${env.STRIPE_API_BASE ?? ""}`;
  if (cached?.key === key) return cached.client;
  const client = new Stripe(secret, {
    httpClient: Stripe.createFetchHttpClient(),
    maxNetworkRetries: 2,
    timeout: 15_000,
    ...(base
      ? {
          host: base.hostname,
          port: Number(base.port || (base.protocol === "https:" ? 443 : 80)),
          protocol: base.protocol.replace(":", "") as "http" | "https",
        }
      : {}),
  });
  cached = { key, client };
  return client;
}

export const webCrypto = Stripe.createSubtleCryptoProvider();

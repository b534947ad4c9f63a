// @ts-expect-error plain JS helper shared with the scripts
import { startStripeEmulator } from "../scripts/lib/stripe-emulator.mjs";

/** The Stripe emulator for unit tests (no webhook target: tests sign their own events). */
export default async function setup() {
  const emulator = await startStripeEmulator({
    port: Number(process.env.TEST_STRIPE_PORT),
    apiKey: "sk_test_unit_tests_key_000000000000",
    webhookSecret: "whsec_unit_tests_secret_0000000000",
    webhookUrl: undefined,
    // Restricted keys (test/payments/checkout-stripe-key.test.ts): the permissions the docs list,
    // and the same without Disputes: Read.
    restrictedKeys: {
      rk_test_unit_tests_documented_permissions: [
        "rak_checkout_session_write",
        "rak_dispute_read",
        "rak_refund_read",
      ],
      rk_test_unit_tests_without_disputes_read: ["rak_checkout_session_write"],
    },
  });
  return () => emulator.stop();
}

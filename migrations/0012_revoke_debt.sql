-- Calls a refund revoked but could not take, because their credits were in flight: spent by a
-- call that had not finished yet (calls_left was already 0). A call that then fails pays this
-- down before any credit goes back to calls_left, so a revoked credit is never given back
-- (payments/credits.ts refundCredit). It only grows while calls_left is 0, and calls_left grows
-- again only once it is paid off.
ALTER TABLE api_keys ADD COLUMN revoke_debt INTEGER NOT NULL DEFAULT 0 CHECK (revoke_debt >= 0);

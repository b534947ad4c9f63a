-- Reconciliation against the chain (src/payments/reconcile.ts, run by the Cron Trigger and
-- POST /api/admin/reconcile). Authorizations whose settlement was never confirmed are checked with
-- the USDC contract's EIP-3009 authorizationState and its AuthorizationUsed/Transfer logs.

-- Set on a ledger row the reconciler wrote (the request that carried the payment never confirmed
-- it); NULL on rows written by the request itself after the facilitator's settle answer.
ALTER TABLE payments ADD COLUMN reconciled_at INTEGER;

-- What the operating wallet's authorization handed to a partner promises, so that it can be
-- checked on chain like a buyer's (NULL on rows from before this migration).
ALTER TABLE upstream_payments ADD COLUMN payer TEXT;        -- the operating wallet
ALTER TABLE upstream_payments ADD COLUMN pay_to TEXT;       -- the partner's wallet
ALTER TABLE upstream_payments ADD COLUMN asset TEXT;
ALTER TABLE upstream_payments ADD COLUMN network TEXT;
ALTER TABLE upstream_payments ADD COLUMN auth_nonce TEXT;   -- EIP-3009 nonce (0x, 32 bytes)
ALTER TABLE upstream_payments ADD COLUMN valid_before INTEGER; -- unix seconds
-- NULL until reconciled; 'landed' (the transfer is on chain, tx_hash filled in) or 'not_landed'
-- (expired unused: the wallet never paid, so it is not counted as spent).
ALTER TABLE upstream_payments ADD COLUMN chain_status TEXT CHECK (chain_status IN ('landed', 'not_landed'));

-- Every final decision the reconciler took, with the evidence it read on chain: the admin
-- payments view lists these.
CREATE TABLE reconciliations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('payment', 'upstream')),
  ref TEXT NOT NULL,                -- payment_nonces.nonce, or upstream_payments.id
  request_id TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('settled', 'released', 'landed', 'not_landed')),
  evidence TEXT NOT NULL,           -- what the chain said, in words
  tx_hash TEXT,
  block_number INTEGER,
  created_at INTEGER NOT NULL,
  UNIQUE (kind, ref)
);
CREATE INDEX reconciliations_recent ON reconciliations(created_at);

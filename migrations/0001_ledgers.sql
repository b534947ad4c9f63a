-- Money and sessions. Amounts are integers: USDC atomic units (6 decimals) or micro-dollars,
-- never floats. Times are unix milliseconds.

-- One row per x402 payment authorization (EIP-3009 nonce) we accepted to run a handler.
-- The primary key is what makes a replayed or concurrent duplicate signature lose.
CREATE TABLE payment_nonces (
  nonce TEXT PRIMARY KEY,          -- "<network>:<asset>:<payer>:<nonce>"
  request_id TEXT NOT NULL,
  resource TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'settled', 'released', 'failed')),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Settled x402 payments: written only after the facilitator settled on chain.
CREATE TABLE payments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL UNIQUE,
  resource TEXT NOT NULL,          -- skill id or "partner:<partner_id>/<service_id>"
  amount_atomic INTEGER NOT NULL,
  asset TEXT NOT NULL,
  payer TEXT NOT NULL,
  pay_to TEXT NOT NULL,
  network TEXT NOT NULL,
  tx_hash TEXT NOT NULL,
  nonce TEXT NOT NULL UNIQUE REFERENCES payment_nonces(nonce),
  created_at INTEGER NOT NULL
);
CREATE INDEX payments_resource ON payments(resource, created_at);

-- Stripe Checkout sessions we created.
CREATE TABLE checkout_sessions (
  id TEXT PRIMARY KEY,             -- Stripe's cs_... id
  skill_id TEXT NOT NULL,
  calls INTEGER NOT NULL CHECK (calls > 0),
  amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
  status TEXT NOT NULL CHECK (status IN ('open', 'complete', 'expired')),
  payload TEXT,                    -- JSON body to run with the first credit, or NULL
  payload_result TEXT,             -- JSON response of that run
  api_key_id TEXT,                 -- set once credits were granted
  api_key_reveal TEXT,             -- the key, sealed (payments/key-reveal.ts) until the success page showed it once
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Card-bought credits: one API key holds N calls of one skill. Only the hash of the key is kept.
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  key_hash TEXT NOT NULL UNIQUE,   -- hex sha-256 of the mk_... key
  skill_id TEXT NOT NULL,
  calls_total INTEGER NOT NULL,
  calls_left INTEGER NOT NULL CHECK (calls_left >= 0),
  session_id TEXT UNIQUE REFERENCES checkout_sessions(id),
  created_at INTEGER NOT NULL
);

-- Stripe event ids already processed: a redelivered event grants nothing more.
CREATE TABLE webhook_events (
  event_id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  received_at INTEGER NOT NULL
);

-- What we owe partners for paid try calls, one row per settled call.
CREATE TABLE payout_ledger (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  partner_id TEXT NOT NULL,
  service_id TEXT NOT NULL,
  partner_share_micro INTEGER NOT NULL,
  marketplace_fee_micro INTEGER NOT NULL,
  payer TEXT NOT NULL,
  tx_hash TEXT NOT NULL,
  request_id TEXT NOT NULL UNIQUE,
  paid_upstream INTEGER NOT NULL DEFAULT 0,
  batch_id INTEGER REFERENCES payout_batches(id),
  created_at INTEGER NOT NULL
);
CREATE INDEX payout_ledger_owed ON payout_ledger(partner_id, batch_id);

-- A payout to a partner: settles every unbatched ledger row of that partner at once.
CREATE TABLE payout_batches (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  partner_id TEXT NOT NULL,
  amount_micro INTEGER NOT NULL,
  tx_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

-- osint_graph calls recorded for later settlement (logged_for_realization).
CREATE TABLE osint_calls (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL,
  seed_entity TEXT NOT NULL,
  max_depth INTEGER NOT NULL,
  nodes INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);

-- Paid answers kept for idempotent retries (src/payments/idempotency.ts). A retry with the same key
-- and the same request gets the stored answer back, with no new settlement or credit and no second
-- handler run. Rows older than the retention window (24 h, IDEMPOTENCY_WINDOW_MS) are ignored by
-- every query and deleted after later calls.
CREATE TABLE idempotent_results (
  key TEXT PRIMARY KEY,            -- "x402:<payment id>" or "card:<key hash>:<Idempotency-Key>"
  method TEXT NOT NULL,            -- the request fingerprint: method, path (with query),
  path TEXT NOT NULL,              --   SHA-256 of the canonical (JCS) JSON body,
  body_sha256 TEXT NOT NULL,       --   and who pays (payer address or card key hash)
  principal TEXT NOT NULL,
  request_id TEXT NOT NULL,        -- the request that ran (and whose answer is replayed)
  status TEXT NOT NULL CHECK (status IN ('running', 'done')),
  http_status INTEGER,
  headers TEXT,                    -- JSON [[name, value], ...] of the stored answer
  body TEXT,                       -- the answer's exact bytes (UTF-8), or NULL when kept in KV (body_kv)
  body_kv TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX idempotent_results_created ON idempotent_results(created_at);

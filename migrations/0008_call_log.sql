-- One row per skill call (HTTP and MCP, every outcome): the local twin of the Analytics Engine
-- data point written by src/stats/record.ts, so `npm start` and the tests read real figures
-- offline. No buyer identity and no bodies: only what /api/stats and /admin aggregate.
-- Retention: rows older than 30 days are deleted by the writer itself (see docs/STATS.md).
CREATE TABLE call_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,                 -- unix ms when the answer was ready
  skill TEXT NOT NULL,                 -- skill id, or "partner:<partner_id>/<service_id>"
  status INTEGER NOT NULL,             -- HTTP status answered
  outcome TEXT NOT NULL,               -- outcome class (src/stats/classify.ts)
  duration_ms INTEGER NOT NULL,        -- server time, request in to response out
  payment_method TEXT NOT NULL,        -- x402_v1 | x402_v2 | card_credit | free_beta | none
  amount_micro INTEGER NOT NULL,       -- charged, micro-dollars (0 unless 2xx and paid)
  transport TEXT NOT NULL DEFAULT 'http' -- http | mcp
);
CREATE INDEX call_log_skill_at ON call_log(skill, at);
CREATE INDEX call_log_at ON call_log(at);

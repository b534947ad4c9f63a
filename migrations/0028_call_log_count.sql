-- Calls counted per group and minute (src/stats/record.ts, callRows): the calls that charged
-- nothing and that the published figures cannot tell apart are one row per minute, `n` of them,
-- found again through call_log_group by every later flush of any isolate, so a flood of unpaid
-- requests no longer adds a row per request to D1 (10 GB cap). Rows without a bucket (charged
-- calls, unbatched writes, every row from before) never meet the index. Only adds columns with a
-- default and a partial index: a running older version inserts without them and each of its rows
-- counts 1, which is what they are; the readers sum n.
ALTER TABLE call_log ADD COLUMN n INTEGER NOT NULL DEFAULT 1;
ALTER TABLE call_log ADD COLUMN bucket INTEGER;
CREATE UNIQUE INDEX call_log_group
  ON call_log (bucket, skill, status, outcome, payment_method, transport, duration_ms)
  WHERE bucket IS NOT NULL;

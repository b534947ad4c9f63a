-- How many calls a call_log row stands for (src/stats/record.ts, callRows): calls that charged
-- nothing and that the published figures cannot tell apart are written as one row per flush, so
-- a flood of unpaid requests no longer adds a row per request to D1 (10 GB cap). Only adds a column
-- with a default: a running older version inserts without it and each of its rows counts 1, which
-- is what they are; the readers sum it.
ALTER TABLE call_log ADD COLUMN n INTEGER NOT NULL DEFAULT 1;

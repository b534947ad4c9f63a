-- Decisions a person takes on a refund, kept in columns of their own rather than in text. Only adds
-- nullable columns, so rows from every earlier migration keep their meaning and the running
-- version keeps working until the new one is up.

-- A refund recorded as paid by hand (POST /api/admin/resolve/refunds/{request_id}, which names the
-- amount paid): amount_micro becomes what the person's transfer paid, and owed_micro what the row
-- owed when it was recorded (0: a nothing-owed row a decision had re-derived). They differ when a
-- decision changed the row while the person was paying: paid less, the rest is a row of its own
-- (`<request_id>:rest`, owed and held); paid more, GET /api/admin/payouts flags it (overpaid_micro).
-- NULL: the operating wallet's refund, one still owed, or a hand refund recorded before this.
ALTER TABLE refunds ADD COLUMN owed_micro INTEGER;

-- A person's nothing-owed record (refund-by-hand.ts dismissInDoubt: resolved_at, resolved_note)
-- that a later decision contradicted (refunds.ts contradictedNothingOwed), kept as written (to the
-- millisecond, any note text) so a decision that bears it out again restores it exactly.
-- NULL: none kept (never contradicted, or contradicted before this: the hold's text holds it).
ALTER TABLE refunds ADD COLUMN nothing_owed_at INTEGER;
ALTER TABLE refunds ADD COLUMN nothing_owed_note TEXT;

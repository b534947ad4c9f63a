-- The ids of handled Stripe events are deleted by the Cron 35 days after their receipt
-- (src/payments/webhook-events.ts expiredEvents). Before, every row was kept for ever, one for each
-- checkout created (its expired event, if nobody paid). Without an index on received_at, the
-- delete's search read the whole table every run once nothing was left to delete; with it, the
-- search reads only the rows it deletes. Only adds (IF NOT EXISTS): the running version never reads it.
CREATE INDEX IF NOT EXISTS webhook_events_received_at ON webhook_events(received_at);

-- What a paid call owes a partner if the payment lands, written by the request when its settlement
-- went unconfirmed (status 'failed') or its ledger write failed (still 'running'): the share as JSON
-- {"partnerId","serviceId","shareMicros","feeMicros"} (micro-dollars as strings) when the partner
-- served, 'none' when it owes nothing (any other call, or a partner call whose partner never
-- served: its early settlement got no answer). NULL: not recorded (a claim still 'running', or
-- one from before this migration); reconciliation then derives the share from the resource, as
-- before. A refinery call's share depends on the recipe in its body, so only this column has it.
ALTER TABLE payment_nonces ADD COLUMN payout TEXT;

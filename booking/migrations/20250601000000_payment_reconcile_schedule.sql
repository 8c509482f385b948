-- The reconciler's schedule per payment operation (Store::claim_reconcile):
-- when it may next be claimed for a provider check, and how many claims it
-- has had (its backoff step). Existing rows get 0: due at once, first step.
-- New rows are written with next_check_at_ms = their creation time.
-- The claim starts from orders_open_by_deadline and reaches each operation
-- by its primary key, so no new index is needed.

ALTER TABLE payment_ops
    ADD COLUMN next_check_at_ms BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN checks           INTEGER NOT NULL DEFAULT 0 CHECK (checks >= 0);

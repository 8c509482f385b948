-- holdfast's authoritative store.
--
-- Every table's primary key starts with event_id, so the schema can be
-- distributed by event (Citus, CockroachDB, YugabyteDB). Plain SQL only: no
-- advisory locks, no triggers, no stored procedures. Times are BIGINT
-- milliseconds since the Unix epoch by the store's clock (*_at_ms). Text ids
-- are COLLATE "C" so ORDER BY matches Rust's byte ordering of strings, and
-- UUIDs compare bytewise in both, so every listing has one canonical order.

CREATE TABLE events (
    event_id      TEXT COLLATE "C" NOT NULL,
    price_cents   BIGINT NOT NULL CHECK (price_cents >= 0),
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (event_id)
);

CREATE TABLE seats (
    event_id           TEXT COLLATE "C" NOT NULL,
    seat_id            TEXT COLLATE "C" NOT NULL,
    state              TEXT COLLATE "C" NOT NULL
        CHECK (state IN ('available', 'held', 'payment_pending', 'sold')),
    version            BIGINT NOT NULL CHECK (version >= 0),
    hold_token         UUID,
    holder_id          TEXT COLLATE "C",
    hold_expires_at_ms BIGINT,
    order_id           UUID,
    booking_id         UUID,
    PRIMARY KEY (event_id, seat_id),
    -- The columns each state carries (see model::Seat).
    CHECK (state <> 'available' OR (hold_token IS NULL AND holder_id IS NULL
        AND hold_expires_at_ms IS NULL AND order_id IS NULL AND booking_id IS NULL)),
    CHECK (state <> 'held' OR (hold_token IS NOT NULL AND holder_id IS NOT NULL
        AND hold_expires_at_ms IS NOT NULL AND order_id IS NULL AND booking_id IS NULL)),
    CHECK (state <> 'payment_pending' OR (hold_token IS NOT NULL AND holder_id IS NOT NULL
        AND hold_expires_at_ms IS NOT NULL AND order_id IS NOT NULL AND booking_id IS NULL)),
    CHECK (state <> 'sold' OR (holder_id IS NOT NULL AND order_id IS NOT NULL
        AND booking_id IS NOT NULL))
);
-- release_hold and begin_payment find a hold's seats by token.
CREATE INDEX seats_hold_token ON seats (event_id, hold_token);
-- The sweeper: expired holds, oldest deadline first.
CREATE INDEX seats_held_deadline ON seats (hold_expires_at_ms) WHERE state = 'held';

CREATE TABLE orders (
    event_id               TEXT COLLATE "C" NOT NULL,
    order_id               UUID NOT NULL,
    holder_id              TEXT COLLATE "C" NOT NULL,
    hold_token             UUID NOT NULL,
    seat_ids               TEXT[] COLLATE "C" NOT NULL CHECK (cardinality(seat_ids) >= 1),
    amount_cents           BIGINT NOT NULL CHECK (amount_cents >= 0),
    status                 TEXT COLLATE "C" NOT NULL
        CHECK (status IN ('pending', 'reconciling', 'confirmed', 'failed', 'released',
                          'compensating', 'compensated', 'compensation_failed')),
    payment_op_id          UUID NOT NULL,
    payment_deadline_at_ms BIGINT NOT NULL,
    idempotency_key        TEXT COLLATE "C" NOT NULL,
    resolution_reason      TEXT,
    created_at_ms          BIGINT NOT NULL,
    updated_at_ms          BIGINT NOT NULL,
    PRIMARY KEY (event_id, order_id)
);
CREATE UNIQUE INDEX orders_by_id ON orders (order_id);
-- The reconciler's work list: open orders, oldest deadline first.
CREATE INDEX orders_open_by_deadline ON orders (payment_deadline_at_ms)
    WHERE status IN ('pending', 'reconciling');

CREATE TABLE payment_ops (
    event_id            TEXT COLLATE "C" NOT NULL,
    payment_op_id       UUID NOT NULL,
    order_id            UUID NOT NULL,
    amount_cents        BIGINT NOT NULL CHECK (amount_cents >= 0),
    status              TEXT COLLATE "C" NOT NULL
        CHECK (status IN ('pending', 'unknown', 'succeeded', 'failed')),
    provider_payment_id TEXT,
    last_error          TEXT,
    updated_at_ms       BIGINT NOT NULL,
    PRIMARY KEY (event_id, payment_op_id)
);
CREATE UNIQUE INDEX payment_ops_by_id ON payment_ops (payment_op_id);

-- One row per sold seat. The partial unique index below is the promise itself:
-- a second confirmed booking for a seat is impossible in the database.
-- Status 'cancelled' is reserved for a future cancellation flow (no operation
-- writes it yet; the store reads confirmed bookings only).
CREATE TABLE bookings (
    event_id      TEXT COLLATE "C" NOT NULL,
    seat_id       TEXT COLLATE "C" NOT NULL,
    booking_id    UUID NOT NULL,
    order_id      UUID NOT NULL,
    payment_op_id UUID NOT NULL,
    holder_id     TEXT COLLATE "C" NOT NULL,
    status        TEXT COLLATE "C" NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (event_id, seat_id, booking_id)
);
CREATE UNIQUE INDEX bookings_one_confirmed_per_seat ON bookings (event_id, seat_id)
    WHERE status = 'confirmed';
CREATE INDEX bookings_by_order ON bookings (event_id, order_id);

CREATE TABLE compensations (
    event_id           TEXT COLLATE "C" NOT NULL,
    compensation_id    UUID NOT NULL,
    order_id           UUID NOT NULL,
    payment_op_id      UUID NOT NULL,
    kind               TEXT COLLATE "C" NOT NULL CHECK (kind IN ('void', 'refund')),
    amount_cents       BIGINT NOT NULL CHECK (amount_cents >= 0),
    status             TEXT COLLATE "C" NOT NULL
        CHECK (status IN ('requested', 'in_flight', 'succeeded', 'failed')),
    attempts           INTEGER NOT NULL CHECK (attempts >= 0),
    last_error         TEXT,
    next_attempt_at_ms BIGINT NOT NULL,
    created_at_ms      BIGINT NOT NULL,
    updated_at_ms      BIGINT NOT NULL,
    PRIMARY KEY (event_id, compensation_id)
);
CREATE UNIQUE INDEX compensations_by_id ON compensations (compensation_id);
CREATE INDEX compensations_by_order ON compensations (order_id);

CREATE TABLE outbox (
    event_id        TEXT COLLATE "C" NOT NULL,
    outbox_id       UUID NOT NULL,
    kind            TEXT COLLATE "C" NOT NULL CHECK (kind IN ('charge', 'compensate')),
    ref_id          UUID NOT NULL,
    status          TEXT COLLATE "C" NOT NULL CHECK (status IN ('pending', 'done')),
    attempts        INTEGER NOT NULL CHECK (attempts >= 0),
    available_at_ms BIGINT NOT NULL,
    last_error      TEXT,
    created_at_ms   BIGINT NOT NULL,
    PRIMARY KEY (event_id, outbox_id)
);
-- The dispatcher's claim: due pending events, oldest first.
CREATE INDEX outbox_due ON outbox (available_at_ms, created_at_ms) WHERE status = 'pending';

-- A checkout's idempotency key, scoped to (event, holder). Inserted first in
-- begin_payment so concurrent retries serialize on this key; order_id is set
-- in the same transaction once the order exists (never NULL once committed).
CREATE TABLE idempotency_keys (
    event_id        TEXT COLLATE "C" NOT NULL,
    holder_id       TEXT COLLATE "C" NOT NULL,
    idempotency_key TEXT COLLATE "C" NOT NULL,
    hold_token      UUID NOT NULL,
    seat_ids        TEXT[] COLLATE "C" NOT NULL,
    order_id        UUID,
    created_at_ms   BIGINT NOT NULL,
    PRIMARY KEY (event_id, holder_id, idempotency_key)
);

-- The waiting rooms, as the authority keeps them (the rooms' live state is in
-- Redis; these rows are what rebuilds a room Redis lost, and what tells every
-- instance which events have a room, whatever Redis does).
CREATE TABLE waiting_rooms (
    event_id               TEXT COLLATE "C" PRIMARY KEY REFERENCES events (event_id),
    policy                 TEXT NOT NULL CHECK (policy IN ('fifo', 'lottery', 'priority')),
    opens_at_ms            BIGINT NOT NULL,
    target_active_sessions INTEGER NOT NULL CHECK (target_active_sessions >= 1),
    session_ttl_ms         BIGINT NOT NULL CHECK (session_ttl_ms >= 1),
    sold_out               BOOLEAN NOT NULL DEFAULT FALSE
);

-- One row per user who joined a room: their first and latest join (a new
-- arrival after a session ended), their session since the latest join, and
-- the purchase that ended it.
CREATE SEQUENCE waiting_room_joins;
CREATE TABLE waiting_room_users (
    event_id            TEXT COLLATE "C" NOT NULL REFERENCES waiting_rooms (event_id),
    user_id             TEXT COLLATE "C" NOT NULL,
    tier                SMALLINT NOT NULL,
    first_joined_at_ms  BIGINT NOT NULL,
    first_seq           BIGINT NOT NULL,
    joined_at_ms        BIGINT NOT NULL,
    seq                 BIGINT NOT NULL,
    position            BIGINT,
    admitted_at_ms      BIGINT,
    expires_at_ms       BIGINT,
    purchase_order_id   UUID,
    purchase_key_id     UUID,
    PRIMARY KEY (event_id, user_id),
    CHECK ((admitted_at_ms IS NULL) = (expires_at_ms IS NULL) AND (admitted_at_ms IS NULL) = (position IS NULL)),
    CHECK ((purchase_order_id IS NULL) = (purchase_key_id IS NULL)),
    CHECK (purchase_order_id IS NULL OR admitted_at_ms IS NOT NULL)
);

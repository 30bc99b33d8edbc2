-- The consumer's repair ledger (DESIGN.md "Ledger", invariant 9): one row per divergent bucket
-- an audit found and has not yet seen heal, with what was reported and asked, and when.
--
-- Why a table: a ledger held in memory forgets on restart, so every replica restart re-reported
-- and re-requested every divergent bucket at once (report storms), and replicas each kept their
-- own. In the database it is durable and shared by every control-plane replica of the service.
-- Why the signature columns: an unchanged divergence is not news (reports cool down, requests back
-- off); a changed one (either side's fold moved) is, and resets the bucket's repair budget.

create table streamseal.repair_ledger (
    origin text not null
        constraint repair_ledger_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    tenant text not null,
    event_type text not null
        constraint repair_ledger_event_type_is_not_empty check (event_type <> ''),
    stream_id text not null,
    -- deficit is repairable by redelivery; identity_mismatch and local_extra only ever alarm.
    reason text not null
        constraint repair_ledger_reason_is_known check (reason in ('deficit', 'identity_mismatch', 'local_extra')),
    -- The signature: both sides' folds of the bucket when last observed.
    local_x0 bigint not null,
    local_x1 bigint not null,
    local_n bigint not null
        constraint repair_ledger_local_n_is_not_negative check (local_n >= 0),
    origin_x0 bigint not null,
    origin_x1 bigint not null,
    origin_n bigint not null
        constraint repair_ledger_origin_n_is_not_negative check (origin_n >= 0),
    -- First sighting since the bucket last healed: what heal age and the oldest-unhealed gauge
    -- measure from. A changed signature keeps it (the bucket never healed in between).
    first_seen_at timestamptz not null,
    last_reported_at timestamptz not null,
    -- Repair requests sent under the current signature, and the backoff ladder's position.
    attempts integer not null default 0
        constraint repair_ledger_attempts_is_not_negative check (attempts >= 0),
    last_attempt_at timestamptz,
    next_attempt_at timestamptz,
    -- When the current signature spent its repair budget (attempts reached the maximum the
    -- observing call was given); null while budget remains. The bucket keeps being requested at
    -- the slowest rung and reported at the cooldown; this marks it for an operator (the
    -- repair_exhausted_buckets gauge counts it without having to know the configured maximum).
    exhausted_at timestamptz,
    primary key (origin, tenant, event_type, stream_id),
    constraint repair_ledger_only_deficits_are_requested
        check (reason = 'deficit' or (attempts = 0 and next_attempt_at is null and exhausted_at is null))
);

---- create above / drop below ----

drop table streamseal.repair_ledger;

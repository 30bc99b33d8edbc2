-- audit_cursors: on a consumer, per (origin, event_type), the stream after which the next
-- audit's drill-down resumes, and when the type was last drilled. A drill-down that stopped at
-- its page budget started again at the first stream next time and never saw the damage beyond
-- it (invariant 14). after_stream '' means the type's pages were all compared (the next
-- drill-down starts at the first stream); updated_at lets the mismatched types take turns under
-- the per-audit cap, least recently drilled first.
create table streamseal.audit_cursors (
    origin text not null
        constraint audit_cursors_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    event_type text not null
        constraint audit_cursors_event_type_is_not_empty check (event_type <> ''),
    after_stream text not null,
    updated_at timestamptz not null default now(),
    primary key (origin, event_type)
);

---- create above / drop below ----

drop table streamseal.audit_cursors;

-- Bound inbox_rejects: any publisher could fill a consumer's database through it (30 random 1 MB
-- messages made 30 rows, 29 MiB; invariant 13). From here on a reject is recorded by
-- streamseal.inbox_reject_record, which keeps a sample per reason (rows and age capped), stores a
-- prefix of the body and headers with the body's whole size, and counts every reject per reason.
-- The caps are one row an operator may change without a release, as streamseal.limits is.
create table streamseal.inbox_reject_caps (
    singleton boolean primary key default true
        constraint inbox_reject_caps_is_one_row check (singleton),
    sample_rows_per_reason integer not null default 10
        constraint inbox_reject_caps_sample_rows_in_range check (sample_rows_per_reason between 0 and 1000),
    sample_max_age interval not null default interval '7 days'
        constraint inbox_reject_caps_sample_max_age_is_positive check (sample_max_age > interval '0'),
    prefix_bytes integer not null default 4096
        constraint inbox_reject_caps_prefix_bytes_in_range check (prefix_bytes between 0 and 65536),
    max_reasons integer not null default 100
        constraint inbox_reject_caps_max_reasons_in_range check (max_reasons between 1 and 10000)
);
insert into streamseal.inbox_reject_caps default values;

-- inbox_reject_counts: every reject per reason, sampled or not, so the rest is counted rather than
-- stored. Reasons past max_reasons share the row '(other reasons)'.
create table streamseal.inbox_reject_counts (
    reason text primary key,
    rejected bigint not null
        constraint inbox_reject_counts_rejected_is_positive check (rejected > 0),
    last_rejected_at timestamptz not null default now()
);

-- The body's whole size beside its prefix; existing rows are cut to the default prefix (4 KiB)
-- and counted, so a database that was flooded before this migration is bounded by it.
alter table streamseal.inbox_rejects add column payload_bytes integer;
update streamseal.inbox_rejects
set payload_bytes = octet_length(payload),
    payload = substring(payload from 1 for 4096),
    headers = case when octet_length(headers::text) > 4096
                   then jsonb_build_object('truncated', left(headers::text, 1024)) else headers end,
    reason = left(reason, 256),
    subject = left(subject, 256);
insert into streamseal.inbox_reject_counts (reason, rejected, last_rejected_at)
select reason, count(*), max(received_at) from streamseal.inbox_rejects group by reason;
alter table streamseal.inbox_rejects
    add constraint inbox_rejects_payload_is_a_prefix check (octet_length(payload) <= 65536);
-- The sample is trimmed per reason, newest kept, and aged out by received_at.
create index inbox_rejects_by_reason on streamseal.inbox_rejects (reason, id);
create index inbox_rejects_by_received_at on streamseal.inbox_rejects (received_at);

---- create above / drop below ----

drop index streamseal.inbox_rejects_by_received_at;
drop index streamseal.inbox_rejects_by_reason;
alter table streamseal.inbox_rejects drop constraint inbox_rejects_payload_is_a_prefix;
alter table streamseal.inbox_rejects drop column payload_bytes;
drop table streamseal.inbox_reject_counts;
drop table streamseal.inbox_reject_caps;

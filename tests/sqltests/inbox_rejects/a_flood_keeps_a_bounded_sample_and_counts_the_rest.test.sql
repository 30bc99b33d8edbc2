-- Invariant 13: any publisher could fill a consumer's database through inbox_rejects (30 random
-- 1 MB messages once made 30 rows, 29 MiB). inbox_reject_record keeps a bounded sample per reason
-- (rows and age), stores only a prefix of a body and of the headers, and counts the rest.
begin;
select plan(9);

select streamseal.inbox_reject_record(
    'events.flood.t', null, null, 'decode: no Streamseal-Event-Id header',
    jsonb_build_object('Big', repeat('h', 10000), 'n', n::text),
    decode(repeat(md5(random()::text || n::text), 65536), 'hex'))
from generate_series(1, 30) n;

select is((select count(*)::int from streamseal.inbox_rejects), 10,
    '30 rejects of one reason keep a sample of 10 rows (the default cap per reason)');
select cmp_ok((select max(octet_length(payload)) from streamseal.inbox_rejects), '<=', 4096,
    'no sampled body is longer than the 4 KiB prefix');
select cmp_ok((select max(octet_length(headers::text)) from streamseal.inbox_rejects), '<=', 4096,
    'no sampled header set is longer than the prefix (wrapper included)');
select is((select min(payload_bytes) from streamseal.inbox_rejects), 1048576,
    'each sample records the size of the whole body');
select results_eq(
    $$ select reason, rejected from streamseal.inbox_reject_counts $$,
    $$ values ('decode: no Streamseal-Event-Id header', 30::bigint) $$,
    'the counter holds every reject of the reason, sampled or not');
select is((select max(headers->>'n') from streamseal.inbox_rejects where headers ? 'n'), null,
    'oversize headers are kept as a text prefix, not partly parsed');

-- Age: a sample older than the cap goes at the next record; the counter keeps it.
update streamseal.inbox_rejects set received_at = now() - interval '8 days';
select streamseal.inbox_reject_record('events.other.t', 'orders', null, 'store: unknown bits', '{}'::jsonb, '\x01'::bytea);
select results_eq(
    $$ select reason, octet_length(payload) from streamseal.inbox_rejects $$,
    $$ values ('store: unknown bits', 1) $$,
    'samples older than the age cap (7 days) are gone; a small body is kept whole');
select results_eq(
    $$ select reason, rejected from streamseal.inbox_reject_counts order by reason $$,
    $$ values ('decode: no Streamseal-Event-Id header', 30::bigint), ('store: unknown bits', 1::bigint) $$,
    'aged-out samples stay counted');

-- Distinct reasons are bounded too: past the cap, new reasons share one counter and one sample.
update streamseal.inbox_reject_caps set max_reasons = 3;
select streamseal.inbox_reject_record('events.x.t', null, null, 'decode: bad id ' || n, null, null)
from generate_series(1, 20) n;
select is((select count(*)::int from streamseal.inbox_reject_counts), 4,
    'past max_reasons, further reasons are counted under one shared counter');

select * from finish();
rollback;

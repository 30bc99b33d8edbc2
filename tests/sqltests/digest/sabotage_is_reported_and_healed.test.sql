-- Invariant 4: verify_stream_digests reports every bucket whose maintained fold differs from the
-- store (drift, missing, phantom) with stored and actual values, fixes nothing without heal, and
-- heals all of them with heal.
begin;
select plan(10);
select streamseal.set_service_name('digest-sabotage');

select streamseal.ingest(array[
    streamseal_test.copy('sab-src', 1, 1, 'k1', 1, event_id => streamseal_test.uid(1)),
    streamseal_test.copy('sab-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
    streamseal_test.copy('sab-src', 3, 3, 'k1', 3, event_id => streamseal_test.uid(3)),
    streamseal_test.copy('sab-src', 4, 4, 'k2', 1, event_id => streamseal_test.uid(4)),
    streamseal_test.copy('sab-src', 5, 5, 'k2', 2, event_id => streamseal_test.uid(5)),
    streamseal_test.copy('sab-src', 6, 6, 'k4', 1, event_id => streamseal_test.uid(6)),
    streamseal_test.copy('sab-src', 7, 7, 'k4', 2, event_id => streamseal_test.uid(7))]);

-- The true folds, from the ids alone.
create temp table truth on commit drop as
select s.stream_id, bit_xor(hashtextextended(streamseal_test.uid(s.n)::text, 0)) as x0,
       bit_xor(hashtextextended(streamseal_test.uid(s.n)::text, 1)) as x1, count(*) as n
from (values ('k1', 1), ('k1', 2), ('k1', 3), ('k2', 4), ('k2', 5), ('k4', 6), ('k4', 7)) s(stream_id, n)
group by s.stream_id;

select is(streamseal_test.digest_drift(), 0::bigint, 'before sabotage nothing drifts');

-- Sabotage: corrupt k1, drop k2's row, invent a ghost bucket.
update streamseal.stream_digests set x0 = x0 # 12345 where origin = 'sab-src' and stream_id = 'k1';
delete from streamseal.stream_digests where origin = 'sab-src' and stream_id = 'k2';
insert into streamseal.stream_digests (origin, tenant, event_type, stream_id, x0, x1, n)
values ('sab-src', 't1', 'thing.happened', 'ghost', 11, 22, 3);

create temp table expected on commit drop as
select 'sab-src'::text as origin, 't1'::text as tenant, 'thing.happened'::text as event_type, 'ghost'::text as stream_id,
       'phantom'::text as kind, 11::bigint as stored_x0, 22::bigint as stored_x1, 3::bigint as stored_n,
       0::bigint as actual_x0, 0::bigint as actual_x1, 0::bigint as actual_n
union all
select 'sab-src', 't1', 'thing.happened', 'k1', 'drift', t.x0 # 12345, t.x1, t.n, t.x0, t.x1, t.n from truth t where t.stream_id = 'k1'
union all
select 'sab-src', 't1', 'thing.happened', 'k2', 'missing', 0, 0, 0, t.x0, t.x1, t.n from truth t where t.stream_id = 'k2';

select results_eq(
    $$ select * from streamseal.verify_stream_digests(heal => false) $$,
    $$ select * from expected order by stream_id $$,
    'verify without heal reports exactly the drifted, missing and phantom buckets with stored and actual folds');
select results_eq(
    $$ select stream_id, x0, x1, n from streamseal.stream_digests where origin = 'sab-src' order by stream_id $$,
    $$ values ('ghost' collate "C", 11::bigint, 22::bigint, 3::bigint),
              ('k1', (select x0 # 12345 from truth where stream_id = 'k1'), (select x1 from truth where stream_id = 'k1'), 3),
              ('k4', (select x0 from truth where stream_id = 'k4'), (select x1 from truth where stream_id = 'k4'), 2) $$,
    'verify without heal changes no digest row');
select is(streamseal_test.digest_drift(), 3::bigint, 'the 3 differences are still there');

select results_eq(
    $$ select * from streamseal.verify_stream_digests() $$,
    $$ select * from expected order by stream_id $$,
    'verify with heal reports the same 3 buckets');
select is(streamseal_test.digest_drift(), 0::bigint, 'after healing nothing drifts');
select is_empty($$ select * from streamseal.verify_stream_digests(heal => false) $$,
    'a second verify finds nothing');
select results_eq(
    $$ select stream_id, x0, x1, n from streamseal.stream_digests where origin = 'sab-src' and stream_id like 'k%' order by stream_id $$,
    $$ select stream_id collate "C", x0, x1, n from truth order by stream_id $$,
    'the drifted and missing buckets now hold their true folds');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'sab-src' and stream_id = 'ghost' $$,
    $$ values (0::bigint, 0::bigint, 0::bigint) $$,
    'the phantom bucket is folded back to empty');
select is((select count(*)::int from streamseal.events where origin = 'sab-src'), 7,
    'healing touches no event');

select * from finish();
rollback;

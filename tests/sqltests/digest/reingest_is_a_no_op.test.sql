-- Invariant 2: re-delivering known copies adds no row and moves no digest; a superset adds only
-- the new ones and touches only their buckets.
begin;
select plan(10);
select streamseal.set_service_name('digest-reingest');

create temp table first_batch on commit drop as
select streamseal_test.copy('reingest-src', n, n, s.stream_id, n, s.event_type, s.tenant,
           event_id => streamseal_test.uid(n)) as c
from generate_series(1, 6) n
join (values (0, 'sA', 'a.done', 't1'), (1, 'sB', 'b.done', 't1'), (2, 'sC', 'a.done', 't2'))
     as s(k, stream_id, event_type, tenant) on s.k = (n - 1) / 2;

select bag_eq(
    $$ select streamseal.ingest(array(select c from first_batch order by (c).origin_seq)) $$,
    $$ select streamseal_test.uid(n) from generate_series(1, 6) n $$,
    'the first delivery stores all 6 copies');

-- Backdate the buckets so any touch (which sets updated_at = now()) shows.
update streamseal.stream_digests set updated_at = '2000-01-01' where origin = 'reingest-src';
create temp table digests_before on commit drop as
select origin, tenant, event_type, stream_id, x0, x1, n, updated_at
from streamseal.stream_digests where origin = 'reingest-src';

select is_empty(
    $$ select streamseal.ingest(array(select c from first_batch order by (c).origin_seq desc)) $$,
    'a re-delivery of the same copies returns no ids');
select is((select count(*)::int from streamseal.events where origin = 'reingest-src'), 6,
    'a re-delivery adds no row');
select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n, updated_at
       from streamseal.stream_digests where origin = 'reingest-src' $$,
    $$ select * from digests_before $$,
    'a re-delivery moves no digest, not even updated_at');

-- A superset: known copies mixed with one new copy in sC and one in a new stream sD.
select bag_eq(
    $$ select streamseal.ingest(array[
           (select c from first_batch where (c).origin_seq = 1),
           streamseal_test.copy('reingest-src', 7, 7, 'sC', 7, 'a.done', 't2', event_id => streamseal_test.uid(7)),
           (select c from first_batch where (c).origin_seq = 2),
           (select c from first_batch where (c).origin_seq = 3),
           streamseal_test.copy('reingest-src', 8, 8, 'sD', 8, 'a.done', 't2', event_id => streamseal_test.uid(8)),
           (select c from first_batch where (c).origin_seq = 4),
           (select c from first_batch where (c).origin_seq = 5),
           (select c from first_batch where (c).origin_seq = 6)]) $$,
    $$ values (streamseal_test.uid(7)), (streamseal_test.uid(8)) $$,
    'a superset returns only the 2 new ids');
select is((select count(*)::int from streamseal.events where origin = 'reingest-src'), 8,
    'a superset adds only the 2 new rows');
select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n, updated_at
       from streamseal.stream_digests where origin = 'reingest-src' and stream_id in ('sA', 'sB') $$,
    $$ select * from digests_before where stream_id in ('sA', 'sB') $$,
    'buckets with no new copy are untouched: same x0, x1, n and updated_at');
select results_eq(
    $$ select x0, x1, n, updated_at from streamseal.stream_digests where origin = 'reingest-src' and stream_id = 'sC' $$,
    $$ select b.x0 # hashtextextended(streamseal_test.uid(7)::text, 0), b.x1 # hashtextextended(streamseal_test.uid(7)::text, 1),
              b.n + 1, now() from digests_before b where b.stream_id = 'sC' $$,
    'the bucket that gained a copy folds exactly that copy in');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'reingest-src' and stream_id = 'sD' $$,
    $$ values (hashtextextended(streamseal_test.uid(8)::text, 0), hashtextextended(streamseal_test.uid(8)::text, 1), 1::bigint) $$,
    'the new stream''s bucket holds just its copy');
select is(streamseal_test.digest_drift(), 0::bigint, 'the maintained digests equal a recompute');

select * from finish();
rollback;

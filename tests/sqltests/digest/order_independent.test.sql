-- Invariant 5: the stream digests do not depend on arrival order: the same copies ingested in one
-- ascending batch, in reversed and shuffled batches, or one at a time fold to identical buckets.
begin;
select plan(7);
select streamseal.set_service_name('digest-order');

-- Twelve copies from origin ord-a over 2 tenants x 2 types x 2 streams (stream_version = origin_seq
-- keeps (origin, stream_id, stream_version) unique).
create temp table copies on commit drop as
select streamseal_test.copy('ord-a', n, n, 's' || (n % 2), n,
           case when n % 3 = 0 then 'b.done' else 'a.done' end,
           case when n % 4 < 2 then 't1' else 't2' end,
           event_id => streamseal_test.uid(n)) as c
from generate_series(1, 12) n;

-- Order A: one batch, ascending.
select streamseal.ingest(array(select c from copies order by (c).origin_seq));
create temp table digest_a on commit drop as
select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests where origin = 'ord-a';

select results_eq($$ select count(*)::int, sum(n)::int from digest_a $$, $$ values (8, 12) $$,
    'order A folds 12 copies into 8 buckets');

delete from streamseal.events where origin = 'ord-a';
select is((select count(*)::int from streamseal.stream_digests
           where origin = 'ord-a' and (x0, x1, n) <> (0, 0, 0)), 0,
    'deleting every copy empties every bucket');

-- Order B: reversed and shuffled, in three batches.
select streamseal.ingest(array(select c from copies where (c).origin_seq > 8 order by (c).origin_seq desc));
select streamseal.ingest(array(select c from copies where (c).origin_seq between 5 and 8
                               order by ((c).origin_seq * 7) % 5, (c).origin_seq desc));
select streamseal.ingest(array(select c from copies where (c).origin_seq < 5 order by (c).origin_seq desc));

select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests where origin = 'ord-a' $$,
    $$ select * from digest_a $$,
    'order B (reversed, shuffled, three batches) folds to the same buckets as order A');
select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests where origin = 'ord-a' $$,
    $$ select * from streamseal.recompute_digests('ord-a') $$,
    'order B''s buckets equal a recompute from the store');

delete from streamseal.events where origin = 'ord-a';

-- Order C: one copy per statement, shuffled.
select streamseal.ingest(array[c]) from copies order by ((c).origin_seq * 5) % 12;
select is((select count(*)::int from streamseal.events where origin = 'ord-a'), 12,
    'order C stored all 12 copies');
select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests where origin = 'ord-a' $$,
    $$ select * from digest_a $$,
    'order C (one copy per statement) folds to the same buckets as order A');
select bag_eq(
    $$ select * from digest_a $$,
    $$ select e.origin, e.tenant, e.event_type, e.stream_id,
              bit_xor(hashtextextended(e.event_id::text, 0)) as x0, bit_xor(hashtextextended(e.event_id::text, 1)) as x1,
              count(*) as n
       from streamseal.events e where e.origin = 'ord-a'
       group by 1, 2, 3, 4 $$,
    'order A''s buckets are the XOR of the ids'' two hashes and their count');

select * from finish();
rollback;

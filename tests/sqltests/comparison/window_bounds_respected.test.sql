-- Invariant 8: a comparison covers exactly the half-open window [from, to) it was given, on both
-- sides: an event outside it (missing here, or held here and deleted at the origin) makes no
-- difference, from is inclusive and to exclusive, whether the local fold comes from sealed
-- epochs, the live store or (for a whole-history window) the maintained stream_digests.
begin;
select plan(9);
select streamseal.set_service_name('cmp-window');

-- The origin holds seqs 1..30 except 21 (deleted there); this store holds 1..30 except 9 and 20,
-- and still holds 21. Stream of seq s is 'w' || (s % 3): 9 and 21 are in w0, 20 in w2.
create temp table origin_store on commit drop as
select s as seq, 'w' || (s % 3) as stream_id from generate_series(1, 30) s where s <> 21;
select streamseal.ingest(array(
    select streamseal_test.copy('cmp-window-origin', s, s, 'w' || (s % 3), s, 'win.type', event_id => streamseal_test.uid(s))
    from generate_series(1, 30) s where s not in (9, 20) order by s));
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'cmp-window-origin';
update streamseal.stream_digests set updated_at = now() - interval '2 hours' where origin = 'cmp-window-origin';
select streamseal.close_epochs(width => 10, settle => interval '1 hour');
select cmp_ok(
    (select closed_through from streamseal.lane_epochs where origin = 'cmp-window-origin'), '>=', 2::bigint,
    'setup: epochs 0 and 1 of the lane are sealed, so [10, 20) is served from digest_epochs');

create function pg_temp.types(from_seq int, to_seq int) returns table (event_type text, local_n bigint, origin_n bigint, reason text)
language sql as $$
    select c.event_type, c.local_n, c.origin_n, c.reason
    from (select bit_xor(hashtextextended(streamseal_test.uid(o.seq)::text, 0)) as x0,
                 bit_xor(hashtextextended(streamseal_test.uid(o.seq)::text, 1)) as x1, count(*) as n
          from origin_store o where o.seq >= from_seq and o.seq < to_seq) a
    cross join lateral streamseal.compare_type_digests('cmp-window-origin', from_seq, to_seq,
        array['t1'], array['win.type'], array[a.x0], array[a.x1], array[a.n]) c
$$;
create function pg_temp.streams(from_seq int, to_seq int) returns table (stream_id text, reason text)
language sql as $$
    select c.stream_id, c.reason
    from (select array_agg(a.stream_id order by a.stream_id) as ids, array_agg(a.x0 order by a.stream_id) as x0s,
                 array_agg(a.x1 order by a.stream_id) as x1s, array_agg(a.n order by a.stream_id) as ns
          from (select o.stream_id, bit_xor(hashtextextended(streamseal_test.uid(o.seq)::text, 0)) as x0,
                       bit_xor(hashtextextended(streamseal_test.uid(o.seq)::text, 1)) as x1, count(*) as n
                from origin_store o where o.seq >= from_seq and o.seq < to_seq group by o.stream_id) a) p
    cross join lateral streamseal.compare_stream_digests('cmp-window-origin', from_seq, to_seq,
        p.ids, array_fill('t1'::text, array[cardinality(p.ids)]), array_fill('win.type'::text, array[cardinality(p.ids)]),
        p.x0s, p.x1s, p.ns) c
$$;

select is_empty($$ select * from pg_temp.types(10, 20) $$,
    'type level [10, 20): seq 9 and 20 missing here and 21 deleted there lie outside: no difference');
select is_empty($$ select * from pg_temp.streams(10, 20) $$,
    'stream level [10, 20): no difference either');
select results_eq($$ select * from pg_temp.types(9, 20) $$,
    $$ values ('win.type'::text, 10::bigint, 11::bigint, 'deficit'::text) $$,
    'from is inclusive: [9, 20) holds seq 9, which this store lacks');
select results_eq($$ select * from pg_temp.streams(9, 20) $$,
    $$ values ('w0'::text, 'deficit'::text) $$,
    'stream level [9, 20): the stream of seq 9 is short');
select results_eq($$ select * from pg_temp.streams(10, 21) $$,
    $$ values ('w2'::text, 'deficit'::text) $$,
    'to is exclusive: [10, 21) reaches seq 20 (missing here), [10, 20) did not');
select results_eq($$ select * from pg_temp.streams(10, 22) $$,
    $$ values ('w0'::text, 'local_extra'::text), ('w2', 'deficit') $$,
    'stream level [10, 22): seq 21, held here and deleted there, is an extra of w0; seq 20 a deficit of w2');
select results_eq($$ select * from pg_temp.types(10, 22) $$,
    $$ values ('win.type'::text, 11::bigint, 11::bigint, 'identity_mismatch'::text) $$,
    'type level [10, 22): one missing and one extra net to equal counts: the type-level reason only says "drill down"');
-- [0, 31) covers the lane's whole history (read from stream_digests); [0, 30) folds the store.
select results_eq($$ select * from pg_temp.streams(0, 31) $$,
    $$ select * from pg_temp.streams(0, 30) $$,
    'the whole-history window (maintained stream_digests) classifies like the store fold of [0, 30): w0 mismatched, w2 short');

select * from finish();
rollback;

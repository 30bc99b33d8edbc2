-- Invariants 9 and 10: a comparison names each differing bucket with the one reason that says
-- what can be done about it, at type level and at stream level alike: 'deficit' (this store holds
-- fewer: redelivery can repair it), 'identity_mismatch' (as many, other ids: redelivery could
-- never move the fold, so it alarms), 'local_extra' (more: never deleted, only reported).
-- Matching buckets are not returned.
begin;
select plan(8);
select streamseal.set_service_name('cmp-classify');

-- What the origin holds (event id n is uid(n)); seq 7 was deleted there (close_stream).
create temp table origin_store (seq int, id int, stream_id text, event_type text) on commit drop;
insert into origin_store values
    (1, 1, 'd1', 'a.deficit'), (2, 2, 'd1', 'a.deficit'), (3, 3, 'd1', 'a.deficit'),
    (4, 4, 'm1', 'b.mismatch'), (5, 5, 'm1', 'b.mismatch'),
    (6, 6, 'x1', 'c.extra'),
    (8, 8, 'e1', 'e.equal'), (9, 9, 'e1', 'e.equal');
-- What this store holds: d1 lacks seq 3; m1 holds another id at seq 5; x1 still holds seq 7.
create temp table held (seq int, id int, stream_id text, event_type text) on commit drop;
insert into held values
    (1, 1, 'd1', 'a.deficit'), (2, 2, 'd1', 'a.deficit'),
    (4, 4, 'm1', 'b.mismatch'), (5, 1005, 'm1', 'b.mismatch'),
    (6, 6, 'x1', 'c.extra'), (7, 7, 'x1', 'c.extra'),
    (8, 8, 'e1', 'e.equal'), (9, 9, 'e1', 'e.equal');
select streamseal.ingest(array(
    select streamseal_test.copy('cmp-classify-origin', h.seq, h.seq, h.stream_id, h.seq, h.event_type,
                                event_id => streamseal_test.uid(h.id))
    from held h order by h.seq));
-- Everything arrived long ago: nothing is in flight.
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'cmp-classify-origin';
update streamseal.stream_digests set updated_at = now() - interval '2 hours' where origin = 'cmp-classify-origin';

-- The origin's answers over [1, 10), folded from its store as the origin would.
create function pg_temp.fold(ids int[]) returns table (x0 bigint, x1 bigint, n bigint) language sql as $$
    select coalesce(bit_xor(hashtextextended(streamseal_test.uid(i)::text, 0)), 0),
           coalesce(bit_xor(hashtextextended(streamseal_test.uid(i)::text, 1)), 0), count(i)
    from unnest(ids) i
$$;
create temp table type_answer on commit drop as
select 't1'::text as tenant, o.event_type, f.x0, f.x1, f.n
from (select event_type, array_agg(id) as ids from origin_store group by 1) o cross join lateral pg_temp.fold(o.ids) f;
create temp table stream_answer on commit drop as
select o.stream_id, 't1'::text as tenant, o.event_type, f.x0, f.x1, f.n
from (select stream_id, event_type, array_agg(id) as ids from origin_store group by 1, 2) o cross join lateral pg_temp.fold(o.ids) f;

create temp table type_level on commit drop as
select c.* from streamseal.compare_type_digests('cmp-classify-origin', 1, 10,
    array(select tenant from type_answer order by event_type), array(select event_type from type_answer order by event_type),
    array(select x0 from type_answer order by event_type), array(select x1 from type_answer order by event_type),
    array(select n from type_answer order by event_type)) c;
create temp table stream_level on commit drop as
select c.* from streamseal.compare_stream_digests('cmp-classify-origin', 1, 10,
    array(select stream_id from stream_answer order by stream_id), array(select tenant from stream_answer order by stream_id),
    array(select event_type from stream_answer order by stream_id), array(select x0 from stream_answer order by stream_id),
    array(select x1 from stream_answer order by stream_id), array(select n from stream_answer order by stream_id)) c;

select results_eq(
    $$ select tenant, event_type, local_n, origin_n, reason from type_level $$,
    $$ values ('t1'::text, 'a.deficit'::text, 2::bigint, 3::bigint, 'deficit'::text),
              ('t1', 'b.mismatch', 2, 2, 'identity_mismatch'),
              ('t1', 'c.extra', 2, 1, 'local_extra') $$,
    'type level: fewer is a deficit, as many with other ids an identity mismatch, more a local extra; the equal type is absent');
select bag_eq(
    $$ select event_type, local_x0, local_x1, local_n from type_level $$,
    $$ select h.event_type, f.x0, f.x1, f.n
       from (select event_type, array_agg(id) as ids from held where event_type <> 'e.equal' group by 1) h
       cross join lateral pg_temp.fold(h.ids) f $$,
    'type level: the local side is the exact fold of what this store holds');
select bag_eq(
    $$ select event_type, origin_x0, origin_x1, origin_n from type_level $$,
    $$ select event_type, x0, x1, n from type_answer where event_type <> 'e.equal' $$,
    'type level: the origin side is the answer as given');

select results_eq(
    $$ select stream_id, event_type, local_n, origin_n, reason, skipped from stream_level $$,
    $$ values ('d1'::text, 'a.deficit'::text, 2::bigint, 3::bigint, 'deficit'::text, false),
              ('m1', 'b.mismatch', 2, 2, 'identity_mismatch', false),
              ('x1', 'c.extra', 2, 1, 'local_extra', false) $$,
    'stream level: the same three reasons name the differing streams; the equal stream is absent');
select bag_eq(
    $$ select stream_id, tenant, event_type, local_x0, local_x1, local_n from stream_level $$,
    $$ select stream_id, tenant, event_type, x0, x1, n from streamseal.stream_digests
       where origin = 'cmp-classify-origin' and stream_id <> 'e1' $$,
    'stream level: the local side is the maintained fold of each stream');
select bag_eq(
    $$ select stream_id, tenant, event_type, origin_x0, origin_x1, origin_n from stream_level $$,
    $$ select * from stream_answer where stream_id <> 'e1' $$,
    'stream level: the origin side is the page as given');

-- A bucket one side lacks is (0, 0, 0) there.
select results_eq(
    $$ select event_type, local_x0, local_x1, local_n, origin_n, reason
       from streamseal.compare_type_digests('cmp-classify-origin', 1, 10, array['t1'], array['f.absent'],
                                            array[11]::bigint[], array[12]::bigint[], array[4]::bigint[])
       where event_type = 'f.absent' $$,
    $$ values ('f.absent'::text, 0::bigint, 0::bigint, 0::bigint, 4::bigint, 'deficit'::text) $$,
    'a type only the origin reports is a deficit against (0, 0, 0)');
select is_empty(
    $$ select * from streamseal.compare_stream_digests('cmp-classify-origin', 1, 10,
           array['e1'], array['t1'], array['e.equal'],
           array[(select x0 from stream_answer where stream_id = 'e1')], array[(select x1 from stream_answer where stream_id = 'e1')],
           array[2]::bigint[]) $$,
    'a page whose buckets all match returns nothing');

select * from finish();
rollback;

-- Invariant 10: extras are reported, never silently passed over. A stream this store holds that
-- the origin's page does not report, inside the stream range the page covers, is a local extra;
-- a stream beyond the page's range belongs to the next page, which finds it even when the origin
-- holds nothing more of the type (a page row that only lists the type). At type level a type
-- the origin did not report at all is a local extra.
begin;
select plan(7);
select streamseal.set_service_name('cmp-extras');

-- The origin holds streams b, d and f of extra.type; this store holds those plus a (before the
-- first), c and e (between) and z (after the last), and other.type stream o1, which the drilled
-- pages do not list.
create temp table origin_store (seq int, stream_id text) on commit drop;
insert into origin_store values (1, 'b'), (2, 'd'), (3, 'f');
select streamseal.ingest(array[
    streamseal_test.copy('cmp-extras-origin', 1, 1, 'b', 1, 'extra.type', event_id => streamseal_test.uid(1)),
    streamseal_test.copy('cmp-extras-origin', 2, 2, 'd', 2, 'extra.type', event_id => streamseal_test.uid(2)),
    streamseal_test.copy('cmp-extras-origin', 3, 3, 'f', 3, 'extra.type', event_id => streamseal_test.uid(3)),
    streamseal_test.copy('cmp-extras-origin', 4, 4, 'a', 4, 'extra.type', event_id => streamseal_test.uid(4)),
    streamseal_test.copy('cmp-extras-origin', 5, 5, 'c', 5, 'extra.type', event_id => streamseal_test.uid(5)),
    streamseal_test.copy('cmp-extras-origin', 6, 6, 'e', 6, 'extra.type', event_id => streamseal_test.uid(6)),
    streamseal_test.copy('cmp-extras-origin', 7, 7, 'z', 7, 'extra.type', event_id => streamseal_test.uid(7)),
    streamseal_test.copy('cmp-extras-origin', 8, 8, 'o1', 8, 'other.type', event_id => streamseal_test.uid(8))]);
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'cmp-extras-origin';
update streamseal.stream_digests set updated_at = now() - interval '2 hours' where origin = 'cmp-extras-origin';

create temp table answer on commit drop as
select o.stream_id, 't1'::text as tenant, 'extra.type'::text as event_type,
       hashtextextended(streamseal_test.uid(o.seq)::text, 0) as x0, hashtextextended(streamseal_test.uid(o.seq)::text, 1) as x1,
       1::bigint as n
from origin_store o;

-- A page holding the answer's streams in (after, through], as stream_digests_page pages them.
create function pg_temp.page(after text, through text) returns table (stream_id text, reason text, local_n bigint, origin_n bigint)
language sql as $$
    select c.stream_id, c.reason, c.local_n, c.origin_n
    from (select array_agg(a.stream_id order by a.stream_id) as ids, array_agg(a.tenant order by a.stream_id) as tenants,
                 array_agg(a.event_type order by a.stream_id) as types, array_agg(a.x0 order by a.stream_id) as x0s,
                 array_agg(a.x1 order by a.stream_id) as x1s, array_agg(a.n order by a.stream_id) as ns
          from answer a where (after is null or a.stream_id > after) and (through is null or a.stream_id <= through)) p
    cross join lateral streamseal.compare_stream_digests('cmp-extras-origin', 0, 7,
        p.ids, p.tenants, p.types, p.x0s, p.x1s, p.ns, covered_after => after, covered_through => through) c
$$;

select results_eq(
    $$ select * from pg_temp.page(null, null) $$,
    $$ values ('a'::text, 'local_extra'::text, 1::bigint, 0::bigint), ('c', 'local_extra', 1, 0), ('e', 'local_extra', 1, 0) $$,
    'a whole-window page: a, c and e, held here and unreported, are local extras (z, seq 7, lies outside [0, 7))');
select results_eq(
    $$ select stream_id from pg_temp.page(null, 'd') $$,
    $$ values ('a'::text), ('c') $$,
    'a first page covering (, d]: the extras before and between its streams, none beyond d');
select results_eq(
    $$ select stream_id from pg_temp.page('d', null) $$,
    $$ values ('e'::text) $$,
    'the last page covering (d, ]: the extra after d, and nothing the first page already covered');
select results_eq(
    $$ select c.stream_id, c.event_type, c.reason
       from streamseal.compare_stream_digests('cmp-extras-origin', 0, 100,
           array[null], array[null], array['extra.type'], array[null]::bigint[], array[null]::bigint[], array[null]::bigint[],
           covered_after => 'f') c $$,
    $$ values ('z'::text, 'extra.type'::text, 'local_extra'::text) $$,
    'a page past the origin''s last stream that lists the type finds z, which the origin holds nothing like');
select is_empty(
    $$ select * from streamseal.compare_stream_digests('cmp-extras-origin', 0, 100,
           array[null], array[null], array[null], array[0]::bigint[], array[0]::bigint[], array[0]::bigint[],
           covered_after => 'f') $$,
    'the bare empty-page row lists no type, so it compares nothing');
select results_eq(
    $$ select stream_id, event_type from streamseal.compare_stream_digests('cmp-extras-origin', 0, 100,
           array['b', null], array['t1', null], array['extra.type', 'other.type'],
           array[(select x0 from answer where stream_id = 'b'), null], array[(select x1 from answer where stream_id = 'b'), null],
           array[1, null]::bigint[], covered_through => 'b') $$,
    $$ values ('a'::text, 'extra.type'::text) $$,
    'only the listed types in the covered range are compared: o1 lies beyond b');

select results_eq(
    $$ select event_type, local_n, origin_n, reason from streamseal.compare_type_digests('cmp-extras-origin', 0, 100,
           array['t1'], array['extra.type'],
           array[(select bit_xor(x0) from answer)], array[(select bit_xor(x1) from answer)], array[3]::bigint[]) $$,
    $$ values ('extra.type'::text, 7::bigint, 3::bigint, 'local_extra'::text), ('other.type', 1, 0, 'local_extra') $$,
    'type level: a surplus type is a local extra, and so is a type the origin did not report at all');

select * from finish();
rollback;

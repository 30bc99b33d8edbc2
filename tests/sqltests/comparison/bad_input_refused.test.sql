-- Invariants 1 and 9: a comparison refuses what it cannot read (an origin that is not another
-- service, a window that is not 0 <= from <= to, a negative settle window, answer arrays that are
-- not parallel, a row that is not a bucket or a fold, a bucket named twice, a page row outside
-- the stream range it claims to cover) with 22023 and a message naming the bad value, instead of
-- reporting damage that is not there or missing damage that is.
begin;
select plan(18);
select streamseal.set_service_name('cmp-refusals');

select throws_ok(
    $$ select * from streamseal.compare_type_digests('Ref Origin', 1, 5, '{}', '{}', '{}', '{}', '{}') $$,
    '22023', 'compare_type_digests: origin ''Ref Origin'' is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
    'an origin that is not a service name is refused');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('cmp-refusals', 1, 5, '{}', '{}', '{}', '{}', '{}') $$,
    '22023', 'compare_type_digests: origin "cmp-refusals" is this service: a comparison holds another origin''s answer against this store''s copy',
    'this service''s own lane is refused: there is no copy to compare');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('ref-origin', 5, 1, '{}', '{}', '{}', '{}', '{}') $$,
    '22023', 'compare_type_digests: window [5, 1) of origin "ref-origin" is invalid: expected 0 <= from <= to',
    'an inverted window is refused');
select throws_ok(
    $$ select * from streamseal.compare_stream_digests('ref-origin', null, 5, '{}', '{}', '{}', '{}', '{}', '{}') $$,
    '22023', 'compare_stream_digests: window [null, 5) of origin "ref-origin" is invalid: expected 0 <= from <= to',
    'a window without a start is refused');
select throws_ok(
    $$ select * from streamseal.compare_stream_digests('ref-origin', 1, 5, '{}', '{}', '{}', '{}', '{}', '{}',
                                                       settle => interval '-1 second') $$,
    '22023', 'compare_stream_digests: settle -00:00:01 is invalid: expected a non-negative interval',
    'a negative settle window is refused');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('ref-origin', 1, 5, array['t1', 't2'], array['a', 'b'],
           array[1, 2]::bigint[], array[1]::bigint[], array[1, 1]::bigint[]) $$,
    '22023', 'compare_type_digests: x1s has 1 elements for 2 tenants: expected one-dimensional arrays parallel to tenants',
    'arrays that are not parallel are refused');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('ref-origin', 1, 5, array['t1', 't2'], array['a', 'b'],
           array[1, 2]::bigint[], array[1, 1]::bigint[], null) $$,
    '22023', 'compare_type_digests: ns has null elements for 2 tenants: expected one-dimensional arrays parallel to tenants',
    'a missing array is refused');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('ref-origin', 1, 5, array['t1', 't2'], array[['a'], ['b']],
           array[1, 2]::bigint[], array[1, 1]::bigint[], array[1, 1]::bigint[]) $$,
    '22023', 'compare_type_digests: event_types has 2 dimensions: expected one-dimensional arrays parallel to tenants',
    'a two-dimensional array is refused');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('ref-origin', 1, 5, array[null, 't2'], array['a', 'b'],
           array[1, 2]::bigint[], array[1, 1]::bigint[], array[1, 1]::bigint[]) $$,
    '22023', 'compare_type_digests: row #1 of the answer of origin "ref-origin": tenant null is invalid: expected a name ('''' for a single-tenant service)',
    'a bucket without a tenant is refused');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('ref-origin', 1, 5, array['t1', 't2'], array['a', ''],
           array[1, 2]::bigint[], array[1, 1]::bigint[], array[1, 1]::bigint[]) $$,
    '22023', 'compare_type_digests: row #2 of the answer of origin "ref-origin": event_type '''' is invalid: expected a non-empty name',
    'a bucket with an empty event type is refused');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('ref-origin', 1, 5, array['t1', 't2'], array['a', 'b'],
           array[1, 2]::bigint[], array[1, 1]::bigint[], array[1, 0]::bigint[]) $$,
    '22023', 'compare_type_digests: row #2 of the answer of origin "ref-origin": digest (2, 1, 0) is invalid: expected x0, x1 and n >= 0, with x0 = x1 = 0 when n = 0',
    'an empty bucket with a non-zero fold is refused: no set of events folds to it');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('ref-origin', 1, 5, array['t1', 't2'], array['a', 'b'],
           array[1, 2]::bigint[], array[1, null]::bigint[], array[1, 1]::bigint[]) $$,
    '22023', 'compare_type_digests: row #2 of the answer of origin "ref-origin": digest (2, null, 1) is invalid: expected x0, x1 and n >= 0, with x0 = x1 = 0 when n = 0',
    'a fold with a missing hash is refused');
select throws_ok(
    $$ select * from streamseal.compare_type_digests('ref-origin', 1, 5, array['t1', 't1'], array['a', 'a'],
           array[1, 2]::bigint[], array[1, 1]::bigint[], array[1, 1]::bigint[]) $$,
    '22023', 'compare_type_digests: bucket (tenant ''t1'', event_type ''a'') appears more than once in the answer of origin "ref-origin"',
    'a type-level bucket named twice is refused');
select throws_ok(
    $$ select * from streamseal.compare_stream_digests('ref-origin', 1, 5, '{}', '{}', '{}', '{}', '{}', '{}',
                                                       covered_after => 'm', covered_through => 'm') $$,
    '22023', 'compare_stream_digests: stream range (''m'', ''m''] is invalid: expected covered_after < covered_through (null: unbounded)',
    'an empty stream range is refused');
select throws_ok(
    $$ select * from streamseal.compare_stream_digests('ref-origin', 1, 5, array['s1'], array['t1'], array['a'],
           array[1]::bigint[], array[1]::bigint[], array[1]::bigint[], covered_after => 's1') $$,
    '22023', 'compare_stream_digests: row #1 of the page of origin "ref-origin": stream_id ''s1'' lies outside the covered stream range (''s1'', null]',
    'a page row outside the range the page claims to cover is refused: the range decides what counts as an extra');
select throws_ok(
    $$ select * from streamseal.compare_stream_digests('ref-origin', 1, 5, array[null], array['t1'], array['a'],
           array[1]::bigint[], array[1]::bigint[], array[1]::bigint[]) $$,
    '22023', 'compare_stream_digests: row #1 of the page of origin "ref-origin": stream_id null is invalid: expected a stream (a row without one only ends an empty page or lists an event_type)',
    'a bucket without a stream is refused');
select throws_ok(
    $$ select * from streamseal.compare_stream_digests('ref-origin', 1, 5, array['s1', 's1'], array['t1', 't1'], array['a', 'a'],
           array[1, 1]::bigint[], array[1, 1]::bigint[], array[1, 1]::bigint[]) $$,
    '22023', 'compare_stream_digests: bucket (stream_id ''s1'', tenant ''t1'', event_type ''a'') appears more than once in the page of origin "ref-origin"',
    'a stream-level bucket named twice is refused');
select throws_ok(
    $$ select * from streamseal.compare_stream_digests('ref-origin', 1, 5, array['s1'], array['t1', 't2'], array['a'],
           array[1]::bigint[], array[1]::bigint[], array[1]::bigint[]) $$,
    '22023', 'compare_stream_digests: tenants has 2 elements for 1 stream_ids: expected one-dimensional arrays parallel to stream_ids',
    'page arrays that are not parallel are refused');

select * from finish();
rollback;

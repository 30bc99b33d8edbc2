-- Invariants 9 and 10 across databases: the consumer reads a stream page's range
-- (covered_after, covered_through] in byte order (collate "C"), the order the origin paged in
-- (answers.sql), whatever this database's default collation or the collation the page's bounds
-- and ids carry. The bounds and ids below carry the ICU en-US collation, as an en-US database's
-- default would: there 'a' < 'B' < 'b', in bytes 'B' < 'a' < 'b'. A page covering ('B', 'a-1']
-- holds a and a-1: read in en-US it would refuse a and a-1 as outside the range, or call the
-- local a, a-1 extras and miss them in the next page.
begin;
select plan(4);
select streamseal.set_service_name('cmp-byte-order');

-- This store holds one copy each of streams b, a, a-1, A-2, B; of a-1 none (lost).
select streamseal.ingest(array[
    streamseal_test.copy('cmp-byte-order-origin', 1, 1, 'b', 1, event_id => streamseal_test.uid(1)),
    streamseal_test.copy('cmp-byte-order-origin', 2, 2, 'a', 1, event_id => streamseal_test.uid(2)),
    streamseal_test.copy('cmp-byte-order-origin', 4, 4, 'A-2', 1, event_id => streamseal_test.uid(4)),
    streamseal_test.copy('cmp-byte-order-origin', 5, 5, 'B', 1, event_id => streamseal_test.uid(5))]);

-- The origin's page ('B', 'a-1']: streams a (as here) and a-1 (lost here), in byte order.
create function pg_temp.page(from_seq int, to_seq int, covered_after text, covered_through text)
returns table (stream_id text, reason text)
language sql as $$
    select c.stream_id, c.reason
    from streamseal.compare_stream_digests('cmp-byte-order-origin', from_seq, to_seq,
        array['a', 'a-1'] collate "en-US-x-icu", array['t1', 't1'], array['thing.happened', 'thing.happened'],
        array[hashtextextended(streamseal_test.uid(2)::text, 0), hashtextextended(streamseal_test.uid(3)::text, 0)],
        array[hashtextextended(streamseal_test.uid(2)::text, 1), hashtextextended(streamseal_test.uid(3)::text, 1)],
        array[1, 1]::bigint[],
        covered_after => covered_after collate "en-US-x-icu", covered_through => covered_through collate "en-US-x-icu") c
$$;

select results_eq($$ select stream_id collate "C", reason from pg_temp.page(0, 100, 'B', 'a-1') $$,
    $$ values ('a-1' collate "C", 'deficit'::text) $$,
    'whole history (stream_digests): the page (B, a-1] names only the lost a-1; A-2, B and b lie outside it');
select results_eq($$ select stream_id collate "C", reason from pg_temp.page(2, 100, 'B', 'a-1') $$,
    $$ values ('a-1' collate "C", 'deficit'::text) $$,
    'a window (the store''s events): the same');
select throws_ok($$ select * from pg_temp.page(0, 100, 'a', 'b') $$, '22023',
    'compare_stream_digests: row #1 of the page of origin "cmp-byte-order-origin": stream_id ''a'' lies outside the covered stream range (''a'', ''b'']',
    'a stream at the range''s open end is refused in byte order too');

-- The ledger's heal reads the page's range in the same order: a divergence ledgered in a-1 heals
-- when a page (B, a-1] compares clean, and a bucket of b (outside it) stays.
select count(*) from streamseal.ledger_observe('cmp-byte-order-origin',
    jsonb_build_array(streamseal_test.divergent_bucket('a-1', 0, 1), streamseal_test.divergent_bucket('b', 0, 1)));
select results_eq(
    $$ select h.stream_id collate "C" from streamseal.ledger_heal_matched('cmp-byte-order-origin', array['ledger.type'], '[]'::jsonb,
           after_stream => 'B' collate "en-US-x-icu", through_stream => 'a-1' collate "en-US-x-icu") h $$,
    $$ values ('a-1' collate "C") $$,
    'heal_matched over (B, a-1] heals a-1 and leaves b');

select * from finish();
rollback;

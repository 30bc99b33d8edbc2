-- Invariants 7 and 15: read_feed hands out own events only once stamped, by origin_seq, and a
-- copy landed by a transaction still open (this one) stays behind the horizon: it is never read
-- before it commits, so nothing can commit later below a reader's position. The token resumes
-- after the batch and the own boundary never passes the stamper.
begin;
select plan(7);
select streamseal.set_service_name('feed-reader');

select streamseal.append(array[
    streamseal_test.own('s1', 1, 'order.placed', event_id => streamseal_test.uid(1)),
    streamseal_test.own('s1', 2, 'order.placed', event_id => streamseal_test.uid(2)),
    streamseal_test.own('s2', 1, 'order.shipped', event_id => streamseal_test.uid(3))]);
select streamseal.ingest(array[
    streamseal_test.copy('feed-orders', 1, 1, 'o1', 1, 'order.placed', event_id => streamseal_test.uid(11))]);

select is((select count(*) from streamseal.read_feed(null, null, null) where event_id is not null), 0::bigint,
    'nothing is read before the stamper numbers own events, and an uncommitted copy is held back');
select streamseal.stamp();

create temp table b1 as select * from streamseal.read_feed(null, null, null, 2);
select results_eq($$ select event_id, origin_seq from b1 where event_id is not null $$,
    $$ values (streamseal_test.uid(1), 1::bigint) $$,
    'own events come by origin_seq, half a batch while copies may wait');
select is((select count(*) from b1 where next_token is not null and event_id is null), 1::bigint,
    'the batch ends with one row carrying the next token');
create temp table b2 as select * from streamseal.read_feed(null, null, (select next_token from b1 where next_token is not null), 10);
select results_eq($$ select event_id from b2 where event_id is not null $$,
    $$ values (streamseal_test.uid(2)), (streamseal_test.uid(3)) $$,
    'the token resumes exactly after the batch');
select results_eq(
    $$ select unnest(t.members), unnest(t.boundaries)
       from streamseal.feed_token((select next_token from b2 where next_token is not null)) t $$,
    $$ values ('feed-reader'::text, 4::bigint) $$,
    'the own boundary is one past the stamper''s last number');
select results_eq(
    $$ select event_id from streamseal.read_feed(array['order.shipped'], null, null) where event_id is not null $$,
    $$ values (streamseal_test.uid(3)) $$,
    'a scope of types reads only those types');
select throws_ok(
    $$ select * from streamseal.read_feed(array['order.shipped'], null, (select next_token from b2 where next_token is not null)) $$,
    'SS400', 'resume token was issued for another scope (event types and tenants): read with the scope it was issued for, or start without a token',
    'a token read with another scope is refused as a bad request');

select * from finish();
rollback;

-- Invariant 15: a token from another database is admitted only when this store can honour it:
-- a member at another generation or this service's own boundary ahead of its stamper is a
-- conflict (SS409); a member not held here in scope, or history below a boundary that is not
-- held here, is gone (SS410). Each refusal names the origin and what to do.
begin;
select plan(7);
select streamseal.set_service_name('feed-admit');
select streamseal.append(array[streamseal_test.own('s1', 1, 'order.placed')]);
select streamseal.stamp();
select streamseal.ingest(array[
    streamseal_test.copy('feed-orders', 50, 5, 'o5', 1, 'order.placed'),
    streamseal_test.copy('feed-orders', 60, 6, 'o6', 1, 'order.placed')]);
insert into streamseal.known_origins (origin, control_subject, interval_seconds, generation, last_checkpoint_at, last_window_to)
values ('feed-orders', 'streamseal.ctl.feed-orders', 60, 3, now(), 61);
insert into streamseal.lanes (origin, tenant, event_type, floor, birth_floor, last_type_seq)
values ('feed-orders', 't1', 'order.placed', 6, 4, 6);

-- tok(members, generations, boundaries): a token another database issued for every type and tenant.
create function pg_temp.tok(members text[], generations bigint[], boundaries bigint[]) returns text
language sql as $$
    select streamseal._feed_token_encode(streamseal._feed_scope_digest(null, null), members, generations, boundaries,
        '\x0102030405060708'::bytea, 0, 0, 0, 0, '{}', '{}')
$$;

select throws_ok($$ select * from streamseal.read_feed(null, null, pg_temp.tok(array['feed-orders'], array[2::bigint], array[50::bigint])) $$,
    'SS409', 'origin "feed-orders" is at generation 3 here, the token at 2: its history changed (or this store has not heard yet); retry once the stores agree, or start without a token',
    'a copied origin at another generation is a conflict');
select throws_ok($$ select * from streamseal.read_feed(null, null, pg_temp.tok(array['feed-admit'], array[1::bigint], array[2::bigint])) $$,
    'SS409', 'origin "feed-admit" (this service) is at generation 0 here, the token at 1: its history changed since the token was issued; start without a token (read everything again)',
    'this service at another generation is a conflict');
select throws_ok($$ select * from streamseal.read_feed(null, null, pg_temp.tok(array['feed-admit'], array[0::bigint], array[100::bigint])) $$,
    'SS409', 'origin "feed-admit" (this service): the token''s boundary 100 is ahead of this store, which numbered its events only through 1 (a restored or failed-over database that lost transactions?); start without a token',
    'an own boundary ahead of the stamper is a conflict: the numbers above it may name other events here');
select throws_ok($$ select * from streamseal.read_feed(null, null, pg_temp.tok(array['feed-ghost'], array[0::bigint], array[7::bigint])) $$,
    'SS410', 'origin "feed-ghost" is not held in this scope here: resume on a store that consumes it, or start without a token',
    'a member this store does not hold is gone');
select throws_ok($$ select * from streamseal.read_feed(null, null, pg_temp.tok(array['feed-orders'], array[3::bigint], array[10::bigint])) $$,
    'SS410', 'origin "feed-orders": this store holds tenant ''t1'' type ''order.placed'' only from origin_seq 50 (type_seq 5), above the token''s boundary 10: the history the token needs is gone here; resume on a store that holds it, or start without a token',
    'a boundary below the history held here is gone');
select lives_ok($$ select * from streamseal.read_feed(null, null, pg_temp.tok(array['feed-admit', 'feed-orders'], array[0::bigint, 3], array[2::bigint, 50])) $$,
    'a token this store can honour is admitted');
select results_eq(
    $$ select unnest(t.members), unnest(t.boundaries), unnest(t.generations)
       from streamseal.feed_token((select next_token from streamseal.read_feed(null, null,
            pg_temp.tok(array['feed-orders'], array[3::bigint], array[50::bigint])) where next_token is not null)) t $$,
    $$ values ('feed-admit'::text, 2::bigint, 0::bigint), ('feed-orders', 50, 3) $$,
    'admitted, the token keeps its boundaries while it replays and adds this service from 1 (then past what it read)');

select * from finish();
rollback;

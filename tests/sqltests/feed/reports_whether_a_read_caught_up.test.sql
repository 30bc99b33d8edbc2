-- Invariant 15 (delivery without a poll): read_feed's token row says caught_up only when the read
-- reached everything readable in its snapshot, so a subscriber can wait for the next NOTIFY
-- instead of reading again; a full batch, own events beyond the own share of a batch, or copies
-- beyond the batch keep it false. Copies carry an old landed_xid here so they are readable
-- inside this one transaction (a copy this transaction lands stays behind the horizon).
begin;
select plan(7);
select streamseal.set_service_name('feed-caught-up');

select streamseal.append(array[
    streamseal_test.own('s1', 1, 'order.placed', event_id => streamseal_test.uid(1)),
    streamseal_test.own('s1', 2, 'order.placed', event_id => streamseal_test.uid(2)),
    streamseal_test.own('s1', 3, 'order.placed', event_id => streamseal_test.uid(3))]);
select streamseal.stamp();
insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload, landed_xid)
select streamseal_test.uid(10 + g), 'feed-caught-up-orders', g, g, 't1', 'o' || g, 1, 'order.placed', '\x7b7d', '3'::xid8
from generate_series(1, 3) g;

create temp table r1 as select * from streamseal.read_feed(null, null, null, 4);
select is((select count(*) from r1 where event_id is not null), 4::bigint, 'a batch of 4 is full');
select is((select caught_up from r1 where next_token is not null), false, 'a full batch has not caught up');

create temp table r2 as select * from streamseal.read_feed(null, null, (select next_token from r1 where next_token is not null), 4);
select is((select count(*) from r2 where event_id is not null), 2::bigint, 'the rest: 2 events');
select is((select caught_up from r2 where next_token is not null), true, 'a read that took everything readable has caught up');

-- Own events beyond the own share of a batch (half of it) while the batch is not full.
create temp table r3 as select * from streamseal.read_feed(array['order.placed'], array['t1'], null, 3);
select is((select count(*) filter (where origin = 'feed-caught-up') from r3), 1::bigint,
    'own events take half a batch of 3 (one)');
select is((select caught_up from r3 where next_token is not null), false,
    'own events left behind the own share: not caught up, even if the batch is not full');

create temp table r4 as select * from streamseal.read_feed(array['order.placed'], array['t1'],
    (select next_token from (select * from streamseal.read_feed(array['order.placed'], array['t1'],
        (select next_token from r3 where next_token is not null), 10)) x where x.next_token is not null), 10);
select is((select caught_up from r4 where next_token is not null and event_id is null), true,
    'nothing left: caught up');

select * from finish();
rollback;

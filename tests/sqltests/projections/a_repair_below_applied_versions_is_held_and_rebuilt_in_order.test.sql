-- Projections fold each stream in stream_version order (issue 19 item 2; invariant 5 for read
-- models: the state does not depend on arrival order). A repaired copy that lands below versions
-- a projection already applied (its stream's other type had a later version applied; or, within
-- one batch, a later version came first) is held, not applied out of order: the stream's cursor
-- stays short, the coverage audit reports it as out_of_order and rebuilds the stream through the
-- reset hook, replaying it in stream_version order. A reactor is not held (side effects are not
-- state: it gets the repair as it lands).
begin;
select plan(10);
select streamseal.set_service_name('proj-order');
create schema proj_order;
create table proj_order.folds (seq bigint generated always as identity, stream_id text, stream_version bigint);
create table proj_order.reacted (stream_id text, stream_version bigint);
create function proj_order.fold(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_order.folds (stream_id, stream_version) values (e.stream_id, e.stream_version) $$;
create function proj_order.react(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_order.reacted values (e.stream_id, e.stream_version) $$;
create function proj_order.reset(origin text, tenant text, stream_id text) returns void language sql
    as $$ delete from proj_order.folds f where f.stream_id = reset.stream_id $$;
select streamseal.register_projection('order-p', array['ord.a', 'ord.b'], 'proj_order.fold', reset => 'proj_order.reset');
select streamseal.register_reactor('order-r', array['ord.a', 'ord.b'], 'proj_order.react');

-- Stream o1: ord.a v1 and v3 reach the feed first; ord.b v2 lands after them (a repair of a lost
-- copy, or an own append that commits late: the feed is in commit order either way; a suite runs in
-- one transaction, where the feed holds its own copies back, so own events stand in for copies).
select streamseal.append(array[streamseal_test.own('o1', 1, 'ord.a', event_id => streamseal_test.uid(1)),
                               streamseal_test.own('o1', 3, 'ord.a', event_id => streamseal_test.uid(3))]);
select streamseal.stamp();
select streamseal.run_handler('order-p');
select streamseal.run_handler('order-r');
-- v2 lands.
select streamseal.append(array[streamseal_test.own('o1', 2, 'ord.b', event_id => streamseal_test.uid(2))]);
select streamseal.stamp();
select results_eq($$ select read, applied from streamseal.run_handler('order-p') $$, $$ values (1, 0) $$,
    'the projection reads the repair and does not apply it after v3');
select results_eq($$ select stream_id, stream_version, applied_version from streamseal.projection_held where projection = 'order-p' $$,
    $$ values ('o1', 2::bigint, 3::bigint) $$, 'it is held, naming the version applied above it');
select streamseal.run_handler('order-r');
select results_eq($$ select stream_version from proj_order.reacted order by 1 $$, $$ values (1::bigint), (2::bigint), (3::bigint) $$,
    'the reactor gets the repair as it lands');

-- Within one batch: v5 lands before v4 (one transaction, feed order 5 then 4).
select streamseal.append(array[streamseal_test.own('o1', 5, 'ord.a', event_id => streamseal_test.uid(5)),
                               streamseal_test.own('o1', 4, 'ord.b', event_id => streamseal_test.uid(4))]);
select streamseal.stamp();
select results_eq($$ select read, applied from streamseal.run_handler('order-p') $$, $$ values (2, 1) $$,
    'in one batch, the later version applies and the earlier one behind it is held');
select streamseal.run_handler('order-p'); -- caught up
select results_eq($$ select stream_version from proj_order.folds order by seq $$, $$ values (1::bigint), (3::bigint), (5::bigint) $$,
    'nothing was folded out of order');

select results_eq($$ select gaps, rebuilt, replayed from streamseal.coverage_audit(10, 10, false) $$,
    $$ values (1::bigint, 1::bigint, 5::bigint) $$, 'the audit finds the short bucket (ord.b of o1: v2 and v4 held) and rebuilds the stream, all five');
select results_eq($$ select distinct kind from streamseal.coverage_findings where projection = 'order-p' $$,
    $$ values ('out_of_order') $$, 'named out_of_order');
select results_eq($$ select stream_version from proj_order.folds order by seq $$,
    $$ values (1::bigint), (2::bigint), (3::bigint), (4::bigint), (5::bigint) $$, 'the rebuild folds the stream in version order');
select is((select count(*) from streamseal.projection_held where projection = 'order-p'), 0::bigint, 'and releases what was held');
select results_eq($$ select gaps from streamseal.coverage_audit(10, 10, false) $$, $$ values (0::bigint) $$,
    'the next audit finds the projection covered');

select * from finish();
rollback;

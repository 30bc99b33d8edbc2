-- Projections fold each stream in stream_version order (issue 19 item 2; invariant 5 for read
-- models: the state does not depend on arrival order). An event that lands below versions a
-- projection already applied (a repaired copy under later versions, or a later version first
-- within one batch) is held, not applied out of order, and the run rebuilds its stream through
-- the reset hook in version order, at most max_order_rebuilds streams a run (invariant 9); what
-- the run does not rebuild stays held, its bucket short: the coverage audit reports it as
-- out_of_order and rebuilds it (or reports no_reset_hook). A reactor is not held: side effects
-- are not state, it gets the repair as it lands.
begin;
select plan(13);
select streamseal.set_service_name('proj-order');
create schema proj_order;
create table proj_order.folds (seq bigint generated always as identity, handler text, stream_id text, stream_version bigint);
create table proj_order.reacted (stream_id text, stream_version bigint);
create function proj_order.fold(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_order.folds (handler, stream_id, stream_version) values ('p', e.stream_id, e.stream_version) $$;
create function proj_order.fold_q(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_order.folds (handler, stream_id, stream_version) values ('q', e.stream_id, e.stream_version) $$;
create function proj_order.react(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_order.reacted values (e.stream_id, e.stream_version) $$;
create function proj_order.reset(origin text, tenant text, stream_id text) returns void language sql
    as $$ delete from proj_order.folds f where f.handler = 'p' and f.stream_id = reset.stream_id $$;
select streamseal.register_projection('order-p', array['ord.a', 'ord.b'], 'proj_order.fold', reset => 'proj_order.reset');
select streamseal.register_projection('order-q', array['ord.a', 'ord.b'], 'proj_order.fold_q'); -- no reset hook
select streamseal.register_reactor('order-r', array['ord.a', 'ord.b'], 'proj_order.react');

-- Stream o1: ord.a v1 and v3 reach the feed first; ord.b v2 lands after them (a repair of a lost
-- copy, or an own append that commits late: the feed is in commit order either way; a suite runs in
-- one transaction, where the feed holds its own copies back, so own events stand in for copies).
select streamseal.append(array[streamseal_test.own('o1', 1, 'ord.a', event_id => streamseal_test.uid(1)),
                               streamseal_test.own('o1', 3, 'ord.a', event_id => streamseal_test.uid(3))]);
select streamseal.stamp();
select streamseal.run_handler('order-p');
select streamseal.run_handler('order-q');
select streamseal.run_handler('order-r');
-- v2 lands.
select streamseal.append(array[streamseal_test.own('o1', 2, 'ord.b', event_id => streamseal_test.uid(2))]);
select streamseal.stamp();
select results_eq($$ select read, applied, out_of_order, order_rebuilds from streamseal.run_handler('order-p') $$,
    $$ values (1, 0, 1, 1) $$, 'the projection holds the repair rather than apply it after v3, and rebuilds the stream');
select results_eq($$ select stream_version from proj_order.folds where handler = 'p' order by seq $$,
    $$ values (1::bigint), (2::bigint), (3::bigint) $$, 'the rebuild folded the stream in version order');
select results_eq($$ select read, applied, out_of_order, order_rebuilds from streamseal.run_handler('order-q') $$,
    $$ values (1, 0, 1, 0) $$, 'a projection without a reset hook holds it and cannot rebuild');
select results_eq($$ select stream_id, stream_version, applied_version from streamseal.projection_held $$,
    $$ values ('o1' collate "C", 2::bigint, 3::bigint) $$, 'only its hold remains, naming the version applied above it');
select streamseal.run_handler('order-r');
select results_eq($$ select stream_version from proj_order.reacted order by 1 $$, $$ values (1::bigint), (2::bigint), (3::bigint) $$,
    'the reactor gets the repair as it lands');

-- Within one batch, stream o2: v2 lands before v1 (one transaction, feed order 2 then 1); this run
-- may not rebuild. (A fresh stream: in a suite's one transaction, events appended after o1's
-- rebuild count as landed by that rebuild's transaction, hence replayed already.)
select streamseal.append(array[streamseal_test.own('o2', 2, 'ord.a', event_id => streamseal_test.uid(12)),
                               streamseal_test.own('o2', 1, 'ord.b', event_id => streamseal_test.uid(11))]);
select streamseal.stamp();
select results_eq($$ select read, applied, out_of_order, order_rebuilds from streamseal.run_handler('order-p', max_order_rebuilds => 0) $$,
    $$ values (2, 1, 1, 0) $$, 'in one batch, the later version applies and the earlier one behind it is held');
select streamseal.run_handler('order-p', max_order_rebuilds => 0); -- caught up
select streamseal.run_handler('order-q');
select streamseal.run_handler('order-q');
select results_eq($$ select stream_version from proj_order.folds where handler = 'p' and stream_id = 'o2' order by seq $$,
    $$ values (2::bigint) $$, 'nothing was folded out of order');

select results_eq($$ select gaps, rebuilt, replayed from streamseal.coverage_audit(10, 10, false) $$,
    $$ values (3::bigint, 1::bigint, 2::bigint) $$,
    'the audit finds the short ord.b buckets (o2 of both projections, o1 of the one without a reset) and rebuilds the one it can');
select results_eq($$ select projection, stream_id, kind, action from streamseal.coverage_findings order by 1, 2 $$,
    $$ values ('order-p', 'o2' collate "C", 'out_of_order', 'rebuilt'), ('order-q', 'o1', 'out_of_order', 'no_reset_hook'),
              ('order-q', 'o2', 'out_of_order', 'no_reset_hook') $$,
    'named out_of_order; the projection without a reset hook is reported');
select results_eq($$ select stream_version from proj_order.folds where handler = 'p' and stream_id = 'o2' order by seq $$,
    $$ values (1::bigint), (2::bigint) $$, 'the rebuild folds the stream in version order');
select is((select count(*) from streamseal.projection_held where projection = 'order-p'), 0::bigint, 'and releases what was held');
select results_eq($$ select gaps from streamseal.coverage_audit(10, 10, false) $$,
    $$ values (2::bigint) $$, 'the next audit finds only the projection that cannot rebuild');
select throws_ok($$ select * from streamseal.run_handler('order-p', max_order_rebuilds => -1) $$, '22023',
    'run_handler: max_order_rebuilds -1 is invalid: expected 0 or more', 'a negative cap is refused');

select * from finish();
rollback;

-- Invariant 2 (no trigger fires where nothing was missing) and the proposal's "backfill builds
-- state and never re-fires triggers": a state-only event reaches a projection and never a
-- reactor; a plain event reaches both, once, however often the handlers run.
begin;
select plan(6);
select streamseal.set_service_name('proj-kinds');
create schema proj_kinds;
create table proj_kinds.seen (handler text, event_id uuid, flags integer, replay boolean);
create function proj_kinds.project(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_kinds.seen values ('projection', e.event_id, e.flags, e.replay) $$;
create function proj_kinds.react(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_kinds.seen values ('reactor', e.event_id, e.flags, e.replay) $$;

select is(streamseal.register_projection('kinds-p', array['order.placed'], 'proj_kinds.project'), 'registered',
    'a projection registers');
select is(streamseal.register_reactor('kinds-r', array['order.placed'], 'proj_kinds.react'), 'registered',
    'a reactor registers');

select streamseal.append(array[
    streamseal_test.own('s1', 1, 'order.placed', event_id => streamseal_test.uid(1)),
    streamseal_test.own('s1', 2, 'order.placed', flags => 4, event_id => streamseal_test.uid(2)),
    streamseal_test.own('s2', 1, 'order.shipped', event_id => streamseal_test.uid(3))]);
select streamseal.stamp();

select results_eq($$ select read, applied, skipped from streamseal.run_handler('kinds-p') $$,
    $$ values (2, 2, 0) $$, 'the projection applies both events of its type, the state-only one included');
select results_eq($$ select read, applied, skipped from streamseal.run_handler('kinds-r') $$,
    $$ values (2, 1, 1) $$, 'the reactor skips the state-only event');
select streamseal.run_handler('kinds-p');
select streamseal.run_handler('kinds-r');
select results_eq($$ select handler, event_id, flags from proj_kinds.seen order by handler, event_id $$,
    $$ values ('projection', streamseal_test.uid(1), 0), ('projection', streamseal_test.uid(2), 4),
              ('reactor', streamseal_test.uid(1), 0) $$,
    'each handler received each of its events once: the reactor never the state-only one');
select results_eq($$ select caught_up from streamseal.run_handler('kinds-r') $$, $$ values (true) $$,
    'a run with nothing left to read says it caught up');

select * from finish();
rollback;

-- Invariant 13 (no wedge) and 15 (never skip): a handler that raises on one event records the
-- failure and parks that stream (its later events wait behind the failing one); other streams
-- and other projections go on; a due retry applies the parked events in order once the handler
-- takes them, and a failed retry backs off.
begin;
select plan(9);
select streamseal.set_service_name('proj-fail');
create schema proj_fail;
create table proj_fail.broken (on_event uuid);
create table proj_fail.seen (handler text, stream_id text, stream_version bigint);
create function proj_fail.p(e streamseal.handler_event) returns void language plpgsql as $$
begin
    if exists (select from proj_fail.broken b where b.on_event = e.event_id) then
        raise exception 'cannot project %', e.event_id;
    end if;
    insert into proj_fail.seen values ('p', e.stream_id, e.stream_version);
end $$;
create function proj_fail.q(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_fail.seen values ('q', e.stream_id, e.stream_version) $$;
select streamseal.register_projection('fail-p', array['t'], 'proj_fail.p');
select streamseal.register_projection('fail-q', array['t'], 'proj_fail.q');
insert into proj_fail.broken values (streamseal_test.uid(2));
select streamseal.append(array[
    streamseal_test.own('s1', 1, 't', event_id => streamseal_test.uid(1)),
    streamseal_test.own('s1', 2, 't', event_id => streamseal_test.uid(2)),
    streamseal_test.own('s2', 1, 't', event_id => streamseal_test.uid(4)),
    streamseal_test.own('s1', 3, 't', event_id => streamseal_test.uid(3))]);
select streamseal.stamp();

select results_eq($$ select read, applied, parked, failed from streamseal.run_handler('fail-p', backoff_base => '1 microsecond') $$,
    $$ values (4, 2, 1, 1) $$, 'the failing event is recorded, the event behind it in its stream parks, the rest apply');
select results_eq($$ select stream_id, event_id, error, attempts from streamseal.handler_failures where handler = 'fail-p' $$,
    $$ values ('s1' collate "C", streamseal_test.uid(2), 'cannot project ' || streamseal_test.uid(2)::text, 1) $$,
    'the failure names the stream, the event and the error');
select results_eq($$ select stream_id, stream_version from proj_fail.seen where handler = 'p' order by stream_id, stream_version $$,
    $$ values ('s1', 1::bigint), ('s2', 1::bigint) $$, 'the other stream went on; nothing was skipped past the failure');
select results_eq($$ select applied, failed from streamseal.run_handler('fail-q') $$, $$ values (4, 0) $$,
    'another projection of the same events is not held back');
update streamseal.handler_failures set next_attempt_at = clock_timestamp() where handler = 'fail-p'; -- due now
select results_eq($$ select retried, applied from streamseal.run_handler('fail-p', backoff_base => '1 hour') $$,
    $$ values (0, 0) $$, 'a retry that fails again applies nothing');
select ok((select attempts = 2 and next_attempt_at > clock_timestamp() + interval '1 hour'
           from streamseal.handler_failures where handler = 'fail-p'),
    'and backs off: the second attempt waits base * 2');
delete from proj_fail.broken;
update streamseal.handler_failures set next_attempt_at = clock_timestamp() where handler = 'fail-p';
select results_eq($$ select retried, applied from streamseal.run_handler('fail-p') $$, $$ values (1, 2) $$,
    'a due retry applies the stream''s parked events');
select results_eq($$ select stream_id, stream_version from proj_fail.seen where handler = 'p' order by stream_id, stream_version $$,
    $$ values ('s1', 1::bigint), ('s1', 2::bigint), ('s1', 3::bigint), ('s2', 1::bigint) $$,
    'in order, none skipped');
select is((select count(*) from streamseal.handler_failures) + (select count(*) from streamseal.handler_parked), 0::bigint,
    'the failure and its parked events are cleared');

select * from finish();
rollback;

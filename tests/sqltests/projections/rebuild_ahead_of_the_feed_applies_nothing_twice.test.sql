-- Coverage and invariant 2 (nothing applied twice): a stream rebuilt while the projection's feed
-- is behind replays events the feed has not handed out yet; when the feed reaches them they are
-- skipped, so state and cursor stay exact. A stream's later events (after the rebuild) still apply.
begin;
select plan(4);
select streamseal.set_service_name('proj-ahead');
create schema proj_ahead;
create table proj_ahead.applied (stream_id text, stream_version bigint);
create function proj_ahead.fold(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_ahead.applied values (e.stream_id, e.stream_version) $$;
create function proj_ahead.reset(origin text, tenant text, stream_id text) returns void language sql
    as $$ delete from proj_ahead.applied a where a.stream_id = reset.stream_id $$;
select streamseal.register_projection('ahead-p', array['t'], 'proj_ahead.fold', reset => 'proj_ahead.reset');
select streamseal.append(array[streamseal_test.own('a1', 1, 't'), streamseal_test.own('a2', 1, 't')]);
select streamseal.stamp();
select streamseal.run_handler('ahead-p');
select streamseal.run_handler('ahead-p');
-- The cursor of a1 is lost, and a1 and a2 take new events the feed has not handed out yet.
delete from streamseal.projection_cursors where projection = 'ahead-p' and stream_id = 'a1';
select streamseal.append(array[streamseal_test.own('a1', 2, 't'), streamseal_test.own('a2', 2, 't')]);
select streamseal.stamp();
-- One transaction has one clock: place the projection's catch-up an hour ago, a1's bucket before
-- it (judged) and a2's after it (in flight, not judged).
update streamseal.handlers set caught_up_at = now() - interval '1 hour' where name = 'ahead-p';
update streamseal.stream_digests set updated_at = now() - interval '2 hours' where stream_id = 'a1';
select results_eq($$ select gaps, rebuilt, replayed from streamseal.coverage_audit(10, 10, false) $$,
    $$ values (1::bigint, 1::bigint, 2::bigint) $$, 'the audit rebuilds a1 from the store, its unread event included');
select results_eq($$ select read, applied from streamseal.run_handler('ahead-p') $$, $$ values (2, 1) $$,
    'the feed then hands both new events: a1''s was replayed already and is skipped, a2''s applies');
select results_eq($$ select stream_id, stream_version, count(*) from proj_ahead.applied group by 1, 2 order by 1, 2 $$,
    $$ values ('a1', 1::bigint, 1::bigint), ('a1', 2, 1), ('a2', 1, 1), ('a2', 2, 1) $$, 'every event applied once');
select streamseal.run_handler('ahead-p');
select results_eq($$ select gaps from streamseal.coverage_audit(10, 10, false) $$, $$ values (0::bigint) $$,
    'and the cursors match the store');

select * from finish();
rollback;

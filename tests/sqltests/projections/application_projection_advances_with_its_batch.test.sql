-- Invariant 15 for application-run handlers (a reader never skips, nothing applied twice) and
-- invariant 13 (bad input refused with a reason): a projection the application runs (the Go feed
-- package) advances with feed_handler_advance in its batch's transaction: the token moves only
-- from the token the batch was read from (another process that moved it is refused, 55006), the
-- batch is folded into per-bucket cursors exactly as run_handler folds them, so coverage_audit
-- judges it alike; a rebuild of it is a request the application takes (projection_rebuild_take)
-- and replays (projection_rebuild_replay: the stream in version order, cursors refolded). The
-- control plane never runs it and the application never advances a SQL handler.
begin;
select plan(13);
select streamseal.set_service_name('proj-app');
create schema proj_app;
create function proj_app.fold(e streamseal.handler_event) returns void language sql as $$ select $$;

select is(streamseal.register_feed_projection('app-p', array['app.t'], resettable => true), 'registered',
    'an application projection registers without a function');
select is(streamseal.register_feed_projection('app-p', array['app.t'], resettable => true), 'unchanged', 'and again unchanged');
select throws_ok($$ select streamseal.register_projection('app-p', array['app.t'], 'proj_app.fold') $$, '22023',
    'register_projection: ''app-p'' is run by the application, not the control plane: a handler''s runner does not change under its state; call streamseal.unregister_handler(''app-p'') and register it again (its state is yours to clear)',
    'a SQL registration of the same name is refused');
select throws_ok($$ select * from streamseal.run_handler('app-p') $$, '22023', null, 'run_handler refuses it');
select is((select count(*) from streamseal.handlers where name = 'app-p' and runs_in = 'application' and handler is null), 1::bigint,
    'it is recorded as run by the application');

select streamseal.append(array[streamseal_test.own('p1', 1, 'app.t', event_id => streamseal_test.uid(1)),
                               streamseal_test.own('p1', 2, 'app.t', event_id => streamseal_test.uid(2)),
                               streamseal_test.own('p2', 1, 'app.t', event_id => streamseal_test.uid(3))]);
select streamseal.stamp();
create temp table batch as
    select r.event_id, r.origin_seq, r.next_token from streamseal.read_feed(array['app.t'], null, null, 10) r;
select is_empty($$ select * from streamseal.feed_handler_advance('app-p', '',
        (select next_token from batch where next_token is not null),
        array(select event_id from batch where event_id is not null order by origin_seq),
        array(select origin_seq from batch where event_id is not null order by origin_seq), false) $$,
    'a batch in order advances, nothing left out');
select throws_ok($$ select * from streamseal.feed_handler_advance('app-p', '',
        (select next_token from batch where next_token is not null), '{}', '{}', false) $$, '55006',
    'feed_handler_advance: the token of ''app-p'' moved since this batch was read: another process runs it; resume from its stored token',
    'a second advance from the same token (another process) is refused');
select is((select token from streamseal.handlers where name = 'app-p'), (select next_token from batch where next_token is not null),
    'the token stored is the batch''s');
select streamseal.feed_handler_advance('app-p', (select next_token from batch where next_token is not null),
    (select next_token from batch where next_token is not null), '{}', '{}', true);
select results_eq($$ select gaps from streamseal.coverage_audit(10, 10, false) $$, $$ values (0::bigint) $$,
    'its cursors match the store: covered');

-- p2 skipped: the audit requests its rebuild of the application.
delete from streamseal.projection_cursors where projection = 'app-p' and stream_id = 'p2';
select results_eq($$ select gaps, rebuilt, requested from streamseal.coverage_audit(10, 10, false) $$,
    $$ values (1::bigint, 0::bigint, 1::bigint) $$, 'a skipped stream is a rebuild requested of the application');
select results_eq($$ select origin, stream_id from streamseal.projection_rebuild_take('app-p') $$,
    $$ values ('proj-app', 'p2') $$, 'the application takes the request');
select results_eq($$ select event_id, replay from streamseal.projection_rebuild_replay('app-p', 'proj-app', 't1', 'p2') $$,
    $$ values (streamseal_test.uid(3), true) $$, 'and replays the stream from the store');
select results_eq($$ select gaps from streamseal.coverage_audit(10, 10, false) $$, $$ values (0::bigint) $$,
    'the replay refolded the cursors: covered again');

select * from finish();
rollback;

-- Coverage and invariant 9 (storm bounds): a projection that skipped an event on one stream
-- (sabotaged cursor) is found and only that stream is reset and replayed; under mass damage
-- (1000 short streams, cap 5) each audit rebuilds five, records at most max_reports findings and
-- counts every gap, and the damage converges over audits; report-only records exactly the
-- rebuilds it would run and runs none.
begin;
select plan(11);
select streamseal.set_service_name('proj-cap');
create schema proj_cap;
create table proj_cap.state (stream_id text, stream_version bigint, primary key (stream_id, stream_version));
create table proj_cap.resets (stream_id text);
create function proj_cap.fold(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_cap.state values (e.stream_id, e.stream_version) $$;
create function proj_cap.reset(origin text, tenant text, stream_id text) returns void language sql as $$
    insert into proj_cap.resets values (reset.stream_id);
    delete from proj_cap.state s where s.stream_id = reset.stream_id $$;
select streamseal.register_projection('cap-p', array['cap.t'], 'proj_cap.fold', reset => 'proj_cap.reset');
select streamseal.append(array_agg(streamseal_test.own('c-' || i, v, 'cap.t', event_id => streamseal_test.uid(i * 10 + v))))
from generate_series(1, 1000) i, generate_series(1, 2) v;
select streamseal.stamp(5000);
select streamseal.run_handler('cap-p', 5000);
select streamseal.run_handler('cap-p', 5000);
select results_eq($$ select gaps from streamseal.coverage_audit(100, 5, false) $$, $$ values (0::bigint) $$,
    'a projection that applied everything is covered');

-- Sabotage: stream c-7 forgets its second event, state and cursor alike (a skipped apply).
delete from proj_cap.state where stream_id = 'c-7' and stream_version = 2;
update streamseal.projection_cursors set n = n - 1, x0 = x0 # streamseal._h0(streamseal_test.uid(72)),
    x1 = x1 # streamseal._h1(streamseal_test.uid(72))
where projection = 'cap-p' and stream_id = 'c-7';
select results_eq($$ select gaps, rebuilt, replayed from streamseal.coverage_audit(100, 5, false) $$,
    $$ values (1::bigint, 1::bigint, 2::bigint) $$, 'the short stream is found and rebuilt alone');
select results_eq($$ select stream_id from proj_cap.resets $$, $$ values ('c-7') $$, 'only its state was reset');
select results_eq($$ select stream_version from proj_cap.state where stream_id = 'c-7' order by 1 $$,
    $$ values (1::bigint), (2::bigint) $$, 'and replayed whole');

-- Mass damage: every cursor lost.
delete from streamseal.projection_cursors where projection = 'cap-p';
delete from proj_cap.resets;
select results_eq($$ select gaps, would_rebuild, rebuilt from streamseal.coverage_audit(50, 5, true) $$,
    $$ values (1000::bigint, 5::bigint, 0::bigint) $$, 'report-only counts every gap and names the five it would rebuild');
select results_eq($$ select action, count(*) from streamseal.coverage_findings group by action order by action $$,
    $$ values ('deferred', 46::bigint), ('would_rebuild', 5::bigint) $$,
    'it records at most max_reports (50) findings, the would-be rebuilds first; c-7''s finding from the last audit stays, deferred');
select is((select count(*) from proj_cap.resets), 0::bigint, 'and touches no state');
select results_eq($$ select gaps, rebuilt, deferred from streamseal.coverage_audit(50, 5, false) $$,
    $$ values (1000::bigint, 5::bigint, 995::bigint) $$, 'an audit rebuilds five, the rest deferred');
select results_eq($$ select stream_id collate "C" from proj_cap.resets order by 1 $$,
    $$ select stream_id from streamseal.coverage_findings where action = 'rebuilt' order by 1 $$,
    'the streams rebuilt are the ones it recorded (the oldest findings first)');
select results_eq($$ select gaps from streamseal.coverage_audit(50, 5, false) $$, $$ values (995::bigint) $$,
    'the next audit finds the rest');
select is((select count(*) from generate_series(1, 199) a, lateral streamseal.coverage_audit(50, 5 + 0 * a, false) c where c.gaps = 0), 1::bigint,
    'the damage converges over audits, five streams at a time (199 more audits: the last finds nothing)');

select * from finish();
rollback;

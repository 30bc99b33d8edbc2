-- Coverage (DESIGN.md "Coverage", the proposal's case 3): a projection registered after 10k
-- events exist, starting at the feed's end, is found born late by the coverage audit and rebuilt
-- stream by stream to the state a projection that saw them live holds, row by row; one that
-- folds history through the feed (from_start) reaches the same state with no rebuild.
begin;
select plan(7);
select streamseal.set_service_name('proj-late');
create schema proj_late;
create table proj_late.totals (projection text, stream_id text, n bigint, last_version bigint, sum_payload bigint,
                               primary key (projection, stream_id));
create function proj_late.fold(projection text, e streamseal.handler_event) returns void language sql as $$
    insert into proj_late.totals values (projection, e.stream_id, 1, e.stream_version, length(e.payload))
    on conflict (projection, stream_id) do update
        set n = totals.n + 1, last_version = excluded.last_version, sum_payload = totals.sum_payload + excluded.sum_payload $$;
create function proj_late.live(e streamseal.handler_event) returns void language sql as $$ select proj_late.fold('live', e) $$;
create function proj_late.late(e streamseal.handler_event) returns void language sql as $$ select proj_late.fold('late', e) $$;
create function proj_late.history(e streamseal.handler_event) returns void language sql as $$ select proj_late.fold('history', e) $$;
create function proj_late.reset_late(origin text, tenant text, stream_id text) returns void language sql
    as $$ delete from proj_late.totals where projection = 'late' and totals.stream_id = reset_late.stream_id $$;

select streamseal.register_projection('late-live', array['acct.moved'], 'proj_late.live');
select streamseal.append(array_agg(streamseal_test.own('acct-' || (i % 100), i / 100 + 1, 'acct.moved',
                                   payload => convert_to(repeat('x', 1 + i % 7), 'UTF8'))))
from generate_series(0, 9999) i;
select streamseal.stamp(20000);
select streamseal.run_handler('late-live', 10000);
select streamseal.run_handler('late-live', 10000);

select is(streamseal.register_projection('late-late', array['acct.moved'], 'proj_late.late', reset => 'proj_late.reset_late',
                                         from_start => false), 'registered', 'a projection registers after 10k events, from the feed''s end');
select results_eq($$ select read, caught_up from streamseal.run_handler('late-late') $$, $$ values (0, true) $$,
    'it reads nothing of the history it was born after');
select results_eq($$ select gaps, rebuilt, replayed from streamseal.coverage_audit(1000, 1000, false) $$,
    $$ values (100::bigint, 100::bigint, 10000::bigint) $$,
    'the coverage audit finds its 100 streams short (the live projection covers them) and rebuilds them, replaying 10k events');
select is((select count(*) from streamseal.coverage_findings where projection = 'late-late' and kind = 'born_late'), 100::bigint,
    'the findings say born late');
select results_eq($$ select stream_id, n, last_version, sum_payload from proj_late.totals where projection = 'late' order by stream_id $$,
    $$ select stream_id, n, last_version, sum_payload from proj_late.totals where projection = 'live' order by stream_id $$,
    'the rebuilt read model equals the live one row by row');

select streamseal.register_projection('late-history', array['acct.moved'], 'proj_late.history');
select streamseal.run_handler('late-history', 10000);
select streamseal.run_handler('late-history', 10000);
select results_eq($$ select stream_id, n, last_version, sum_payload from proj_late.totals where projection = 'history' order by stream_id $$,
    $$ select stream_id, n, last_version, sum_payload from proj_late.totals where projection = 'live' order by stream_id $$,
    'a projection registered from the start folds the history through the feed to the same rows');
select results_eq($$ select gaps, rebuilt from streamseal.coverage_audit(1000, 1000, false) $$, $$ values (0::bigint, 0::bigint) $$,
    'then the audit finds every projection covered, and clears the healed findings');

select * from finish();
rollback;

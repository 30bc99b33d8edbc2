-- Invariant 1 (liveness: a missing checkpoint for 3 intervals is an alarm): observe_origin
-- records each origin heard and where it takes requests; silent_origins reports an origin
-- silent for longer than its intervals and marks it once (newly_silent only the first time);
-- hearing it again clears the mark and tells the caller liveness is restored.
begin;
select plan(10);
select streamseal.set_service_name('lane-liveness');

select is(streamseal.observe_origin('live-quiet', 'streamseal.ctl.live-quiet', 60, 3, 100), false,
    'a first checkpoint from an origin is not a restoration');
select streamseal.observe_origin('live-busy', 'streamseal.ctl.live-busy', 60, 0, 50);
select results_eq(
    $$ select origin, control_subject, interval_seconds, generation, last_window_to, last_checkpoint_at = now(), silent_since
       from streamseal.known_origins where origin like 'live-%' order by origin $$,
    $$ values ('live-busy'::text, 'streamseal.ctl.live-busy.lane-liveness'::text, 60, 0::bigint, 50::bigint, true, null::timestamptz),
              ('live-quiet', 'streamseal.ctl.live-quiet.lane-liveness', 60, 3, 100, true, null) $$,
    'each origin heard is recorded with its control subject, interval, generation and window end');

-- A redelivered older checkpoint with no generation: the window end and generation stay.
select streamseal.observe_origin('live-quiet', 'streamseal.ctl.live-quiet.v2', 60, null, 90);
select results_eq(
    $$ select control_subject, generation, last_window_to from streamseal.known_origins where origin = 'live-quiet' $$,
    $$ values ('streamseal.ctl.live-quiet.lane-liveness'::text, 3::bigint, 100::bigint) $$,
    'the control subject is computed from the names, never the message (invariant 12); the window end never moves back; a null generation keeps the known one');

select is_empty(
    $$ select * from streamseal.silent_origins() $$,
    'origins heard just now are not silent');

-- live-quiet was last heard 4 minutes ago (more than 3 x 60 s); live-busy 2 minutes ago.
update streamseal.known_origins set last_checkpoint_at = now() - interval '4 minutes' where origin = 'live-quiet';
update streamseal.known_origins set last_checkpoint_at = now() - interval '2 minutes' where origin = 'live-busy';
select results_eq(
    $$ select origin, silent_for, newly_silent from streamseal.silent_origins() $$,
    $$ values ('live-quiet'::text, interval '4 minutes', true) $$,
    'an origin silent for more than 3 intervals is reported, newly; one silent for 2 intervals is not');
select results_eq(
    $$ select origin, newly_silent from streamseal.silent_origins() $$,
    $$ values ('live-quiet'::text, false) $$,
    'the next sweep still reports it, but not as newly silent: the alarm is raised once');
select results_eq(
    $$ select origin, newly_silent from streamseal.silent_origins(intervals => 1) $$,
    $$ values ('live-busy'::text, true), ('live-quiet', false) $$,
    'the number of intervals is the caller''s: with 1, the origin silent for 2 minutes is reported too');

select is(streamseal.observe_origin('live-quiet', 'streamseal.ctl.live-quiet', 60, 3, 120), true,
    'hearing a silent origin again reports liveness restored');
select results_eq(
    $$ select silent_since, last_window_to from streamseal.known_origins where origin = 'live-quiet' $$,
    $$ values (null::timestamptz, 120::bigint) $$,
    'and clears its mark');
select is(streamseal.observe_origin('live-quiet', 'streamseal.ctl.live-quiet', 60, 3, 130), false,
    'the checkpoint after that is ordinary again');

select * from finish();
rollback;

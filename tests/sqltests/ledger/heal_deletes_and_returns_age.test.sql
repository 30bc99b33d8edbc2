-- Invariant 9 and the backlog gauges: a proven heal deletes the bucket's ledger row and returns
-- its heal age (now_at - first_seen_at, first sighting to proven heal, through signature changes),
-- read from the row the DELETE destroys. A healed bucket is forgotten: healing again returns
-- nothing, and a later divergence is a new incident with a fresh report and budget.
begin;
select plan(8);
select streamseal.set_service_name('ledger-heal');

create function pg_temp.key(stream_id text) returns jsonb language sql immutable as $$
    select jsonb_build_object('tenant', 't1', 'event_type', 'ledger.type', 'stream_id', stream_id)
$$;

-- Three buckets first seen at 00:00; one more at 01:00; repaired progress moves a at 00:30.
select count(*) from streamseal.ledger_observe('ledger-heal-origin',
    jsonb_build_array(streamseal_test.divergent_bucket('a', 1, 4), streamseal_test.divergent_bucket('b', 2, 2), streamseal_test.divergent_bucket('c', 1, 2)), now_at => '2030-01-01 00:00:00+00');
select count(*) from streamseal.ledger_observe('ledger-heal-origin',
    jsonb_build_array(streamseal_test.divergent_bucket('a', 3, 4, salt => 1), streamseal_test.divergent_bucket('d', 5, 2)), now_at => '2030-01-01 01:00:00+00');

select results_eq(
    $$ select * from streamseal.ledger_heal('ledger-heal-origin',
           jsonb_build_array(pg_temp.key('a'), pg_temp.key('d'), pg_temp.key('never-seen')), now_at => '2030-01-01 02:30:00+00') $$,
    $$ values ('t1'::text, 'ledger.type'::text, 'a'::text, interval '2 hours 30 minutes'),
              ('t1', 'ledger.type', 'd', interval '1 hour 30 minutes') $$,
    'heal returns each deleted bucket with its age since first sighting (a''s progress did not restart its clock); an unknown key returns nothing');
select results_eq(
    $$ select stream_id from streamseal.repair_ledger where origin = 'ledger-heal-origin' order by stream_id $$,
    $$ values ('b'::text collate "C"), ('c') $$,
    'the healed rows are gone, the others stay');
select is_empty(
    $$ select * from streamseal.ledger_heal('ledger-heal-origin', jsonb_build_array(pg_temp.key('a')), now_at => '2030-01-01 03:00:00+00') $$,
    'healing a healed bucket again returns nothing: no age is measured twice');
select results_eq(
    $$ select * from streamseal.ledger_heal('ledger-heal-origin',
           jsonb_build_array(pg_temp.key('b') || '{"reason": "identity_mismatch", "extra": 1}', pg_temp.key('b')),
           now_at => '2030-01-01 03:00:00+00') $$,
    $$ values ('t1'::text, 'ledger.type'::text, 'b'::text, interval '3 hours') $$,
    'keys are read from whole comparison rows (other keys ignored) and a key given twice heals once');

select results_eq(
    $$ select origin, unhealed, exhausted, oldest_age from streamseal.ledger_backlog('2030-01-01 04:00:00+00')
       where origin = 'ledger-heal-origin' $$,
    $$ values ('ledger-heal-origin'::text, 1::bigint, 0::bigint, interval '4 hours') $$,
    'the backlog falls as heals delete rows: c alone, 4 hours old');

-- A bucket that diverges again after its heal is a new incident.
select results_eq(
    $$ select report, request, attempts from streamseal.ledger_observe('ledger-heal-origin',
           jsonb_build_array(streamseal_test.divergent_bucket('a', 3, 4, salt => 1)), now_at => '2030-01-01 05:00:00+00') $$,
    $$ values (true, true, 1) $$,
    'the same signature after a heal is news again: reported and requested at once, attempt 1');
select is(
    (select first_seen_at from streamseal.repair_ledger where origin = 'ledger-heal-origin' and stream_id = 'a'),
    '2030-01-01 05:00:00+00'::timestamptz,
    'its first sighting is the new one');

-- The origin has checkpointed here, so it is known (known_origins).
select streamseal.observe_origin('ledger-heal-origin', 'streamseal.ctl.ledger-heal-origin', 60, 0, 10);
select count(*) from streamseal.ledger_heal('ledger-heal-origin', jsonb_build_array(pg_temp.key('a'), pg_temp.key('c')),
                                            now_at => '2030-01-01 06:00:00+00');
select results_eq(
    $$ select unhealed, exhausted, oldest_age from streamseal.ledger_backlog('2030-01-01 06:00:00+00')
       where origin = 'ledger-heal-origin' $$,
    $$ values (0::bigint, 0::bigint, interval '0') $$,
    'once every bucket healed a known origin still answers, with zeros, so its gauges fall to 0');

select * from finish();
rollback;

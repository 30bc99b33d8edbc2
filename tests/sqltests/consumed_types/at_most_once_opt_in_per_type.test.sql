-- Invariants 1 and 6, issue 18: at-most-once occurrences are backfilled only for a type that opted
-- in (backfill_include_at_most_once), which a backfill request then names; opting out takes it
-- back; bad input is refused by name.
begin;
select plan(6);
select streamseal.set_service_name('amo-billing');
select is(streamseal.backfill_at_most_once_types(array['amo.a', 'amo.b']), '{}'::text[], 'nothing opts in by default');
select is(streamseal.backfill_include_at_most_once(array['amo.b', 'amo.b'], true), 1, 'an opt-in, before the type is consumed');
select is(streamseal.backfill_at_most_once_types(array['amo.a', 'amo.b']), '{amo.b}'::text[], 'the request names the opted-in type');
select is(streamseal.backfill_include_at_most_once(array['amo.b'], false), 1, 'an opt-out');
select is(streamseal.backfill_at_most_once_types(array['amo.a', 'amo.b']), '{}'::text[], 'after the opt-out nothing is named');
select throws_ok($$ select streamseal.backfill_include_at_most_once(array['']::text[], true) $$, '22023',
    'backfill_include_at_most_once: the opt-in must name its event types: expected no empty name, got {""}',
    'an empty type is refused by name');
select * from finish();
rollback;

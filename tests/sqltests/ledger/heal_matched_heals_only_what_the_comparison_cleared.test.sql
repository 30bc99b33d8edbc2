-- Invariant 9 (a heal is proven, never assumed): ledger_heal_matched heals the ledgered buckets
-- of the compared types, in the compared stream range, that the comparison no longer names as
-- divergent; a bucket it still names (skipped ones included: in flight), a bucket of another
-- type, another origin or outside the range stays. With no range and nothing named it heals
-- every ledgered bucket of the types: the type-level match.
begin;
select plan(7);
select streamseal.set_service_name('ledger-heal-matched');

-- Ledger six buckets of origin 'lhm-origin' (type ledger.type: streams a..e) and one of another
-- origin, all first seen at 2030-01-01.
select count(*) from streamseal.ledger_observe('lhm-origin',
    (select jsonb_agg(streamseal_test.divergent_bucket(s, 1, 2)) from unnest(array['a', 'b', 'c', 'd', 'e']) s),
    now_at => '2030-01-01');
select count(*) from streamseal.ledger_observe('lhm-origin',
    jsonb_build_array(streamseal_test.divergent_bucket('a', 1, 2) || '{"event_type": "other.type"}'),
    now_at => '2030-01-01');
select count(*) from streamseal.ledger_observe('lhm-elsewhere',
    jsonb_build_array(streamseal_test.divergent_bucket('b', 1, 2)), now_at => '2030-01-01');

-- A page covering streams (a, d]: the comparison still names c as divergent and d as skipped.
select results_eq(
    $$ select tenant, event_type, stream_id, heal_age
       from streamseal.ledger_heal_matched('lhm-origin', array['ledger.type'],
            jsonb_build_array(streamseal_test.divergent_bucket('c', 1, 2),
                              streamseal_test.divergent_bucket('d', 1, 2) || '{"skipped": true}'),
            after_stream => 'a', through_stream => 'd', now_at => '2030-01-01 01:00:00+00') $$,
    $$ values ('t1'::text, 'ledger.type'::text, 'b'::text, interval '1 hour') $$,
    'only b heals: in the page range, of the compared type, and no longer named');
select results_eq(
    $$ select event_type, stream_id from streamseal.repair_ledger where origin = 'lhm-origin' order by 1, 2 $$,
    $$ values ('ledger.type'::text, 'a'::text collate "C"), ('ledger.type', 'c'), ('ledger.type', 'd'), ('ledger.type', 'e'), ('other.type', 'a') $$,
    'a (below the range), c (still divergent), d (in flight), e (above the range) and the other type stay');
select is(
    (select count(*)::int from streamseal.repair_ledger where origin = 'lhm-elsewhere'), 1,
    'another origin''s bucket of the same stream stays');

-- The type-level match: nothing named, no range.
select results_eq(
    $$ select stream_id from streamseal.ledger_heal_matched('lhm-origin', array['ledger.type'], '[]', now_at => '2030-01-02') order by 1 $$,
    $$ values ('a'::text), ('c'), ('d'), ('e') $$,
    'a type-level match heals every ledgered bucket of the type');
select results_eq(
    $$ select event_type, stream_id from streamseal.repair_ledger where origin = 'lhm-origin' $$,
    $$ values ('other.type'::text, 'a'::text collate "C") $$,
    'a type not compared keeps its buckets');

select throws_ok(
    $$ select * from streamseal.ledger_heal_matched('lhm-origin', array['ledger.type'], '{"not": "an array"}') $$,
    '22023', 'ledger_heal_matched: compared must be a JSON array of the comparison''s divergent buckets, got object',
    'a comparison that is not an array is refused');
select throws_ok(
    $$ select * from streamseal.ledger_heal_matched('lhm-origin', null, '[]') $$,
    '22023', 'ledger_heal_matched: event_types must be an array of the compared event types, got null',
    'compared types must be named');

select * from finish();
rollback;

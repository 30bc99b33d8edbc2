-- Invariants 1 and 6, detection in one interval: when the caller proves order (ordered => true:
-- every message before this checkpoint on its ordered subject was committed or deliberately
-- dropped), a hole in the window the checkpoint itself announces is confirmed at first sight and
-- returned to request. What cannot be known yet still waits for the next checkpoint (two-cycle):
-- a lane born by this checkpoint (the consumer may have joined mid-stream), a lane whose earlier
-- rounds were missed (the window does not follow the last one it saw), a checkpoint whose order
-- the caller could not prove, an older checkpoint arriving late. At-most-once occurrences are
-- never holes; a lane with nothing missing confirms nothing (no extra request in a healthy run).
begin;
select plan(10);
select streamseal.set_service_name('lane-ordered');
select streamseal.subscribe_all_tenants(array['ord.type'], 'ord-origin');

-- Tenants a, b, c and d each announce 1..3 in the first round. a and b lack 2; c and d hold all.
select streamseal.ingest(array(
    select streamseal_test.copy('ord-origin', 10 * k + i, i, 'os-' || t, i, 'ord.type', tenant => t,
                                event_id => streamseal_test.uid(100 * k + i))
    from unnest(array['a', 'b', 'c', 'd']) with ordinality as x(t, k), generate_series(1, 3) i
    where not (t in ('a', 'b') and i = 2)));

select results_eq(
    $$ select tenant, suspected, confirmed, newly_confirmed, to_request
       from streamseal.verify_checkpoint('ord-origin', 1, 50, 'ord.type', array['a', 'b', 'c', 'd'],
           array[3, 3, 3, 3]::bigint[], array[1, 1, 1, 1]::bigint[], array[3, 3, 3, 3]::bigint[],
           array['{}', '{}', '{}', '{}']::int8multirange[], ordered => true) order by tenant $$,
    $$ values ('a'::text, '{[2,3)}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange),
              ('b', '{[2,3)}', '{}', '{}', '{}'),
              ('c', '{}', '{}', '{}', '{}'),
              ('d', '{}', '{}', '{}', '{}') $$,
    'a lane born by an ordered checkpoint only suspects its holes: the consumer may have joined mid-stream');

-- Second round: a announces 4..6 and lacks 5 (ordered); b the same, but its order is not proven.
select streamseal.ingest(array(
    select streamseal_test.copy('ord-origin', 50 + 10 * k + i, i, 'os-' || t, i, 'ord.type', tenant => t,
                                event_id => streamseal_test.uid(100 * k + i))
    from unnest(array['a', 'b']) with ordinality as x(t, k), generate_series(4, 6) i
    where i <> 5));
select results_eq(
    $$ select tenant, floor, suspected, confirmed, newly_confirmed, to_request
       from streamseal.verify_checkpoint('ord-origin', 50, 100, 'ord.type', array['a'],
           array[3]::bigint[], array[4]::bigint[], array[6]::bigint[], array['{}']::int8multirange[], ordered => true) $$,
    $$ values ('a'::text, 1::bigint, '{}'::int8multirange, '{[2,3),[5,6)}'::int8multirange,
               '{[2,3),[5,6)}'::int8multirange, '{[2,3),[5,6)}'::int8multirange) $$,
    'ordered and following the last round: the new hole 5 is confirmed at first sight, the old hole 2 by its second sight');
select results_eq(
    $$ select tenant, floor, suspected, confirmed, newly_confirmed, to_request
       from streamseal.verify_checkpoint('ord-origin', 50, 100, 'ord.type', array['b'],
           array[3]::bigint[], array[4]::bigint[], array[6]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('b'::text, 1::bigint, '{[5,6)}'::int8multirange, '{[2,3)}'::int8multirange,
               '{[2,3)}'::int8multirange, '{[2,3)}'::int8multirange) $$,
    'order not proven: the new hole 5 is only suspected (two-cycle confirmation)');

-- c missed the rounds announcing 4 and 5: its next checkpoint announces 6..8, and it holds 6 and 8.
select streamseal.ingest(array(
    select streamseal_test.copy('ord-origin', 100 + i, i, 'os-c', i, 'ord.type', tenant => 'c',
                                event_id => streamseal_test.uid(300 + i))
    from generate_series(6, 8) i where i <> 7));
select results_eq(
    $$ select tenant, suspected, confirmed, newly_confirmed, to_request
       from streamseal.verify_checkpoint('ord-origin', 100, 150, 'ord.type', array['c'],
           array[3]::bigint[], array[6]::bigint[], array[8]::bigint[], array['{}']::int8multirange[], ordered => true) $$,
    $$ values ('c'::text, '{[4,6),[7,8)}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange) $$,
    'a lane whose earlier rounds were missed waits a cycle, ordered or not: nothing is confirmed at first sight');

-- d: a healthy ordered round with an at-most-once occurrence (5) that never arrived.
select streamseal.ingest(array(
    select streamseal_test.copy('ord-origin', 150 + i, i, 'os-d', i, 'ord.type', tenant => 'd',
                                event_id => streamseal_test.uid(400 + i))
    from generate_series(4, 6) i where i <> 5));
select results_eq(
    $$ select tenant, floor, suspected, confirmed, to_request
       from streamseal.verify_checkpoint('ord-origin', 150, 200, 'ord.type', array['d'],
           array[3]::bigint[], array[4]::bigint[], array[6]::bigint[], array['{[5,6)}']::int8multirange[], ordered => true) $$,
    $$ values ('d'::text, 6::bigint, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange) $$,
    'an ordered round with nothing missing but an at-most-once occurrence confirms nothing and requests nothing');

-- Tail loss: e's window 4..6 ends with a loss (6), and no later event will reveal it.
select streamseal.ingest(array(
    select streamseal_test.copy('ord-origin', 200 + i, i, 'os-e', i, 'ord.type', tenant => 'e',
                                event_id => streamseal_test.uid(500 + i))
    from generate_series(1, 5) i));
select count(*) from streamseal.verify_checkpoint('ord-origin', 200, 210, 'ord.type', array['e'],
    array[3]::bigint[], array[1]::bigint[], array[3]::bigint[], array['{}']::int8multirange[], ordered => true);
select results_eq(
    $$ select tenant, floor, suspected, confirmed, to_request
       from streamseal.verify_checkpoint('ord-origin', 210, 220, 'ord.type', array['e'],
           array[3]::bigint[], array[4]::bigint[], array[6]::bigint[], array['{}']::int8multirange[], ordered => true) $$,
    $$ values ('e'::text, 5::bigint, '{}'::int8multirange, '{[6,7)}'::int8multirange, '{[6,7)}'::int8multirange) $$,
    'a loss at the tail of an ordered window is confirmed and requested by that checkpoint, not the next');

-- A late copy of a's first checkpoint (older than what a knows) confirms nothing new.
select results_eq(
    $$ select tenant, confirmed, newly_confirmed
       from streamseal.verify_checkpoint('ord-origin', 1, 50, 'ord.type', array['a'],
           array[3]::bigint[], array[1]::bigint[], array[3]::bigint[], array['{}']::int8multirange[], ordered => true) $$,
    $$ values ('a'::text, '{[2,3),[5,6)}'::int8multirange, '{}'::int8multirange) $$,
    'an older checkpoint arriving late, even ordered, confirms nothing newly');

-- A quiet ordered round confirms b's 5 (second sight) and c's 4, 5 and 7.
select results_eq(
    $$ select tenant, suspected, confirmed, newly_confirmed
       from streamseal.verify_checkpoint('ord-origin', 200, 200, 'ord.type', array['b', 'c'],
           array[0, 0]::bigint[], array[null, null]::bigint[], array[null, null]::bigint[],
           array['{}', '{}']::int8multirange[], ordered => true) order by tenant $$,
    $$ values ('b'::text, '{}'::int8multirange, '{[2,3),[5,6)}'::int8multirange, '{[5,6)}'::int8multirange),
              ('c', '{}', '{[4,6),[7,8)}', '{[4,6),[7,8)}') $$,
    'what had to wait is confirmed by the next checkpoint, as before');
select results_eq(
    $$ select tenant, floor, confirmed from streamseal.lanes where origin = 'ord-origin' and tenant <> 'e' order by tenant $$,
    $$ values ('a'::text, 1::bigint, '{[2,3),[5,6)}'::int8multirange), ('b', 1, '{[2,3),[5,6)}'),
              ('c', 3, '{[4,6),[7,8)}'), ('d', 6, '{}') $$,
    'the stored lanes agree; no floor passed a hole (invariant 6)');

select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ord-origin', 200, 200, 'ord.type', array['a'], array[0]::bigint[],
           array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[], ordered => null) $$,
    '22023', 'verify_checkpoint: ordered null is invalid: expected true (the caller proved every message before this checkpoint on its subject committed) or false',
    'an unknown order is refused, not guessed');

select * from finish();
rollback;

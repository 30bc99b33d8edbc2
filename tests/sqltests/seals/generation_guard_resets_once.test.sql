-- Invariant 1: when an origin's generation changes (deliberate history mutation), the consumer's
-- seal resets exactly once, the new generation is recorded, and that one round is skipped; an
-- unchanged generation never touches the seal.
begin;
select plan(13);
select streamseal.set_service_name('seal-guard');

select is(streamseal.seal_generation_guard('guard-origin', 5), 'proceed', 'first sight of an origin at generation 5 proceeds');
select results_eq(
    $$ select sealed_through, generation from streamseal.seals where origin = 'guard-origin' $$,
    $$ values (0::bigint, 5::bigint) $$,
    'the guard recorded generation 5 with nothing sealed');

select is(streamseal.advance_seal('guard-origin', 40), 40::bigint, 'the audit seals [0, 40)');
select is(streamseal.seal_generation_guard('guard-origin', 5), 'proceed', 'an unchanged generation proceeds');
select results_eq(
    $$ select sealed_through, generation from streamseal.seals where origin = 'guard-origin' $$,
    $$ values (40::bigint, 5::bigint) $$,
    'an unchanged generation leaves the seal at 40');

select is(streamseal.seal_generation_guard('guard-origin', 6), 'skip', 'a changed generation tells the caller to skip this round');
select results_eq(
    $$ select sealed_through, generation from streamseal.seals where origin = 'guard-origin' $$,
    $$ values (0::bigint, 6::bigint) $$,
    'the seal reset to 0 and generation 6 is recorded');
select is(streamseal.seal_generation_guard('guard-origin', 6), 'proceed', 'the next round at generation 6 proceeds');
select is(streamseal.advance_seal('guard-origin', 30), 30::bigint, 'the audit re-seals from 0 under generation 6');
select is(streamseal.seal_generation_guard('guard-origin', 6), 'proceed', 'generation 6 again proceeds');
select results_eq(
    $$ select sealed_through, generation from streamseal.seals where origin = 'guard-origin' $$,
    $$ values (30::bigint, 6::bigint) $$,
    'the seal resets only once: it stays at 30 under generation 6');

select throws_ok(
    $$ select streamseal.seal_generation_guard('guard-origin', -1) $$,
    '22023', 'seal_generation_guard: generation -1 of origin ''guard-origin'' is invalid: expected a non-negative number',
    'a negative generation is refused');
select throws_ok(
    $$ select streamseal.seal_generation_guard(null, 6) $$,
    '22023', 'seal_generation_guard: generation 6 of origin null is invalid: expected a non-negative number',
    'a null origin is refused');

select * from finish();
rollback;

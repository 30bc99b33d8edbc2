-- Invariant 1: a consumer's seal ([0, sealed_through) audited complete) only moves forward: a stale
-- or replayed advance can never re-open verified history, and bad input is refused.
begin;
select plan(12);
select streamseal.set_service_name('seal-monotonic');

select is(streamseal.advance_seal('mono-origin', 100), 100::bigint, 'the first advance seals [0, 100)');
select results_eq(
    $$ select sealed_through, generation from streamseal.seals where origin = 'mono-origin' $$,
    $$ values (100::bigint, null::bigint) $$,
    'the seal row holds 100 with no generation recorded yet');
select is(streamseal.advance_seal('mono-origin', 50), 100::bigint, 'a lower advance returns the unchanged seal 100');
select is((select sealed_through from streamseal.seals where origin = 'mono-origin'), 100::bigint,
    'the row stays at 100');
select is(streamseal.advance_seal('mono-origin', 100), 100::bigint, 'an equal advance is a no-op');
select is(streamseal.advance_seal('mono-origin', 150), 150::bigint, 'a higher advance moves the seal to 150');
select is((select sealed_through from streamseal.seals where origin = 'mono-origin'), 150::bigint,
    'the row holds 150');
select is(streamseal.advance_seal('mono-other', 0), 0::bigint, 'seals are per origin: another origin starts at its own value');
select is((select sealed_through from streamseal.seals where origin = 'mono-origin'), 150::bigint,
    'the other origin''s seal leaves this one alone');

select throws_ok(
    $$ select streamseal.advance_seal('mono-origin', -1) $$,
    '22023', 'advance_seal: seal -1 of origin ''mono-origin'' is invalid: expected a non-negative watermark',
    'a negative seal is refused');
select throws_ok(
    $$ select streamseal.advance_seal(null, 10) $$,
    '22023', 'advance_seal: seal 10 of origin null is invalid: expected a non-negative watermark',
    'a null origin is refused');
select throws_ok(
    $$ select streamseal.advance_seal('mono-origin', null) $$,
    '22023', 'advance_seal: seal <NULL> of origin ''mono-origin'' is invalid: expected a non-negative watermark',
    'a null seal is refused');

select * from finish();
rollback;

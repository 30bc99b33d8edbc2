-- Invariant 13: a limit that would let in what an index or the broker cannot hold is refused when
-- it is set, naming the value and the accepted range; limits() reports the settings in force.
begin;
select plan(6);

select results_eq($$ select max_payload_bytes, max_id_bytes, max_metadata_bytes from streamseal.limits() $$,
    $$ values (262144, 256, 16384) $$, 'the defaults');
select throws_ok($$ select streamseal.set_limits(max_payload_bytes => 0) $$, '22023',
    'set_limits: max_payload_bytes 0 is out of range: expected 1..67108864', 'a zero payload limit is refused');
select throws_ok($$ select streamseal.set_limits(max_id_bytes => 513) $$, '22023',
    'set_limits: max_id_bytes 513 is out of range: expected 1..512 (tenant, event type and stream id share index rows)',
    'an id limit beyond what the indexes hold is refused');
select throws_ok($$ select streamseal.set_limits(max_metadata_bytes => -1) $$, '22023',
    'set_limits: max_metadata_bytes -1 is out of range: expected 0..1048576', 'a negative metadata limit is refused');
select lives_ok($$ select streamseal.set_limits(max_id_bytes => 64) $$, 'a limit in range is set');
select results_eq($$ select max_payload_bytes, max_id_bytes, max_metadata_bytes from streamseal.limits() $$,
    $$ values (262144, 64, 16384) $$, 'the change is in force and an omitted limit keeps its value');

select * from finish();
rollback;

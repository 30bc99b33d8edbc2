-- Invariants 1, 4 and 7 under the control plane's role (issue 14 item 6): a role granted only
-- streamseal_control names the service, appends, stamps, publishes a checkpoint window, ingests a
-- copy, verifies a checkpoint of it and feeds the ledger, and the triggers keep the digests
-- exact; it reads and writes River's job tables and reads the schema version.
begin;
select plan(10);
create role privileges_engine_control nologin;
grant streamseal_control to privileges_engine_control;
grant usage on schema streamseal_test to privileges_engine_control; -- the row builders, nothing else
set local role privileges_engine_control;

select lives_ok($$ select streamseal.set_service_name('privileges-engine') $$, 'the control role names the service (run --service)');
select lives_ok(
    $$ select streamseal.append(array[streamseal_test.own('pe-s1', 1, event_id => streamseal_test.uid(1))]) $$,
    'the control role appends');
select results_eq($$ select stamped from streamseal.stamp() $$, $$ values (1) $$, 'the control role stamps');
select lives_ok($$ select * from streamseal.next_checkpoint() $$, 'the control role advances the checkpoint window');
select lives_ok(
    $$ select streamseal.ingest(array[streamseal_test.copy('privileges-engine-src', 1, 1, 'pe-c1', 1,
                                                           event_id => streamseal_test.uid(2))]) $$,
    'the control role ingests a copy');
select lives_ok(
    $$ select * from streamseal.ledger_observe('privileges-engine-src', jsonb_build_array(streamseal_test.divergent_bucket('pe-c1', 1, 2))) $$,
    'the control role feeds the repair ledger');
select lives_ok(
    $$ select streamseal.grant_redelivery_all_tenants('privileges-engine-peer', array['thing.happened']) $$,
    'the control role grants redelivery (run --grant)');
select lives_ok(
    $$ insert into streamseal_river.river_leader (elected_at, expires_at, leader_id) values (now(), now() + interval '5 seconds', 'pe');
       delete from streamseal_river.river_leader where leader_id = 'pe';
       select count(*) from streamseal_river.river_job $$,
    'the control role elects a River leader and reads River''s jobs');
select lives_ok($$ select max(version) from streamseal.schema_version $$, 'the control role reads the schema version');
reset role;

select is(
    (select n from streamseal.stream_digests where origin = 'privileges-engine-src' and stream_id = 'pe-c1'), 1::bigint,
    'the insert trigger folded the copy the control role ingested');

select * from finish();
rollback;

-- Invariants 1, 6 and 9: the consumer-side lane functions refuse what they cannot read (a bad or
-- own origin, an inverted window, arrays that are not parallel, a half-given or inverted
-- type_seq range, at-most-once ranges outside the announced range, an unknown lane, an unknown
-- reason or action) with 22023 and a message naming the bad value, and a refused checkpoint
-- changes nothing: no lane is born from the good rows of a bad message.
begin;
select plan(30);
select streamseal.set_service_name('lane-refusals');
select streamseal.subscribe_all_tenants(array['refused.type'], 'ref-origin');

-- observe_origin
select throws_ok(
    $$ select streamseal.observe_origin('Ref Origin', 'streamseal.ctl.x', 60, 0, 10) $$,
    '22023', 'observe_origin: origin ''Ref Origin'' is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
    'observe_origin refuses an origin that is not a service name');
select throws_ok(
    $$ select streamseal.observe_origin('lane-refusals', 'streamseal.ctl.lane-refusals', 60, 0, 10) $$,
    '22023', 'observe_origin: origin "lane-refusals" is this service: a service ignores its own checkpoints',
    'observe_origin refuses this service''s own checkpoints');
select throws_ok(
    $$ select streamseal.observe_origin('ref-origin', '', 60, 0, 10) $$,
    '22023', 'observe_origin: control_subject '''' of origin "ref-origin" is invalid: expected the subject it takes requests on',
    'observe_origin refuses an empty control subject');
select throws_ok(
    $$ select streamseal.observe_origin('ref-origin', 'streamseal.ctl.ref-origin', 0, 0, 10) $$,
    '22023', 'observe_origin: interval_seconds 0 of origin "ref-origin" is invalid: expected a positive number of seconds',
    'observe_origin refuses a zero interval');
select throws_ok(
    $$ select streamseal.observe_origin('ref-origin', 'streamseal.ctl.ref-origin', 60, -1, 10) $$,
    '22023', 'observe_origin: generation -1 of origin "ref-origin" is invalid: expected a non-negative number (null: unknown)',
    'observe_origin refuses a negative generation');
select throws_ok(
    $$ select streamseal.observe_origin('ref-origin', 'streamseal.ctl.ref-origin', 60, 0, null) $$,
    '22023', 'observe_origin: window_to null of origin "ref-origin" is invalid: expected a non-negative origin_seq',
    'observe_origin refuses a missing window end');

-- verify_checkpoint
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('lane-refusals', 1, 5, 'refused.type', array['t1'],
           array[4]::bigint[], array[1]::bigint[], array[4]::bigint[], array['{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: origin "lane-refusals" is this service: a service keeps no lane of its own events',
    'verify_checkpoint refuses this service''s own checkpoints');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 5, 3, 'refused.type', array['t1'],
           array[4]::bigint[], array[1]::bigint[], array[4]::bigint[], array['{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: window [5, 3) of origin "ref-origin" is invalid: expected 0 <= from <= to',
    'verify_checkpoint refuses an inverted window');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, '', array['t1'],
           array[4]::bigint[], array[1]::bigint[], array[4]::bigint[], array['{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: event_type '''' is invalid: expected a non-empty name',
    'verify_checkpoint refuses an empty event type');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', '{}',
           '{}', '{}', '{}', '{}') $$,
    '22023', 'verify_checkpoint: a checkpoint must name its tenants: expected a non-empty list, got {}',
    'verify_checkpoint refuses a checkpoint without tenants');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1', 't1'],
           array[4, 4]::bigint[], array[1, 1]::bigint[], array[4, 4]::bigint[], array['{}', '{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: tenant ''t1'' appears more than once in the checkpoint',
    'verify_checkpoint refuses a tenant named twice');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1', 't2'],
           array[4, 4]::bigint[], array[1]::bigint[], array[4, 4]::bigint[], array['{}', '{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: first_type_seqs has 1 elements for 2 tenants: expected one-dimensional arrays parallel to tenants',
    'verify_checkpoint refuses arrays that are not parallel');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1'],
           array[4]::bigint[], array[1]::bigint[], array[4]::bigint[], null) $$,
    '22023', 'verify_checkpoint: at_most_once has null elements for 1 tenants: expected one-dimensional arrays parallel to tenants',
    'verify_checkpoint refuses a missing array');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1'],
           array[-1]::bigint[], array[1]::bigint[], array[4]::bigint[], array['{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: tenant ''t1'' of origin "ref-origin" type ''refused.type'': count -1 is invalid: expected a non-negative number',
    'verify_checkpoint refuses a negative count');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1'],
           array[4]::bigint[], array[1]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: tenant ''t1'' of origin "ref-origin" type ''refused.type'': type_seq range [1, null] is half given: expected first and last both or neither (a heartbeat)',
    'verify_checkpoint refuses a half-given type_seq range');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1'],
           array[4]::bigint[], array[0]::bigint[], array[3]::bigint[], array['{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: tenant ''t1'' of origin "ref-origin" type ''refused.type'': type_seq range [0, 3] is invalid: expected 1 <= first <= last',
    'verify_checkpoint refuses type_seq 0');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1'],
           array[4]::bigint[], array[5]::bigint[], array[3]::bigint[], array['{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: tenant ''t1'' of origin "ref-origin" type ''refused.type'': type_seq range [5, 3] is invalid: expected 1 <= first <= last',
    'verify_checkpoint refuses an inverted type_seq range');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1'],
           array[3]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: tenant ''t1'' of origin "ref-origin" type ''refused.type'': count 3 without a type_seq range is invalid: expected 0 on a heartbeat',
    'verify_checkpoint refuses a count without a type_seq range');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{[2,3)}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: tenant ''t1'' of origin "ref-origin" type ''refused.type'': at_most_once {[2,3)} without a type_seq range is invalid: expected {} on a heartbeat',
    'verify_checkpoint refuses at-most-once type_seqs on a heartbeat');
-- The first tenant's row is good; the second's at-most-once ranges lie outside what it announced.
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('ref-origin', 1, 9, 'refused.type', array['t1', 't2'],
           array[4, 2]::bigint[], array[1, 1]::bigint[], array[4, 4]::bigint[], array['{}', '{[4,6)}']::int8multirange[]) $$,
    '22023', 'verify_checkpoint: tenant ''t2'' of origin "ref-origin" type ''refused.type'': at_most_once {[4,6)} is invalid: expected type_seqs within [1, 4]',
    'verify_checkpoint refuses at-most-once type_seqs outside the announced range (they would hide real holes)');
select is_empty(
    $$ select from streamseal.lanes where origin = 'ref-origin' $$,
    'a refused checkpoint changes nothing: no lane was born from its good row');

-- mark_requested, accept_loss, record_gap, silent_origins
select streamseal.verify_checkpoint('ref-origin', 1, 5, 'refused.type', array['t1'],
    array[4]::bigint[], array[1]::bigint[], array[4]::bigint[], array['{}']::int8multirange[]);
select throws_ok(
    $$ select streamseal.mark_requested('ref-origin', 't9', 'refused.type', '{[1,2)}') $$,
    '22023', 'mark_requested: lane (''ref-origin'', ''t9'', ''refused.type'') is unknown: expected a lane a checkpoint announced',
    'mark_requested refuses an unknown lane');
select throws_ok(
    $$ select streamseal.mark_requested('ref-origin', 't1', 'refused.type', '{}') $$,
    '22023', 'mark_requested: type_seqs {} is invalid: expected at least one bounded range of type_seqs >= 1',
    'mark_requested refuses an empty set of type_seqs');
select throws_ok(
    $$ select streamseal.mark_requested('ref-origin', 't1', 'refused.type', '{[3,)}') $$,
    '22023', 'mark_requested: type_seqs {[3,)} is invalid: expected at least one bounded range of type_seqs >= 1',
    'mark_requested refuses an unbounded range');
select throws_ok(
    $$ select streamseal.mark_requested('ref-origin', null, 'refused.type', '{[1,2)}') $$,
    '22023', 'mark_requested: tenant null is invalid: expected a name ('''' for a single-tenant service)',
    'mark_requested refuses a null tenant');
select throws_ok(
    $$ select streamseal.accept_loss('ref-origin', 't1', 'refused.type', '{[1,2)}', 'lost') $$,
    '22023', 'accept_loss: reason ''lost'' is invalid: expected at_most_once, reaped_ephemeral, absent or never_existed',
    'accept_loss refuses an unknown reason: a loss is accepted only for an announced reason');
select throws_ok(
    $$ select streamseal.accept_loss('ref-origin', 't1', 'refused.type', '{[0,2)}', 'absent') $$,
    '22023', 'accept_loss: type_seqs {[0,2)} is invalid: expected at least one bounded range of type_seqs >= 1',
    'accept_loss refuses type_seq 0');
select throws_ok(
    $$ select streamseal.record_gap('ref-origin', 't1', 'refused.type', '{[1,2)}', 1, 5, 'ignored', null) $$,
    '22023', 'record_gap: action ''ignored'' is invalid: expected requested, would_request, withheld or waiting_for_cap',
    'record_gap refuses an unknown action');
select throws_ok(
    $$ select streamseal.record_gap('ref-origin', 't1', 'refused.type', '{[1,2)}', 5, 1, 'requested', null) $$,
    '22023', 'record_gap: window [5, 1) is invalid: expected 0 <= from <= to (null: not known)',
    'record_gap refuses an inverted window');
select throws_ok(
    $$ select * from streamseal.silent_origins(0) $$,
    '22023', 'silent_origins: intervals 0 is invalid: expected a positive number of checkpoint intervals',
    'silent_origins refuses zero intervals');

select * from finish();
rollback;

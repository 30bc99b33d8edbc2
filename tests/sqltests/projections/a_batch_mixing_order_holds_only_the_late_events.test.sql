-- Projections fold each stream in stream_version order across its types (issue 19 item 2;
-- invariant 5 for read models). One batch mixing, in one stream of two types, events above the
-- stream's cursors with one that lands below a version applied earlier in the same batch (of the
-- other type), beside a stream wholly in order: only the late event is held, naming the version
-- applied above it; every other event applies, in feed order, and the cursors fold exactly what
-- was applied. The order check is per stream, not per (stream, type): per type, each type's
-- events here are increasing on their own.
begin;
select plan(5);
select streamseal.set_service_name('proj-mix');
create schema proj_mix;
create table proj_mix.folds (seq bigint generated always as identity, stream_id text, event_type text, stream_version bigint);
create function proj_mix.fold(e streamseal.handler_event) returns void language sql
    as $$ insert into proj_mix.folds (stream_id, event_type, stream_version) values (e.stream_id, e.event_type, e.stream_version) $$;
create function proj_mix.reset(origin text, tenant text, stream_id text) returns void language sql
    as $$ delete from proj_mix.folds f where f.stream_id = reset.stream_id $$;
select streamseal.register_projection('mix-p', array['mix.a', 'mix.b'], 'proj_mix.fold', reset => 'proj_mix.reset');

-- A first batch: stream m1 has mix.a v1 applied.
select streamseal.append(array[streamseal_test.own('m1', 1, 'mix.a', event_id => streamseal_test.uid(101))]);
select streamseal.stamp();
select streamseal.run_handler('mix-p');
select streamseal.run_handler('mix-p'); -- caught up

-- One batch, feed order as listed: m1 mix.b v3, mix.a v2 (below v3, just applied), mix.b v4,
-- mix.a v5; m2 (new) mix.a v1, mix.b v2.
select streamseal.append(array[streamseal_test.own('m1', 3, 'mix.b', event_id => streamseal_test.uid(103)),
                               streamseal_test.own('m2', 1, 'mix.a', event_id => streamseal_test.uid(201)),
                               streamseal_test.own('m1', 2, 'mix.a', event_id => streamseal_test.uid(102)),
                               streamseal_test.own('m1', 4, 'mix.b', event_id => streamseal_test.uid(104)),
                               streamseal_test.own('m2', 2, 'mix.b', event_id => streamseal_test.uid(202)),
                               streamseal_test.own('m1', 5, 'mix.a', event_id => streamseal_test.uid(105))]);
select streamseal.stamp();
select results_eq($$ select read, applied, out_of_order, order_rebuilds from streamseal.run_handler('mix-p', max_order_rebuilds => 0) $$,
    $$ values (6, 5, 1, 0) $$, 'in one batch, only the event below a version applied before it in its stream is held');
select results_eq($$ select stream_id, event_type, stream_version from proj_mix.folds order by seq $$,
    $$ values ('m1', 'mix.a', 1::bigint), ('m1', 'mix.b', 3::bigint), ('m2', 'mix.a', 1::bigint), ('m1', 'mix.b', 4::bigint),
              ('m2', 'mix.b', 2::bigint), ('m1', 'mix.a', 5::bigint) $$,
    'every other event applied, in feed order');
select results_eq($$ select stream_id, event_type, stream_version, applied_version from streamseal.projection_held $$,
    $$ values ('m1' collate "C", 'mix.a', 2::bigint, 3::bigint) $$, 'the hold names the late event and the version applied above it');
select results_eq($$ select stream_id, event_type, n, stream_version from streamseal.projection_cursors
                    where projection = 'mix-p' order by 1, 2 $$,
    $$ values ('m1' collate "C", 'mix.a', 2::bigint, 5::bigint), ('m1', 'mix.b', 2::bigint, 4::bigint),
              ('m2', 'mix.a', 1::bigint, 1::bigint), ('m2', 'mix.b', 1::bigint, 2::bigint) $$,
    'the cursors fold exactly what was applied');
select results_eq($$ select count(*), bit_xor(streamseal._h0(e.event_id)) from streamseal.events e
                    where e.stream_id = 'm1' and e.event_type = 'mix.a' and e.event_id <> streamseal_test.uid(102) $$,
    $$ select n, x0 from streamseal.projection_cursors where projection = 'mix-p' and stream_id = 'm1' and event_type = 'mix.a' $$,
    'the held event is not in its bucket''s fold');

select * from finish();
rollback;

-- Invariant 4: a legitimate mutation of sealed own history (close_stream, reclassify_ephemeral)
-- refolds the closed epochs and sealed prefix it touches in the same statement and bumps the
-- origin generation by exactly one. A mutation of stamped own events only in the open epoch bumps
-- too (a consumer's seal, settled max + 1, can already cover that epoch: the seal must never stand
-- over changed history); statements that change no counted own event do not bump.
begin;
select plan(22);
select streamseal.set_service_name('generation-mutations');

-- 35 own events over 5 streams and 2 types; width 10 closes epochs 0..2, epoch 3 stays open.
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 5), i, case when i % 3 = 0 then 'b.done' else 'a.done' end,
                               event_id => streamseal_test.uid(i))
    from generate_series(1, 35) i order by i));
select streamseal.stamp();
select is((select count(*)::int from streamseal.close_epochs(width => 10)), 3, 'setup: epochs 0..2 close');

-- Where the sealed state differs from the store: every closed epoch, the prefix, and a whole-lane
-- answer, each as a symmetric difference against _epoch_fold (no rows: exact).
create function pg_temp.sealed_drift()
returns table (part text, epoch bigint, tenant text, event_type text, x0 bigint, x1 bigint, n bigint)
language sql as $$
    with stored_epochs as (
        select d.epoch, d.tenant, d.event_type, d.x0, d.x1, d.n from streamseal.digest_epochs d
        where d.origin = 'generation-mutations' and (d.x0, d.x1, d.n) <> (0, 0, 0)
    ), true_epochs as (
        select g.e, f.* from generate_series(0, 2) g(e),
               streamseal._epoch_fold('generation-mutations', g.e * 10, g.e * 10 + 10) f
    ), stored_prefix as (
        select -1::bigint, p.tenant, p.event_type, p.x0, p.x1, p.n from streamseal.sealed_prefix p
        where p.origin = 'generation-mutations' and (p.x0, p.x1, p.n) <> (0, 0, 0)
    ), true_prefix as (
        select -1::bigint, f.* from streamseal._epoch_fold('generation-mutations', 0, 30) f
    ), answer as (
        select -1::bigint, a.tenant, a.event_type, a.x0, a.x1, a.n
        from streamseal.type_digests('generation-mutations', 0, 1000) a where a.tenant is not null
    ), true_answer as (
        select -1::bigint, f.* from streamseal._epoch_fold('generation-mutations', 0, 1000) f
    )
    (select 'stored epoch', * from stored_epochs except select 'stored epoch', * from true_epochs)
    union all (select 'true epoch', * from true_epochs except select 'true epoch', * from stored_epochs)
    union all (select 'stored prefix', * from stored_prefix except select 'stored prefix', * from true_prefix)
    union all (select 'true prefix', * from true_prefix except select 'true prefix', * from stored_prefix)
    union all (select 'answer', * from answer except select 'answer', * from true_answer)
    union all (select 'true answer', * from true_answer except select 'true answer', * from answer)
$$;

select is(streamseal.origin_generation(), 0::bigint, 'a fresh service starts at generation 0');

-- 1. close_stream of s1 (seqs 1, 6, 11, 16, 21, 26 sealed; 31 open): one statement, one bump.
select is(streamseal.close_stream('t1', 's1'), 7::bigint, 'close_stream removes the 7 events of s1');
select is(streamseal.origin_generation(), 1::bigint, 'close_stream into sealed epochs bumps the generation by exactly 1');
select is_empty('select * from pg_temp.sealed_drift()', 'after close_stream every sealed fold and the whole-lane answer equal the store');
select is((select sum(n)::int from streamseal.sealed_prefix where origin = 'generation-mutations'), 23,
    'the sealed prefix now counts the 23 surviving events below 30');

-- 2. close_stream of s2 below version 10 (seqs 2 and 7, epoch 0 only): one more bump.
select is(streamseal.close_stream('t1', 's2', 10), 2::bigint, 'close_stream below version 10 removes 2 events of s2');
select is(streamseal.origin_generation(), 2::bigint, 'a partial close_stream into a sealed epoch bumps by exactly 1');
select is_empty('select * from pg_temp.sealed_drift()', 'after the partial close_stream every sealed fold equals the store');

-- 3. reclassify_ephemeral of b.done (sealed and open events): one bump, b.done leaves every fold.
select is(streamseal.reclassify_ephemeral('b.done'), 9::bigint, 'reclassify_ephemeral marks the 9 remaining b.done events');
select is(streamseal.origin_generation(), 3::bigint, 'reclassifying a type with sealed events bumps by exactly 1');
select is_empty('select * from pg_temp.sealed_drift()', 'after reclassification every sealed fold equals the store');
select is_empty(
    $$ select * from streamseal.digest_epochs where origin = 'generation-mutations' and event_type = 'b.done' and n <> 0 $$,
    'no closed epoch counts b.done any more');

-- 4. Mutations of the open epoch bump as well; statements that change nothing counted do not.
select streamseal.append(array[
    streamseal_test.own('late', 1, 'c.done', event_id => streamseal_test.uid(36)),
    streamseal_test.own('late', 2, 'c.done', event_id => streamseal_test.uid(37)),
    streamseal_test.own('late2', 1, 'd.done', event_id => streamseal_test.uid(38))]);
select streamseal.stamp();
select is(streamseal.close_stream('t1', 'late'), 2::bigint, 'close_stream of a stream only in the open epoch removes 2 events');
select is(streamseal.origin_generation(), 4::bigint, 'a close_stream touching only the open epoch bumps by exactly 1 (the seal may cover it)');
select is(streamseal.close_stream('t1', 'no-such-stream'), 0::bigint, 'close_stream of an unknown stream removes nothing');
select is(streamseal.origin_generation(), 4::bigint, 'a close_stream removing nothing does not bump');
select is(streamseal.reclassify_ephemeral('d.done'), 1::bigint, 'reclassify_ephemeral of a type only in the open epoch marks 1 event');
select is(streamseal.origin_generation(), 5::bigint, 'reclassifying a type only in the open epoch bumps by exactly 1');
update streamseal.events set metadata = '{"touched": true}' where origin = 'generation-mutations';
select is(streamseal.origin_generation(), 5::bigint, 'a metadata-only UPDATE of every event (sealed included) does not bump');
select is_empty('select * from pg_temp.sealed_drift()', 'and every sealed fold still equals the store');
select is(streamseal_test.digest_drift(), 0::bigint, 'the stream digests equal a recompute throughout');

select * from finish();
rollback;

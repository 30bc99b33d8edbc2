-- Invariant 4: verify_digest_epochs with a cap resumes where the last call stopped (wrapping
-- around), so repeated capped calls reach every closed epoch of every lane, find and heal each
-- drifted epoch and a drifted sealed prefix, and leave every sealed answer equal to the store.
begin;
select plan(13);
select streamseal.set_service_name('epoch-verify-cap');

-- Own lane: 35 events -> epochs 0..2 closed. Received lane verify-origin: 45 copies -> epochs 0..3.
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 3), i, case when i % 4 = 0 then 'b.done' else 'a.done' end,
                               event_id => streamseal_test.uid(i))
    from generate_series(1, 35) i order by i));
select streamseal.stamp();
select streamseal.ingest(array(
    select streamseal_test.copy('verify-origin', i, i, 'k' || (i % 2), i, case when i % 3 = 0 then 'b.seen' else 'a.seen' end,
                                event_id => streamseal_test.uid(100 + i))
    from generate_series(1, 45) i));
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'verify-origin';

select results_eq(
    $$ select origin, count(*)::int from streamseal.close_epochs(width => 10, settle => interval '1 hour')
       group by origin order by origin $$,
    $$ values ('epoch-verify-cap'::text, 3), ('verify-origin', 4) $$,
    'setup: 3 own and 4 received epochs close (7 in all)');

-- Sabotage: one epoch row in each lane and one sealed_prefix row of the received lane.
update streamseal.digest_epochs set x0 = x0 # 7
where origin = 'epoch-verify-cap' and epoch = 1 and event_type = 'a.done';
update streamseal.digest_epochs set n = n + 1
where origin = 'verify-origin' and epoch = 2 and event_type = 'b.seen';
update streamseal.sealed_prefix set x1 = x1 # 5
where origin = 'verify-origin' and event_type = 'a.seen';

-- Seven capped calls (one epoch each), recording each result and where the cursor stands after it.
create temp table calls (call int, origin text, checked int, drifted int, prefix_healed boolean,
                         cursor_origin text, cursor_epoch bigint) on commit drop;
do $$
begin
    for k in 1..7 loop
        insert into calls (call, origin, checked, drifted, prefix_healed)
        select k, v.* from streamseal.verify_digest_epochs(1) v;
        update calls set cursor_origin = c.origin, cursor_epoch = c.epoch
        from streamseal.epoch_verify_cursor c where calls.call = k;
    end loop;
end
$$;

select results_eq(
    $$ select call, origin, checked, cursor_origin, cursor_epoch from calls order by call $$,
    $$ values (1, 'epoch-verify-cap'::text, 1, 'epoch-verify-cap'::text, 0::bigint),
              (2, 'epoch-verify-cap', 1, 'epoch-verify-cap', 1),
              (3, 'epoch-verify-cap', 1, 'epoch-verify-cap', 2),
              (4, 'verify-origin', 1, 'verify-origin', 0),
              (5, 'verify-origin', 1, 'verify-origin', 1),
              (6, 'verify-origin', 1, 'verify-origin', 2),
              (7, 'verify-origin', 1, 'verify-origin', 3) $$,
    'each capped call checks the epoch after the cursor: 7 calls visit all 7 closed epochs in (origin, epoch) order');
select is((select sum(checked)::int from calls), 7,
    'the checked counts of the 7 calls sum to the 7 closed epochs');
select results_eq(
    $$ select call, origin, drifted from calls where drifted > 0 order by call $$,
    $$ values (2, 'epoch-verify-cap'::text, 1), (6, 'verify-origin', 1) $$,
    'exactly the two sabotaged epochs (own epoch 1, received epoch 2) are reported drifted');
select ok((select bool_or(prefix_healed) from calls where origin = 'verify-origin'),
    'the sabotaged sealed prefix of the received lane is reported healed');
-- Regression guard: verify_digest_epochs used to re-derive a lane's sealed prefix from ALL its
-- digest_epochs rows after every call, including closed epochs the capped call had not verified;
-- a still-undetected corrupt epoch row (own epoch 1, when call 1 checked only epoch 0) overwrote a
-- correct prefix and was reported as prefix_healed (see epochs/capped_verify_never_poisons_a_correct_prefix).
select is((select bool_or(prefix_healed) from calls where origin = 'epoch-verify-cap'), false,
    'the own lane, whose prefix was never sabotaged, is never reported prefix_healed');

select results_eq(
    $$ select origin, checked from streamseal.verify_digest_epochs(1) $$,
    $$ values ('epoch-verify-cap'::text, 1) $$,
    'an 8th capped call wraps around to the first lane');
select results_eq(
    $$ select origin, epoch from streamseal.epoch_verify_cursor $$,
    $$ values ('epoch-verify-cap'::text, 0::bigint) $$,
    'the cursor wrapped to (own lane, epoch 0)');

select bag_eq(
    $$ select origin, epoch, tenant, event_type, x0, x1, n from streamseal.digest_epochs $$,
    $$ select 'epoch-verify-cap'::text, g.e, f.* from generate_series(0, 2) g(e),
              streamseal._epoch_fold('epoch-verify-cap', g.e * 10, g.e * 10 + 10) f
       union all
       select 'verify-origin', g.e, f.* from generate_series(0, 3) g(e),
              streamseal._epoch_fold('verify-origin', g.e * 10, g.e * 10 + 10) f $$,
    'every closed epoch of both lanes again equals _epoch_fold over its range');
select bag_eq(
    $$ select origin, tenant, event_type, x0, x1, n from streamseal.sealed_prefix $$,
    $$ select 'epoch-verify-cap'::text, * from streamseal._epoch_fold('epoch-verify-cap', 0, 30)
       union all select 'verify-origin', * from streamseal._epoch_fold('verify-origin', 0, 40) $$,
    'both sealed prefixes again equal the fold of their closed history');
select results_eq(
    $$ select * from streamseal.verify_digest_epochs() $$,
    $$ values ('epoch-verify-cap'::text, 3, 0, false), ('verify-origin', 4, 0, false) $$,
    'a full verify afterwards checks all 7 epochs and finds no drift');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('epoch-verify-cap', 0, 1000000) $$,
    $$ select * from streamseal._epoch_fold('epoch-verify-cap', 0, 1000000) $$,
    'a whole-lane answer of the own lane equals the live fold');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('verify-origin', 0, 1000000, interval '1 hour') $$,
    $$ select * from streamseal._epoch_fold('verify-origin', 0, 1000000) $$,
    'a whole-lane answer of the received lane equals the live fold');

select * from finish();
rollback;

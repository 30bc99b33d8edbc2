-- Invariant 4: a capped verify_digest_epochs never makes a correct sealed fold wrong: a corrupt
-- epoch row it has not verified yet must not leak into the lane's sealed prefix (and with it into
-- every whole-lane answer).
begin;
select plan(7);
select streamseal.set_service_name('epoch-verify-poison');

select streamseal.append(array(
    select streamseal_test.own('s' || (i % 3), i, event_id => streamseal_test.uid(i))
    from generate_series(1, 35) i order by i));
select streamseal.stamp();
select streamseal.close_epochs(width => 10);

-- Corrupt epoch 2's row only; the sealed prefix is still right.
update streamseal.digest_epochs set x0 = x0 # 1 where origin = 'epoch-verify-poison' and epoch = 2;
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('epoch-verify-poison', 0, 1000) $$,
    $$ select * from streamseal._epoch_fold('epoch-verify-poison', 0, 1000) $$,
    'before the sweep, the whole-lane answer (read from the intact sealed prefix) is right');

-- Regression guard for the next three assertions: verify_digest_epochs used to rebuild the prefix
-- from every digest_epochs row after any call, so a call that checked only epoch 0 copied the
-- corrupt epoch 2 into the prefix (reporting prefix_healed) and from there into whole-lane answers.
-- The prefix must be re-derived only from verified epochs (today: in the call completing a pass).
select results_eq(
    $$ select * from streamseal.verify_digest_epochs(1) $$,
    $$ values ('epoch-verify-poison'::text, 1, 0, false) $$,
    'a capped call that checks only epoch 0 finds no drift and heals no prefix');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.sealed_prefix where origin = 'epoch-verify-poison' $$,
    $$ select * from streamseal._epoch_fold('epoch-verify-poison', 0, 30) $$,
    'the sealed prefix still equals the fold of [0, 30)');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('epoch-verify-poison', 0, 1000) $$,
    $$ select * from streamseal._epoch_fold('epoch-verify-poison', 0, 1000) $$,
    'the whole-lane answer is still right after the capped call');

-- Completing the pass heals the corrupt epoch; the intact prefix needs no healing.
select results_eq(
    $$ select * from streamseal.verify_digest_epochs(1) $$,
    $$ values ('epoch-verify-poison'::text, 1, 0, false) $$,
    'the second capped call checks epoch 1 and finds nothing');
select results_eq(
    $$ select * from streamseal.verify_digest_epochs(1) $$,
    $$ values ('epoch-verify-poison'::text, 1, 1, false) $$,
    'the third capped call finds and heals the corrupt epoch 2; the prefix was right all along');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.sealed_prefix where origin = 'epoch-verify-poison' $$,
    $$ select * from streamseal._epoch_fold('epoch-verify-poison', 0, 30) $$,
    'after the pass reaches epoch 2, the prefix equals the fold of [0, 30)');

select * from finish();
rollback;

-- Invariant 8 (and 11): a mismatched type is drilled into by bisecting the tenant key space. The
-- folds of K sub-ranges compose to the type's fold; equal stores compare equal at every range;
-- one lost event names the one sub-range holding its tenant, then the narrower sub-range inside
-- it, then the tenant itself; the origin folds only what the requester is granted; bad ranges
-- are refused with a clear error.
begin;
select plan(14);
select streamseal.set_service_name('rf-consumer');
select streamseal.grant_redelivery_all_tenants('rf-auditor', array['a.happened', 'b.happened']);
select streamseal.subscribe_all_tenants(array['a.happened', 'b.happened'], 'rf-remote');

-- 800 copies of rf-remote's lane: tenants u000..u199 (i % 200), a.happened for i < 400, else
-- b.happened: two events a (tenant, type) pair, 200 pairs a type.
select streamseal.ingest(array(
    select streamseal_test.copy('rf-remote', i + 1, i / 200 + 1, 's' || lpad((i % 200)::text, 3, '0') || '-' || (i / 400), i / 200 + 1,
                                event_type => case when i < 400 then 'a.happened' else 'b.happened' end,
                                tenant => 'u' || lpad((i % 200)::text, 3, '0'), event_id => streamseal_test.uid(91000 + i))
    from generate_series(0, 799) i order by i));
-- Settled: the origin side answers a lane only up to what settled before this transaction.
update streamseal.events set stored_at = now() - interval '1 hour' where origin = 'rf-remote';

-- The origin's answers, taken while the copy is whole (the copy stands in for the origin's lane).
create temp table top_answer as
    select * from streamseal.answer_range_folds('rf-auditor', 'rf-remote', 0, 1000, array['a.happened', 'b.happened'],
                                                array[null, null]::text[], 0, streamseal.tenant_key_end(), 16);
create temp table victim as
    select k.part_lo, k.part_hi
    from streamseal._key_parts(0, streamseal.tenant_key_end(), 16) k
    where k.part = streamseal._key_part(streamseal.tenant_key('u137'), 0, streamseal.tenant_key_end(), 16);
create temp table inner_answer as
    select a.* from victim v, streamseal.answer_range_folds('rf-auditor', 'rf-remote', 0, 1000, array['a.happened'],
                                                             array[null]::text[], v.part_lo, v.part_hi, 16) a;
create temp table leaf_answer as
    select a.* from victim v, streamseal.answer_range_tenant_digests('rf-auditor', 'rf-remote', 0, 1000, array['a.happened'],
                                                                      array[null]::text[], v.part_lo, v.part_hi) a;

select results_eq(
    $$ select event_type, bit_xor(x0), bit_xor(x1), sum(n)::bigint, sum(pairs)::bigint from top_answer group by event_type order by 1 $$,
    $$ select event_type, x0, x1, n, 200::bigint from streamseal.answer_type_folds('rf-auditor', 'rf-remote', 0, 1000,
                                                                                    array['a.happened', 'b.happened'], array[null, null]::text[]) $$,
    'the sub-range folds compose (XOR, sum) to the type fold, and count every (tenant, type) pair once');
select results_eq(
    $$ select min(part_lo), max(part_hi), count(*)::int,
              count(*) filter (where part_hi <> next_lo)::int
       from (select part, part_lo, part_hi, coalesce(lead(part_lo) over (order by part), part_hi) as next_lo
             from streamseal._key_parts(0, streamseal.tenant_key_end(), 16)) k $$,
    $$ values (0::bigint, streamseal.tenant_key_end(), 16, 0) $$,
    'the 16 sub-ranges tile the key space [0, 2^62)');
select is(
    (select count(*)::int
     from generate_series(0, 199) i
     join streamseal._key_parts(0, streamseal.tenant_key_end(), 16) k
       on streamseal.tenant_key('u' || lpad(i::text, 3, '0')) >= k.part_lo and streamseal.tenant_key('u' || lpad(i::text, 3, '0')) < k.part_hi
      and k.part = streamseal._key_part(streamseal.tenant_key('u' || lpad(i::text, 3, '0')), 0, streamseal.tenant_key_end(), 16)),
    200,
    'every tenant''s key lies in exactly the part _key_part names');

select is_empty(
    $$ select * from streamseal.compare_range_folds('rf-remote', 0, 801, 0, streamseal.tenant_key_end(), 16,
           (select array_agg(part order by part, event_type) from top_answer), (select array_agg(event_type order by part, event_type) from top_answer),
           (select array_agg(x0 order by part, event_type) from top_answer), (select array_agg(x1 order by part, event_type) from top_answer),
           (select array_agg(n order by part, event_type) from top_answer), (select array_agg(pairs order by part, event_type) from top_answer),
           array['a.happened', 'b.happened'], array[null, null]::text[]) $$,
    'healthy: every sub-range fold compares equal');

-- One event of tenant u137, a.happened, lost from the copy.
delete from streamseal.events where origin = 'rf-remote' and event_id = streamseal_test.uid(91137);

select results_eq(
    $$ select part_lo, part_hi, event_type, local_n, origin_n, local_pairs, origin_pairs, reason
       from streamseal.compare_range_folds('rf-remote', 0, 801, 0, streamseal.tenant_key_end(), 16,
           (select array_agg(part order by part, event_type) from top_answer), (select array_agg(event_type order by part, event_type) from top_answer),
           (select array_agg(x0 order by part, event_type) from top_answer), (select array_agg(x1 order by part, event_type) from top_answer),
           (select array_agg(n order by part, event_type) from top_answer), (select array_agg(pairs order by part, event_type) from top_answer),
           array['a.happened', 'b.happened'], array[null, null]::text[]) $$,
    $$ select v.part_lo, v.part_hi, 'a.happened'::text, t.n - 1, t.n, t.pairs, t.pairs, 'deficit'::text
       from victim v join top_answer t on t.part_lo = v.part_lo and t.event_type = 'a.happened' $$,
    'one lost event: exactly one sub-range of one type differs, the one holding its tenant');
select results_eq(
    $$ select c.event_type, c.origin_n - c.local_n, c.origin_pairs < 200 / 16, c.reason,
              streamseal.tenant_key('u137') >= c.part_lo and streamseal.tenant_key('u137') < c.part_hi as holds_tenant
       from victim v, streamseal.compare_range_folds('rf-remote', 0, 801, v.part_lo, v.part_hi, 16,
           (select array_agg(part order by part) from inner_answer), (select array_agg(event_type order by part) from inner_answer),
           (select array_agg(x0 order by part) from inner_answer), (select array_agg(x1 order by part) from inner_answer),
           (select array_agg(n order by part) from inner_answer), (select array_agg(pairs order by part) from inner_answer),
           array['a.happened'], array[null]::text[]) c $$,
    $$ values ('a.happened'::text, 1::bigint, true, 'deficit'::text, true) $$,
    'bisecting the differing sub-range again narrows it to one smaller sub-range, the one holding the tenant');
select results_eq(
    $$ select tenant, event_type, local_n, origin_n, reason
       from victim v, streamseal.compare_range_tenant_digests('rf-remote', 0, 801, v.part_lo, v.part_hi,
           (select array_agg(tenant order by tenant) from leaf_answer), (select array_agg(event_type order by tenant) from leaf_answer),
           (select array_agg(x0 order by tenant) from leaf_answer), (select array_agg(x1 order by tenant) from leaf_answer),
           (select array_agg(n order by tenant) from leaf_answer), array['a.happened'], array[null]::text[]) $$,
    $$ values ('u137'::text, 'a.happened'::text, 1::bigint, 2::bigint, 'deficit'::text) $$,
    'listing the small range names the damaged tenant');
select ok((select count(*) from leaf_answer) < 200 / 8,
    'the listed range holds a small share of the 200 tenants');

-- Invariant 11: the origin folds only the pairs the requester is granted.
select streamseal.grant_redelivery('rf-narrow', array['a.happened'], array['u137']);
select results_eq(
    $$ select event_type, sum(n)::bigint, sum(pairs)::bigint
       from streamseal.answer_range_folds('rf-narrow', 'rf-remote', 0, 1000, array['a.happened', 'b.happened'],
                                          array[null, null]::text[], 0, streamseal.tenant_key_end(), 4)
       group by event_type $$,
    $$ values ('a.happened'::text, 1::bigint, 1::bigint) $$,
    'a requester granted one tenant of one type sees one pair''s fold');
select results_eq(
    $$ select part, event_type, n, watermark from streamseal.answer_range_folds('nobody', 'rf-remote', 0, 1000,
                                          array['a.happened'], array[null]::text[], 0, streamseal.tenant_key_end(), 4) $$,
    $$ values (null::integer, null::text, 0::bigint, 801::bigint) $$,
    'nothing granted answers the watermark alone');
select is_empty(
    $$ select * from streamseal.answer_range_tenant_digests('nobody', 'rf-remote', 0, 1000, array['a.happened'],
                                                            array[null]::text[], 0, streamseal.tenant_key_end()) where tenant is not null $$,
    'nothing granted lists no tenant');

-- Bad ranges and splits get a clear error.
select throws_ok(
    $$ select * from streamseal.answer_range_folds('rf-auditor', 'rf-remote', 0, 1000, array['a.happened'], array[null]::text[], 10, 5, 4) $$,
    '22023', 'answer_range_folds: tenant key range [10, 5) is invalid: expected 0 <= lo < hi <= 4611686018427387904',
    'a range with lo > hi is refused');
select throws_ok(
    $$ select * from streamseal.answer_range_folds('rf-auditor', 'rf-remote', 0, 1000, array['a.happened'], array[null]::text[],
                                                   0, streamseal.tenant_key_end(), 65) $$,
    '22023', 'answer_range_folds: parts 65 is invalid: expected 2 to 64 sub-ranges',
    'an oversized split is refused');
select throws_ok(
    $$ select * from streamseal.compare_range_folds('rf-remote', 0, 801, 0, 100, 4, array[4], array['a.happened'],
                                                    array[1]::bigint[], array[1]::bigint[], array[1]::bigint[], array[1]::bigint[],
                                                    array['a.happened'], array[null]::text[]) $$,
    '22023', 'compare_range_folds: row #1 of the answer of origin "rf-remote": part 4 is invalid: expected 0 to 3',
    'an answer naming a part outside the split is refused whole');

select * from finish();
rollback;

-- Consumer seals: per origin, the watermark below which this consumer has audited its copy
-- complete ([0, sealed_through)), and the origin generation it was audited under. The audit job
-- calls seal_generation_guard before asking and advance_seal after a window certified whole.

-- advance_seal raises the seal of origin to through, never lowering it (a replayed, stale advance
-- can never re-open verified history), and returns the seal after the call.
create function streamseal.advance_seal(origin text, through bigint)
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    result bigint;
begin
    if advance_seal.origin is null or advance_seal.through is null or advance_seal.through < 0 then
        raise exception 'advance_seal: seal % of origin % is invalid: expected a non-negative watermark',
            advance_seal.through, coalesce(pg_catalog.quote_literal(advance_seal.origin), 'null')
            using errcode = '22023';
    end if;
    insert into streamseal.seals as s (origin, sealed_through)
    values (advance_seal.origin, advance_seal.through)
    on conflict on constraint seals_pkey do update
        set sealed_through = greatest(s.sealed_through, excluded.sealed_through),
            updated_at = case when excluded.sealed_through > s.sealed_through then pg_catalog.now() else s.updated_at end
    returning s.sealed_through into result;
    return result;
end
$$;

-- seal_generation_guard compares the origin's current generation with the one the seal was
-- built under, in one atomic call: unchanged (or first seen with nothing sealed) -> 'proceed';
-- changed -> the seal resets to 0 once, the new generation is recorded, and the caller is told
-- to 'skip' this round (its windows were aligned to the old history). The next call proceeds.
create function streamseal.seal_generation_guard(origin text, generation bigint)
returns text
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    current streamseal.seals;
begin
    if seal_generation_guard.origin is null or seal_generation_guard.generation is null or seal_generation_guard.generation < 0 then
        raise exception 'seal_generation_guard: generation % of origin % is invalid: expected a non-negative number',
            seal_generation_guard.generation, coalesce(pg_catalog.quote_literal(seal_generation_guard.origin), 'null')
            using errcode = '22023';
    end if;
    insert into streamseal.seals (origin, sealed_through, generation)
    values (seal_generation_guard.origin, 0, seal_generation_guard.generation)
    on conflict on constraint seals_pkey do nothing;

    select s.* into current from streamseal.seals s where s.origin = seal_generation_guard.origin for update;
    if current.generation = seal_generation_guard.generation then
        return 'proceed';
    end if;
    if current.generation is null and current.sealed_through = 0 then
        update streamseal.seals s set generation = seal_generation_guard.generation
        where s.origin = seal_generation_guard.origin;
        return 'proceed';
    end if;
    -- A seal built under another generation (or none recorded) covers history that changed.
    update streamseal.seals s
    set sealed_through = 0, generation = seal_generation_guard.generation, updated_at = pg_catalog.now()
    where s.origin = seal_generation_guard.origin;
    return 'skip';
end
$$;

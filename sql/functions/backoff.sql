-- The repair backoff, one rule for both ledgers that re-ask (the audit's repair_ledger and the
-- lanes' requested ranges): the k-th ask waits base * 2^(k - 1), k capped at max_attempts, so the
-- wait doubles up to the slowest rung and stays there: a ladder that stops goes silent forever.

-- _repair_backoff is the wait after the attempts-th ask: base * 2^(least(attempts, max_attempts)
-- - 1), in seconds, never longer than 100 years so a long ladder on a long base stays finite.
create function streamseal._repair_backoff(base interval, attempts integer, max_attempts integer)
returns interval
language sql
immutable
-- No SET clause: an inlinable helper (see the README's design notes).
as $$
    select pg_catalog.make_interval(secs => least(
        pg_catalog.date_part('epoch', base)
            * pg_catalog.power(2::double precision, greatest(least(attempts, max_attempts), 1) - 1),
        3155760000::double precision))
$$;

-- _require_backoff refuses a backoff that cannot make progress: a base that is not positive, a
-- budget below one attempt, naming the caller.
create function streamseal._require_backoff(caller text, backoff_base interval, max_attempts integer)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if _require_backoff.backoff_base is null or _require_backoff.backoff_base <= interval '0' then
        raise exception '%: backoff_base % is invalid: expected a positive interval',
            _require_backoff.caller, coalesce(_require_backoff.backoff_base::text, 'null')
            using errcode = '22023';
    end if;
    if _require_backoff.max_attempts is null or _require_backoff.max_attempts < 1 then
        raise exception '%: max_attempts % is invalid: expected a positive number of attempts',
            _require_backoff.caller, coalesce(_require_backoff.max_attempts::text, 'null')
            using errcode = '22023';
    end if;
end
$$;

-- stamper_sleep: who must be woken when an own event is appended (issue 16: the append's NOTIFY
-- cost a fifth to a third of transactional throughput, and a busy stamper does not need it).
-- Called by the control plane's stamper loop and leading relay (controlplane/stamper, relay) on
-- their LISTEN connection; the append trigger (event_triggers.sql) takes the other side.
--
-- The protocol, on one advisory lock (the sleep lock), no table and no snapshot:
--   * an appending transaction tries the lock SHARED and, if it gets it, holds it to commit and
--     sends no NOTIFY; if it cannot (a sleeper holds it), it NOTIFYs streamseal_unstamped;
--   * a loop about to sleep on LISTEN tries the lock EXCLUSIVELY (session level) and only then
--     looks for committed unstamped events; it sleeps holding the lock.
-- No wake-up is lost: an append that sent no NOTIFY held the lock shared until it committed, so
-- the sleeper's try failed until then (it looks again soon instead of sleeping), or succeeded
-- after the commit, whose queue row the sleeper's check (a later statement, a later snapshot:
-- Postgres releases a transaction's locks after its commit is visible) then sees. An append
-- whose try came while a sleeper held the lock notifies at its commit, and the sleeper has been
-- listening since before it took the lock. Locks are not MVCC: an append under REPEATABLE READ
-- or SERIALIZABLE reads them as they are, not as its snapshot saw them.

-- _stamper_sleep_key is the sleep lock's advisory key (the trigger spells out the same expression
-- so its plan folds it to a constant).
create function streamseal._stamper_sleep_key()
returns bigint
language sql
immutable
parallel safe
set search_path = pg_catalog, pg_temp
as $$ select pg_catalog.hashtextextended('streamseal.stamper_sleep', 0) $$;

-- stamper_sleep_arm takes the sleep lock for a loop about to sleep on LISTEN streamseal_unstamped
-- and says what it found:
--   'armed'     the lock is this session's and no committed event waits: sleep until a NOTIFY
--               (every append from now on sends one) or the failsafe poll, then release it with
--               stamper_sleep_release();
--   'work'      committed events wait (the lock is not kept): stamp them first;
--   'writers'   appends in flight hold the lock shared and will not notify: look again soon;
--   'elsewhere' another sleeper holds it, so every append notifies and wakes this one too.
-- With check_backlog false (a loop that leaves the stamping to another one, stamper.Loop.Yield)
-- it takes the lock without looking for work: such a loop sleeps only to take its wake-ups.
-- A session-level lock stacks: the caller arms only when it does not hold it (the loops keep
-- that state; an error closes their connection, and the lock goes with it).
create function streamseal.stamper_sleep_arm(check_backlog boolean default true)
returns text
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- The look reads the queue by its key: a sequential scan waded through every dead queue row
-- until vacuum came (40-98 ms a look at bench write's full size, every few milliseconds: the
-- stamper lag p99 was 63-73 ms); the key's index skips entries of dead rows once marked.
set enable_seqscan = off
as $$
declare
    sleep_key constant bigint := streamseal._stamper_sleep_key();
begin
    -- GUARD: the backlog check must see what committed before the lock was granted; only READ
    -- COMMITTED takes a fresh snapshot per statement.
    if pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'stamper_sleep_arm: must run under READ COMMITTED, not %', pg_catalog.current_setting('transaction_isolation')
            using errcode = '25000';
    end if;
    if stamper_sleep_arm.check_backlog is null then
        raise exception 'stamper_sleep_arm: check_backlog is null: expected true (a stamping loop) or false (a yielding one)'
            using errcode = '22023';
    end if;
    if not pg_catalog.pg_try_advisory_lock(sleep_key) then
        -- A shared holder is an append in flight; an exclusive one is another sleeper.
        if pg_catalog.pg_try_advisory_lock_shared(sleep_key) then
            perform pg_catalog.pg_advisory_unlock_shared(sleep_key);
            return 'writers';
        end if;
        return 'elsewhere';
    end if;
    -- A statement after the lock: its snapshot holds every append that released the lock.
    if stamper_sleep_arm.check_backlog
       and exists (select from streamseal.unstamped u order by u.local_id limit 1) then
        perform pg_catalog.pg_advisory_unlock(sleep_key);
        return 'work';
    end if;
    return 'armed';
end
$$;

-- stamper_sleep_release gives the sleep lock back when a loop wakes to stamp (appends stop
-- notifying while it works). With hand_over it NOTIFYs streamseal_unstamped too: the loop will
-- not stamp next (it yields to the relay, or the relay turns the numbering over to the stamper),
-- so whoever stamps instead must look now. Returns whether this session held the lock.
create function streamseal.stamper_sleep_release(hand_over boolean default false)
returns boolean
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    held boolean;
begin
    -- A WARNING, not an error, when not held: the loops release only what they armed.
    held := pg_catalog.pg_advisory_unlock(streamseal._stamper_sleep_key());
    if coalesce(stamper_sleep_release.hand_over, false) then
        perform pg_catalog.pg_notify('streamseal_unstamped', '');
    end if;
    return held;
end
$$;

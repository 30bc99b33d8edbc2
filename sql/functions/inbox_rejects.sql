-- inbox_rejects: what the inbox records of a message it cannot store (controlplane/inbox through
-- store.InboxRejectRecord). Bounded (invariant 13): a sample per reason, prefixes of body and
-- headers, and a counter per reason for everything, caps in streamseal.inbox_reject_caps.

-- _text_prefix answers the longest prefix of text_prefix.t that fits in max_bytes bytes (UTF-8,
-- never cutting a character). Dropping k characters drops at least k bytes, so one step suffices.
create function streamseal._text_prefix(t text, max_bytes integer)
returns text
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
    select case
        when octet_length(_text_prefix.t) <= _text_prefix.max_bytes then _text_prefix.t
        else left(_text_prefix.t,
                  _text_prefix.max_bytes - greatest(octet_length(left(_text_prefix.t, _text_prefix.max_bytes)) - _text_prefix.max_bytes, 0))
    end
$$;

-- inbox_reject_record records one rejected message. Every reject counts in inbox_reject_counts
-- under its reason (cut to 256 bytes); once max_reasons reasons are counted, a new reason counts
-- and samples as '(other reasons)'. The sample keeps the newest sample_rows_per_reason rows of a
-- reason, drops rows older than sample_max_age, and holds at most prefix_bytes of the body
-- (payload_bytes keeps its whole size) and of the headers' JSON text (a longer header set is kept
-- as {"truncated": <prefix of its text>}, the whole within prefix_bytes).
create function streamseal.inbox_reject_record(
    subject text, origin text, event_id uuid, reason text, headers jsonb, payload bytea)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    caps streamseal.inbox_reject_caps;
    key text := streamseal._text_prefix(coalesce(inbox_reject_record.reason, ''), 256);
    header_text text := inbox_reject_record.headers::text;
    kept_headers jsonb := inbox_reject_record.headers;
    n integer;
begin
    if key = '' then
        raise exception 'inbox_reject_record: a reason is required' using errcode = '22023';
    end if;
    select * into caps from streamseal.inbox_reject_caps;

    -- GUARD: distinct reasons are bounded too (a reason names the bad value, so a publisher
    -- chooses it). The lock serializes only the first record of a new reason.
    if not exists (select from streamseal.inbox_reject_counts c where c.reason = key) then
        perform pg_advisory_xact_lock(hashtext('streamseal.inbox_reject_counts'));
        if not exists (select from streamseal.inbox_reject_counts c where c.reason = key)
           and (select count(*) from streamseal.inbox_reject_counts) >= caps.max_reasons then
            key := '(other reasons)';
        end if;
    end if;
    insert into streamseal.inbox_reject_counts as c (reason, rejected)
    values (key, 1)
    on conflict on constraint inbox_reject_counts_pkey do update
    set rejected = c.rejected + 1, last_rejected_at = pg_catalog.now();

    delete from streamseal.inbox_rejects r where r.received_at < pg_catalog.now() - caps.sample_max_age;
    if caps.sample_rows_per_reason = 0 then
        return;
    end if;
    -- A header set past the prefix is kept as its text's prefix; JSON escaping can lengthen that
    -- text, so the prefix halves until the stored form fits.
    if octet_length(header_text) > caps.prefix_bytes then
        n := caps.prefix_bytes / 2;
        loop
            kept_headers := pg_catalog.jsonb_build_object('truncated', streamseal._text_prefix(header_text, n));
            exit when octet_length(kept_headers::text) <= caps.prefix_bytes or n = 0;
            n := n / 2;
        end loop;
    end if;
    insert into streamseal.inbox_rejects (subject, origin, event_id, reason, headers, payload, payload_bytes)
    values (
        streamseal._text_prefix(inbox_reject_record.subject, 256),
        streamseal._text_prefix(inbox_reject_record.origin, 256),
        inbox_reject_record.event_id,
        key,
        kept_headers,
        substring(inbox_reject_record.payload from 1 for caps.prefix_bytes),
        octet_length(inbox_reject_record.payload));
    delete from streamseal.inbox_rejects r
    where r.reason = key
      and r.id not in (select k.id from streamseal.inbox_rejects k where k.reason = key
                       order by k.id desc limit caps.sample_rows_per_reason);
end
$$;

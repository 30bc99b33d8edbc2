-- Loss reports on the consumer: what a lane accepts instead of repairing leaves a row an operator
-- reads (`streamseal status`, the loss metrics): at-most-once occurrences that never arrived, and
-- what an origin answered it cannot serve. verify_checkpoint and accept_loss (lanes.sql) call these.

-- _report_loss records type_seqs of a lane accepted as lost for reason, with the checkpoint window
-- that announced them (null: an origin's answer). Nothing when type_seqs is empty.
create function streamseal._report_loss(origin text, tenant text, event_type text, reason text,
                                        type_seqs int8multirange, window_from bigint, window_to bigint)
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    insert into streamseal.loss_reports (origin, tenant, event_type, reason, type_seqs, n, window_from, window_to)
    select _report_loss.origin, _report_loss.tenant, _report_loss.event_type, _report_loss.reason,
           _report_loss.type_seqs,
           (select pg_catalog.sum(pg_catalog.upper(r) - pg_catalog.lower(r)) from pg_catalog.unnest(_report_loss.type_seqs) r),
           _report_loss.window_from, _report_loss.window_to
    where not pg_catalog.isempty(_report_loss.type_seqs)
$$;

-- _report_unarrived_at_most_once reports, per tenant of one checkpoint message, the at-most-once
-- occurrences it announces that this store does not hold: lost in transit, accepted (never a
-- hole, never requested) and reported with the window, once. What the lane already accepted or
-- lies above its birth and at or below its floor was judged by an earlier checkpoint, so a
-- redelivered checkpoint reports nothing again; what lies at or below the birth was not (an
-- earlier checkpoint verified late, which lowers the birth: lanes.sql). Called by verify_checkpoint with the lanes locked, before it accepts
-- them. Cost: the held occurrences' index probes (_lane_missing), per tenant naming any.
create function streamseal._report_unarrived_at_most_once(origin text, event_type text, window_from bigint,
                                                           window_to bigint, tenants text[], at_most_once int8multirange[])
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    select streamseal._report_loss(l.origin, l.tenant, l.event_type, 'at_most_once',
               streamseal._lane_missing(l.origin, l.tenant, l.event_type,
                   g.amo - l.accepted - l.accepted_losses
                         - pg_catalog.int8multirange(pg_catalog.int8range(l.birth_floor + 1, l.floor + 1)),
                   0, 0, '{}'),
               _report_unarrived_at_most_once.window_from, _report_unarrived_at_most_once.window_to)
    from rows from (pg_catalog.unnest(_report_unarrived_at_most_once.tenants),
                    pg_catalog.unnest(_report_unarrived_at_most_once.at_most_once)) as g(tenant, amo)
    cross join lateral (
        select x.*
        from streamseal.lanes x
        where x.origin = _report_unarrived_at_most_once.origin and x.tenant = g.tenant
          and x.event_type = _report_unarrived_at_most_once.event_type
        -- A fence: one primary-key lookup per tenant naming occurrences, after the filter below;
        -- joined plainly, every lane of the origin was walked with the tenants re-read for each
        -- (issue 21 item 3: half of a checkpoint's verification, with no occurrence named).
        offset 0
    ) l
    where not pg_catalog.isempty(coalesce(g.amo, '{}'))
    order by l.tenant
$$;

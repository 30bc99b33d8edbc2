-- lanes.accepted is the working set of what a lane accepts above its floor (it is trimmed as the
-- floor passes, so a verification costs the open part of the lane, not its history);
-- accepted_losses keeps, for good, the type_seqs an origin answered it cannot serve (absent,
-- reaped, never existed), the record an operator reads after the floor moved on.
alter table streamseal.lanes add column accepted_losses int8multirange not null default '{}';
update streamseal.lanes set accepted = accepted - int8multirange(int8range(null, floor + 1));

---- create above / drop below ----

alter table streamseal.lanes drop column accepted_losses;

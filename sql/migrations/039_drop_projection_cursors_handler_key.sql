-- projection_cursors without its foreign key to handlers (issue 19 performance: bench projections'
-- apply_ratio). Every cursor a batch creates (a stream new to the projection) ran the key's check
-- (a locking lookup of the handler row, one per row): 50 a batch of 500 in the bench, about a
-- twentieth of run_handler's time. The key guarded nothing the functions do not: every writer of
-- projection_cursors (run_handler, feed_handler_advance, the coverage audit's rebuilds,
-- projection_rebuild_replay) holds the handler's advisory lock and has read its row, and
-- unregister_handler, under the same lock, now deletes the cursors itself, as the cascade did.
alter table streamseal.projection_cursors drop constraint projection_cursors_projection_fkey;

---- create above / drop below ----

delete from streamseal.projection_cursors c
where not exists (select from streamseal.handlers h where h.name = c.projection);
alter table streamseal.projection_cursors
    add constraint projection_cursors_projection_fkey foreign key (projection)
        references streamseal.handlers (name) on delete cascade;

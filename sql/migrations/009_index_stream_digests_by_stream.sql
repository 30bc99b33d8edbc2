-- Whole-history stream pages walk a lane's buckets in stream order from the audit's cursor, a
-- page at a time: this index lets a page read its own streams instead of sorting the lane.
-- (Its columns never change in an update, so folds stay HOT updates.)
create index stream_digests_origin_stream on streamseal.stream_digests (origin, stream_id);

---- create above / drop below ----

drop index streamseal.stream_digests_origin_stream;

-- A consumer's re-ask deadline takes the origin's recent answer times into account
-- (streamseal._origin_answer_time): read the newest answered requests of one origin by index.
create index sent_requests_answered_by_origin on streamseal.sent_requests (origin, answered_at desc)
    where answered_at is not null;

---- create above / drop below ----

drop index streamseal.sent_requests_answered_by_origin;

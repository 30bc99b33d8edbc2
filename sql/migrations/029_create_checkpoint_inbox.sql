-- checkpoint_inbox: on a consumer, the checkpoint messages its inbox received and acknowledged
-- and its verifier has not verified yet (issue 21 item 3: checkpoints never delay live events).
-- A round over many tenants is one message per active pair, and a live event behind it on the
-- same subject waited for the whole round's verification (41.9 s behind 50 000 pairs); now the
-- inbox records a run of checkpoints with one INSERT (after the events before it committed, as
-- before) and acknowledges it, and a verifier loop of its own works through this table, oldest
-- first. Rows are the raw message (subject and payload as received, admitted at the door), so
-- what the verifier refuses can be recorded in inbox_rejects as it arrived. ordered is the
-- inbox's proof of order when the row was recorded (every message before it on its consumer
-- handled to the end); attempts counts failed verifications, not_before delays the next.
create table streamseal.checkpoint_inbox (
    id bigint generated always as identity primary key,
    subject text not null
        constraint checkpoint_inbox_subject_is_not_empty check (subject <> ''),
    payload bytea not null,
    ordered boolean not null,
    attempts integer not null default 0
        constraint checkpoint_inbox_attempts_is_not_negative check (attempts >= 0),
    received_at timestamptz not null default now(),
    not_before timestamptz not null default now()
);

---- create above / drop below ----

drop table streamseal.checkpoint_inbox;

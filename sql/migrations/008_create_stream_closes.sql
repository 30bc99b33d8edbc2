-- Close-the-books truncation as a fact that travels. On an origin, stream_closes records every
-- close_stream (the versions below below_version are gone on purpose); manifest answers carry
-- them, and a consumer applies each once to its copies and records it in copy_closes, so an
-- origin's closed history never reads as loss or as local extras in an audit.
create table streamseal.stream_closes (
    tenant text not null,
    stream_id text not null,
    below_version bigint not null,
    closed_at timestamptz not null default now(),
    primary key (tenant, stream_id)
);

create table streamseal.copy_closes (
    origin text not null,
    tenant text not null,
    stream_id text not null,
    below_version bigint not null,
    applied_at timestamptz not null default now(),
    primary key (origin, tenant, stream_id)
);

---- create above / drop below ----

drop table streamseal.copy_closes;
drop table streamseal.stream_closes;

-- Drops everything the code package owns so the install below starts clean: every function,
-- procedure and aggregate in schema streamseal (CASCADE takes the triggers that call them) and
-- every private ('_'-prefixed) composite type. Tables, indexes and data belong to migrations and are never
-- touched here; no table default, constraint or index may reference a function of this package.
do $reset$
declare
    doomed record;
begin
    for doomed in
        select p.oid::pg_catalog.regprocedure as signature,
               case p.prokind when 'p' then 'procedure' when 'a' then 'aggregate' else 'function' end as kind
        from pg_catalog.pg_proc p
        join pg_catalog.pg_namespace ns on ns.oid = p.pronamespace
        where ns.nspname = 'streamseal'
    loop
        execute pg_catalog.format('drop %s %s cascade', doomed.kind, doomed.signature);
    end loop;

    for doomed in
        select t.oid::pg_catalog.regtype as type_name
        from pg_catalog.pg_type t
        join pg_catalog.pg_namespace ns on ns.oid = t.typnamespace
        join pg_catalog.pg_class c on c.oid = t.typrelid
        where ns.nspname = 'streamseal' and t.typtype = 'c' and c.relkind = 'c' and t.typname like '\_%'
    loop
        execute pg_catalog.format('drop type %s cascade', doomed.type_name);
    end loop;
end
$reset$;

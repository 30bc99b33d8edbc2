-- The streamseal code package: every function, type and trigger, in dependency order.
-- `streamseal migrate` runs this after the migrations, in one transaction, on every run: first it
-- drops whatever the package installed before (functions with their triggers, code-only types),
-- then it installs today's files, so the database always matches the binary and no stale
-- function or trigger survives a rename. privileges.sql comes last: it revokes what Postgres
-- grants PUBLIC on every new function and grants the application surface, on every install.

{{ template "_reset.sql" . }}
{{ template "types.sql" . }}
{{ template "service.sql" . }}
{{ template "backoff.sql" . }}
{{ template "version.sql" . }}
{{ template "limits.sql" . }}
{{ template "event_checks.sql" . }}
{{ template "numbered_events.sql" . }}
{{ template "digest.sql" . }}
{{ template "epoch_fold.sql" . }}
{{ template "fold_changes.sql" . }}
{{ template "history_changes.sql" . }}
{{ template "stamper_sleep.sql" . }}
{{ template "event_triggers.sql" . }}
{{ template "append.sql" . }}
{{ template "ingest.sql" . }}
{{ template "inbox_rejects.sql" . }}
{{ template "checkpoint_inbox.sql" . }}
{{ template "stamp.sql" . }}
{{ template "quarantine.sql" . }}
{{ template "relay.sql" . }}
{{ template "close_stream.sql" . }}
{{ template "reap_ephemeral.sql" . }}
{{ template "verify_digests.sql" . }}
{{ template "epochs.sql" . }}
{{ template "answers.sql" . }}
{{ template "seals.sql" . }}
{{ template "generation.sql" . }}
{{ template "grants.sql" . }}
{{ template "subscriptions.sql" . }}
{{ template "redelivery.sql" . }}
{{ template "redelivery_walk.sql" . }}
{{ template "backfill_answers.sql" . }}
{{ template "destruction_holds.sql" . }}
{{ template "checkpoints.sql" . }}
{{ template "lanes.sql" . }}
{{ template "lane_rounds.sql" . }}
{{ template "consumed_types.sql" . }}
{{ template "loss_reports.sql" . }}
{{ template "comparison.sql" . }}
{{ template "tenant_folds.sql" . }}
{{ template "range_folds.sql" . }}
{{ template "ledger.sql" . }}
{{ template "sent_requests.sql" . }}
{{ template "feed.sql" . }}
{{ template "projections.sql" . }}
{{ template "privileges.sql" . }}
